#include "coordination/zk/fake_zookeeper.h"

#include <algorithm>
#include <cstdio>

namespace sluice::coordination::zk {
namespace {

struct node {
  std::string data;
  zk_stat stat;
  int64_t sequence = 0;  // next sequential suffix for children
};

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

bool valid_path(const std::string& path) {
  return !path.empty() && path[0] == '/' && (path.size() == 1 || path.back() != '/') &&
         path.find("//") == std::string::npos;
}

struct watch_entry {
  int64_t session;
  watch_fn fn;
};

struct fire {
  watch_fn fn;
  watch_event event;
  std::string path;
};

}  // namespace

struct fake_zookeeper::state {
  mutable std::mutex mutex;
  std::map<std::string, node> nodes;
  std::map<std::string, std::vector<watch_entry>> data_watches;   // get and exists watches
  std::map<std::string, std::vector<watch_entry>> child_watches;  // get_children watches
  struct session_info {
    bool open = true;
    bool expired = false;
    session_fn on_event;
  };
  std::map<int64_t, session_info> sessions;
  int64_t next_session = 0x1000;
  int64_t zxid = 0;
  bool unreachable = false;

  state() { nodes["/"] = node{}; }

  // --- helpers; the caller holds `mutex` ---

  std::vector<std::string> children_of(const std::map<std::string, node>& tree, const std::string& path) const {
    std::vector<std::string> out;
    const std::string prefix = path == "/" ? "/" : path + "/";
    for (auto it = tree.lower_bound(prefix); it != tree.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      if (it->first.size() > prefix.size() && it->first.find('/', prefix.size()) == std::string::npos)
        out.push_back(it->first.substr(prefix.size()));
    }
    return out;
  }

  void take(std::map<std::string, std::vector<watch_entry>>& table, const std::string& path, watch_event ev,
            std::vector<fire>& out) {
    auto it = table.find(path);
    if (it == table.end()) return;
    for (auto& w : it->second) out.push_back({std::move(w.fn), ev, path});
    table.erase(it);
  }

  // Applies one op to `tree`; the watches it would trigger go to `fires` (using the live watch tables
  // only when `commit`: a multi first dry-runs on a copy).
  zk_code apply(std::map<std::string, node>& tree, const zk_op& op, int64_t session, std::string* created,
                zk_stat* out_stat, std::vector<std::pair<watch_event, std::string>>& events) {
    if (!valid_path(op.path)) return zk_code::other;
    switch (op.type) {
      case zk_op::kind::create: {
        if (op.path == "/") return zk_code::node_exists;
        auto parent = tree.find(parent_of(op.path));
        if (parent == tree.end()) return zk_code::no_node;
        if (parent->second.stat.ephemeral_owner != 0) return zk_code::no_children_for_ephemerals;
        std::string path = op.path;
        bool sequential = op.mode == create_mode::persistent_sequential || op.mode == create_mode::ephemeral_sequential;
        if (sequential) {
          char suffix[16];
          std::snprintf(suffix, sizeof suffix, "%010lld", static_cast<long long>(parent->second.sequence));
          path += suffix;
        }
        if (tree.contains(path)) return zk_code::node_exists;
        parent->second.sequence++;
        parent->second.stat.cversion++;
        parent->second.stat.num_children++;
        node n;
        n.data = op.data;
        n.stat.czxid = ++zxid;
        bool ephemeral = op.mode == create_mode::ephemeral || op.mode == create_mode::ephemeral_sequential;
        n.stat.ephemeral_owner = ephemeral ? session : 0;
        tree.emplace(path, std::move(n));
        events.emplace_back(watch_event::created, path);
        events.emplace_back(watch_event::child, parent_of(path));
        if (created) *created = path;
        return zk_code::ok;
      }
      case zk_op::kind::set: {
        auto it = tree.find(op.path);
        if (it == tree.end()) return zk_code::no_node;
        if (op.version != -1 && op.version != it->second.stat.version) return zk_code::bad_version;
        it->second.data = op.data;
        it->second.stat.version++;
        ++zxid;
        if (out_stat) *out_stat = it->second.stat;
        events.emplace_back(watch_event::changed, op.path);
        return zk_code::ok;
      }
      case zk_op::kind::remove: {
        if (op.path == "/") return zk_code::other;
        auto it = tree.find(op.path);
        if (it == tree.end()) return zk_code::no_node;
        if (op.version != -1 && op.version != it->second.stat.version) return zk_code::bad_version;
        if (it->second.stat.num_children > 0) return zk_code::not_empty;
        tree.erase(it);
        auto parent = tree.find(parent_of(op.path));
        if (parent != tree.end()) {
          parent->second.stat.cversion++;
          parent->second.stat.num_children--;
        }
        ++zxid;
        events.emplace_back(watch_event::deleted, op.path);
        events.emplace_back(watch_event::child, parent_of(op.path));
        return zk_code::ok;
      }
      case zk_op::kind::check: {
        auto it = tree.find(op.path);
        if (it == tree.end()) return zk_code::no_node;
        if (op.version != -1 && op.version != it->second.stat.version) return zk_code::bad_version;
        return zk_code::ok;
      }
    }
    return zk_code::other;
  }

  void trigger(const std::vector<std::pair<watch_event, std::string>>& events, std::vector<fire>& fires) {
    for (const auto& [ev, path] : events) {
      switch (ev) {
        case watch_event::created:
        case watch_event::changed: take(data_watches, path, ev, fires); break;
        case watch_event::deleted:
          take(data_watches, path, ev, fires);
          take(child_watches, path, ev, fires);
          break;
        case watch_event::child: take(child_watches, path, ev, fires); break;
      }
    }
  }

  // Ends a session: removes its ephemerals and watches. Caller holds the mutex.
  void end_session(int64_t id, bool expired, std::vector<fire>& fires) {
    auto it = sessions.find(id);
    if (it == sessions.end() || !it->second.open) return;
    it->second.open = false;
    it->second.expired = expired;
    std::vector<std::string> doomed;
    for (const auto& [path, n] : nodes)
      if (n.stat.ephemeral_owner == id) doomed.push_back(path);
    for (auto* table : {&data_watches, &child_watches}) {
      for (auto& [path, list] : *table)
        list.erase(std::remove_if(list.begin(), list.end(), [&](const watch_entry& w) { return w.session == id; }),
                   list.end());
    }
    std::vector<std::pair<watch_event, std::string>> events;
    for (const auto& path : doomed) apply(nodes, zk_op::remove(path), id, nullptr, nullptr, events);
    trigger(events, fires);
  }

  zk_code check_open(int64_t id) const {
    auto it = sessions.find(id);
    if (it == sessions.end()) return zk_code::closed;
    if (it->second.expired) return zk_code::session_expired;
    return it->second.open ? zk_code::ok : zk_code::closed;
  }
};

namespace {

void run(std::vector<fire>& fires) {
  for (auto& f : fires)
    if (f.fn) f.fn(f.event, f.path);
}

class fake_session final : public zk_session {
 public:
  fake_session(std::shared_ptr<fake_zookeeper::state> s, int64_t id) : s_(std::move(s)), id_(id) {}
  ~fake_session() override { close(); }

  int64_t session_id() const override { return id_; }

  zk_result<std::string> create(const std::string& path, const std::string& data, create_mode mode) override {
    return mutate<std::string>(zk_op::create(path, data, mode));
  }

  zk_result<zk_node> get(const std::string& path, watch_fn watch) override {
    std::lock_guard lock(s_->mutex);
    if (auto c = s_->check_open(id_); c != zk_code::ok) return {c};
    auto it = s_->nodes.find(path);
    if (it == s_->nodes.end()) return {zk_code::no_node};
    if (watch) s_->data_watches[path].push_back({id_, std::move(watch)});
    return {zk_code::ok, zk_node{it->second.data, it->second.stat}};
  }

  zk_result<zk_stat> set(const std::string& path, const std::string& data, int32_t version) override {
    return mutate<zk_stat>(zk_op::set(path, data, version));
  }

  zk_code remove(const std::string& path, int32_t version) override {
    return mutate<std::string>(zk_op::remove(path, version)).code;
  }

  zk_result<std::vector<std::string>> get_children(const std::string& path, watch_fn watch) override {
    std::lock_guard lock(s_->mutex);
    if (auto c = s_->check_open(id_); c != zk_code::ok) return {c};
    if (!s_->nodes.contains(path)) return {zk_code::no_node};
    if (watch) s_->child_watches[path].push_back({id_, std::move(watch)});
    return {zk_code::ok, s_->children_of(s_->nodes, path)};
  }

  zk_result<std::optional<zk_stat>> exists(const std::string& path, watch_fn watch) override {
    std::lock_guard lock(s_->mutex);
    if (auto c = s_->check_open(id_); c != zk_code::ok) return {c};
    if (watch) s_->data_watches[path].push_back({id_, std::move(watch)});
    auto it = s_->nodes.find(path);
    if (it == s_->nodes.end()) return {zk_code::ok, std::nullopt};
    return {zk_code::ok, it->second.stat};
  }

  zk_code multi(const std::vector<zk_op>& ops, size_t* failed_index) override {
    std::vector<fire> fires;
    {
      std::lock_guard lock(s_->mutex);
      if (auto c = s_->check_open(id_); c != zk_code::ok) return c;
      auto copy = s_->nodes;
      int64_t zxid_before = s_->zxid;
      std::vector<std::pair<watch_event, std::string>> events;
      for (size_t i = 0; i < ops.size(); ++i) {
        auto c = s_->apply(copy, ops[i], id_, nullptr, nullptr, events);
        if (c != zk_code::ok) {
          s_->zxid = zxid_before;
          if (failed_index) *failed_index = i;
          return c;
        }
      }
      s_->nodes = std::move(copy);
      s_->trigger(events, fires);
    }
    run(fires);
    return zk_code::ok;
  }

  void close() override {
    std::vector<fire> fires;
    {
      std::lock_guard lock(s_->mutex);
      s_->end_session(id_, false, fires);
    }
    run(fires);
  }

 private:
  template <typename T>
  zk_result<T> mutate(const zk_op& op) {
    zk_result<T> out;
    std::vector<fire> fires;
    {
      std::lock_guard lock(s_->mutex);
      if (auto c = s_->check_open(id_); c != zk_code::ok) return {c};
      std::vector<std::pair<watch_event, std::string>> events;
      std::string created;
      zk_stat stat;
      out.code = s_->apply(s_->nodes, op, id_, &created, &stat, events);
      if constexpr (std::is_same_v<T, std::string>) out.value = created;
      if constexpr (std::is_same_v<T, zk_stat>) out.value = stat;
      s_->trigger(events, fires);
    }
    run(fires);
    return out;
  }

  std::shared_ptr<fake_zookeeper::state> s_;
  int64_t id_;
};

}  // namespace

fake_zookeeper::fake_zookeeper() : state_(std::make_shared<state>()) {}
fake_zookeeper::~fake_zookeeper() = default;

zk_result<std::shared_ptr<zk_session>> fake_zookeeper::connect(int32_t, int32_t, session_fn on_event) {
  std::lock_guard lock(state_->mutex);
  if (state_->unreachable) return {zk_code::connection_loss};
  int64_t id = ++state_->next_session;
  state_->sessions[id] = state::session_info{true, false, std::move(on_event)};
  return {zk_code::ok, std::make_shared<fake_session>(state_, id)};
}

void fake_zookeeper::expire(int64_t session_id) {
  std::vector<fire> fires;
  session_fn on_event;
  {
    std::lock_guard lock(state_->mutex);
    auto it = state_->sessions.find(session_id);
    if (it == state_->sessions.end() || !it->second.open) return;
    on_event = it->second.on_event;
    state_->end_session(session_id, true, fires);
  }
  run(fires);
  if (on_event) on_event(session_event::expired);
}

int64_t fake_zookeeper::ephemeral_owner(const std::string& path) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->nodes.find(path);
  return it == state_->nodes.end() ? 0 : it->second.stat.ephemeral_owner;
}

void fake_zookeeper::set_unreachable(bool unreachable) {
  std::lock_guard lock(state_->mutex);
  state_->unreachable = unreachable;
}

std::optional<std::string> fake_zookeeper::data(const std::string& path) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->nodes.find(path);
  if (it == state_->nodes.end()) return std::nullopt;
  return it->second.data;
}

size_t fake_zookeeper::live_sessions() const {
  std::lock_guard lock(state_->mutex);
  size_t n = 0;
  for (const auto& [id, s] : state_->sessions) n += s.open ? 1 : 0;
  return n;
}

}  // namespace sluice::coordination::zk
