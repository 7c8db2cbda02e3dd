#include "coordination/zk/zk_c_client.h"

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "base/logging.h"

#if defined(__SANITIZE_THREAD__)
// TSan builds (SLUICE_SANITIZE=thread): the ZooKeeper C client's format_endpoint_info() formats into one static
// buffer, called from its I/O and completion threads alike when it logs a connection error. The race is inside the
// library (its text, not our data); TSan's runtime reads this function for suppressions built into the program.
// Weak: the test programs that load librdkafka define a strong one with this line and theirs
// (tests/integration/tsan_c11_threads.c).
extern "C" __attribute__((weak)) const char* __tsan_default_suppressions() { return "race:format_endpoint_info\n"; }
#endif

namespace sluice::coordination::zk {
namespace {

zk_code map_rc(int rc) {
  switch (rc) {
    case ZOK: return zk_code::ok;
    case ZNONODE: return zk_code::no_node;
    case ZNODEEXISTS: return zk_code::node_exists;
    case ZBADVERSION: return zk_code::bad_version;
    case ZNOTEMPTY: return zk_code::not_empty;
    case ZNOCHILDRENFOREPHEMERALS: return zk_code::no_children_for_ephemerals;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE: return zk_code::session_expired;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: return zk_code::connection_loss;
    case ZCLOSING: return zk_code::closed;
    default: return zk_code::other;
  }
}

zk_stat map_stat(const Stat& s) {
  return zk_stat{s.czxid, s.version, s.cversion, s.ephemeralOwner, s.numChildren};
}

int flags_of(create_mode m) {
  switch (m) {
    case create_mode::persistent: return ZOO_PERSISTENT;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

class c_session final : public zk_session {
 public:
  explicit c_session(session_fn on_event) : on_event_(std::move(on_event)) {}
  ~c_session() override { close(); }

  // Opens the handle and waits for the first connected state. False on timeout.
  bool open(const std::string& hosts, int32_t session_timeout_ms, int32_t connection_timeout_ms) {
    std::unique_lock lock(state_mutex_);
    zh_ = zookeeper_init(hosts.c_str(), &c_session::global_watcher, session_timeout_ms, nullptr, this, 0);
    if (zh_ == nullptr) return false;
    bool ok = state_cv_.wait_for(lock, std::chrono::milliseconds(connection_timeout_ms),
                                 [&] { return connected_once_ || expired_; });
    return ok && connected_once_ && !expired_;
  }

  int64_t session_id() const override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return 0;
    const clientid_t* id = zoo_client_id(zh_);
    return id ? id->client_id : 0;
  }

  zk_result<std::string> create(const std::string& path, const std::string& data, create_mode mode) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return {zk_code::closed};
    std::string out(path.size() + 32, '\0');
    int rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
                        flags_of(mode), out.data(), static_cast<int>(out.size()));
    if (rc != ZOK) return {map_rc(rc)};
    out.resize(std::char_traits<char>::length(out.c_str()));
    return {zk_code::ok, out};
  }

  zk_result<zk_node> get(const std::string& path, watch_fn watch) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return {zk_code::closed};
    std::string buf(64 * 1024, '\0');
    for (int attempt = 0; attempt < 3; ++attempt) {
      Stat stat{};
      int len = static_cast<int>(buf.size());
      uint64_t id = watch ? add_watch(watch) : 0;
      int rc = watch ? zoo_wget(zh_, path.c_str(), &c_session::data_watcher, reinterpret_cast<void*>(id), buf.data(),
                                &len, &stat)
                     : zoo_get(zh_, path.c_str(), 0, buf.data(), &len, &stat);
      if (rc != ZOK) {
        if (id) drop_watch(id);
        return {map_rc(rc)};
      }
      if (stat.dataLength > static_cast<int>(buf.size())) {
        if (id) drop_watch(id);  // the server keeps it; a second firing finds no entry and is ignored
        buf.assign(static_cast<size_t>(stat.dataLength) + 1, '\0');
        continue;
      }
      return {zk_code::ok, zk_node{buf.substr(0, len < 0 ? 0 : static_cast<size_t>(len)), map_stat(stat)}};
    }
    return {zk_code::other};
  }

  zk_result<zk_stat> set(const std::string& path, const std::string& data, int32_t version) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return {zk_code::closed};
    Stat stat{};
    int rc = zoo_set2(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &stat);
    if (rc != ZOK) return {map_rc(rc)};
    return {zk_code::ok, map_stat(stat)};
  }

  zk_code remove(const std::string& path, int32_t version) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return zk_code::closed;
    return map_rc(zoo_delete(zh_, path.c_str(), version));
  }

  zk_result<std::vector<std::string>> get_children(const std::string& path, watch_fn watch) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return {zk_code::closed};
    String_vector v{};
    uint64_t id = watch ? add_watch(watch) : 0;
    int rc = watch ? zoo_wget_children(zh_, path.c_str(), &c_session::data_watcher, reinterpret_cast<void*>(id), &v)
                   : zoo_get_children(zh_, path.c_str(), 0, &v);
    if (rc != ZOK) {
      if (id) drop_watch(id);
      return {map_rc(rc)};
    }
    std::vector<std::string> out;
    for (int i = 0; i < v.count; ++i) out.emplace_back(v.data[i]);
    deallocate_String_vector(&v);
    return {zk_code::ok, std::move(out)};
  }

  zk_result<std::optional<zk_stat>> exists(const std::string& path, watch_fn watch) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return {zk_code::closed};
    Stat stat{};
    uint64_t id = watch ? add_watch(watch) : 0;
    int rc = watch ? zoo_wexists(zh_, path.c_str(), &c_session::data_watcher, reinterpret_cast<void*>(id), &stat)
                   : zoo_exists(zh_, path.c_str(), 0, &stat);
    if (rc == ZNONODE) return {zk_code::ok, std::nullopt};  // the watch stays set: fires on creation
    if (rc != ZOK) {
      if (id) drop_watch(id);
      return {map_rc(rc)};
    }
    return {zk_code::ok, map_stat(stat)};
  }

  zk_code multi(const std::vector<zk_op>& ops, size_t* failed_index) override {
    std::shared_lock lock(handle_mutex_);
    if (zh_ == nullptr) return zk_code::closed;
    if (ops.empty()) return zk_code::ok;
    std::vector<zoo_op_t> c_ops(ops.size());
    std::vector<zoo_op_result_t> results(ops.size());
    std::vector<std::string> path_bufs(ops.size());
    std::vector<Stat> stats(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto& op = ops[i];
      switch (op.type) {
        case zk_op::kind::create:
          path_bufs[i].assign(op.path.size() + 32, '\0');
          zoo_create_op_init(&c_ops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                             &ZOO_OPEN_ACL_UNSAFE, flags_of(op.mode), path_bufs[i].data(),
                             static_cast<int>(path_bufs[i].size()));
          break;
        case zk_op::kind::set:
          zoo_set_op_init(&c_ops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()), op.version,
                          &stats[i]);
          break;
        case zk_op::kind::remove: zoo_delete_op_init(&c_ops[i], op.path.c_str(), op.version); break;
        case zk_op::kind::check: zoo_check_op_init(&c_ops[i], op.path.c_str(), op.version); break;
      }
    }
    int rc = zoo_multi(zh_, static_cast<int>(ops.size()), c_ops.data(), results.data());
    if (rc == ZOK) return zk_code::ok;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY) {
        if (failed_index) *failed_index = i;
        return map_rc(results[i].err);
      }
    }
    if (failed_index) *failed_index = 0;
    return map_rc(rc);
  }

  void close() override {
    std::unique_lock lock(handle_mutex_);
    if (zh_ == nullptr) return;
    zookeeper_close(zh_);  // joins the client's threads: no callback runs after this
    zh_ = nullptr;
    std::lock_guard w(watch_mutex_);
    watches_.clear();
  }

 private:
  uint64_t add_watch(const watch_fn& fn) {
    std::lock_guard lock(watch_mutex_);
    uint64_t id = next_watch_++;
    watches_[id] = fn;
    return id;
  }
  void drop_watch(uint64_t id) {
    std::lock_guard lock(watch_mutex_);
    watches_.erase(id);
  }

  static void global_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
    auto* self = static_cast<c_session*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    std::optional<session_event> ev;
    {
      std::lock_guard lock(self->state_mutex_);
      if (state == ZOO_CONNECTED_STATE) {
        if (!self->connected_once_) {
          self->connected_once_ = true;
          self->state_cv_.notify_all();
        } else {
          ev = session_event::connected;
        }
      } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        self->expired_ = true;
        self->state_cv_.notify_all();
        if (self->connected_once_) ev = session_event::expired;
      } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        if (self->connected_once_) ev = session_event::disconnected;
      }
    }
    if (ev && self->on_event_) self->on_event_(*ev);
  }

  static void data_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
    if (type == ZOO_SESSION_EVENT || type == ZOO_NOTWATCHING_EVENT) return;  // the global watcher handles those
    auto* self = static_cast<c_session*>(const_cast<void*>(zoo_get_context(zh)));
    if (self == nullptr) return;
    watch_fn fn;
    {
      std::lock_guard lock(self->watch_mutex_);
      auto it = self->watches_.find(reinterpret_cast<uint64_t>(ctx));
      if (it == self->watches_.end()) return;
      fn = std::move(it->second);
      self->watches_.erase(it);
    }
    watch_event ev = watch_event::changed;
    if (type == ZOO_CREATED_EVENT) ev = watch_event::created;
    else if (type == ZOO_DELETED_EVENT) ev = watch_event::deleted;
    else if (type == ZOO_CHILD_EVENT) ev = watch_event::child;
    if (fn) fn(ev, path ? std::string(path) : std::string());
  }

  session_fn on_event_;
  mutable std::shared_mutex handle_mutex_;  // operations share it; close() takes it alone
  zhandle_t* zh_ = nullptr;
  std::mutex state_mutex_;
  std::condition_variable state_cv_;
  bool connected_once_ = false;
  bool expired_ = false;
  std::mutex watch_mutex_;
  std::map<uint64_t, watch_fn> watches_;
  uint64_t next_watch_ = 1;
};

std::once_flag log_level_once;

}  // namespace

zk_c_connector::zk_c_connector(std::string connect) {
  auto slash = connect.find('/');
  hosts_ = connect.substr(0, slash);
  if (slash != std::string::npos) {
    chroot_ = connect.substr(slash);
    while (chroot_.size() > 1 && chroot_.back() == '/') chroot_.pop_back();
    if (chroot_ == "/") chroot_.clear();
  }
}

zk_result<std::shared_ptr<zk_session>> zk_c_connector::connect(int32_t session_timeout_ms,
                                                               int32_t connection_timeout_ms, session_fn on_event) {
  std::call_once(log_level_once, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
  if (!chroot_.empty()) {
    // Kafka: connect without the chroot once and create it when missing.
    auto bare = std::make_shared<c_session>(nullptr);
    if (!bare->open(hosts_, session_timeout_ms, connection_timeout_ms)) return {zk_code::connection_loss};
    auto rc = create_recursive(*bare, chroot_);
    bare->close();
    if (rc != zk_code::ok) {
      log::error("zookeeper: cannot create chroot {}: {}", chroot_, to_string(rc));
      return {rc};
    }
  }
  auto s = std::make_shared<c_session>(std::move(on_event));
  if (!s->open(hosts_ + chroot_, session_timeout_ms, connection_timeout_ms)) {
    s->close();
    return {zk_code::connection_loss};
  }
  return {zk_code::ok, s};
}

}  // namespace sluice::coordination::zk
