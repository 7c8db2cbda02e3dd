#include "coordination/zk/zk_cluster.h"

#include <boost/asio/post.hpp>
#include <charconv>
#include <chrono>

#include "base/logging.h"
#include "coordination/zk/zk_c_client.h"

namespace sluice::coordination::zk {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

error io_fail(const std::string& what, zk_code c) {
  return error{static_cast<int>(errc::io_error), what + ": ZooKeeper " + to_string(c)};
}

error view_fail(view_errc e, const std::string& what) { return error{static_cast<int>(e), what}; }

bool parse_int(std::string_view text, int64_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

bool same(const broker_registration& a, const broker_registration& b) {
  return a.id == b.id && a.host == b.host && a.port == b.port && a.listener_name == b.listener_name && a.rack == b.rack;
}
bool same(const topic_assignment& a, const topic_assignment& b) {
  return a.name == b.name && a.id == b.id && a.replicas == b.replicas && a.configs == b.configs;
}
bool same(const partition_state& a, const partition_state& b) {
  return a.leader == b.leader && a.leader_epoch == b.leader_epoch && a.isr == b.isr &&
         a.controller_epoch == b.controller_epoch && a.version == b.version;
}
template <typename M, typename Eq>
bool same_map(const M& a, const M& b, Eq eq) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (!(ia->first == ib->first) || !eq(ia->second, ib->second)) return false;
  return true;
}
bool same(const cluster_snapshot& a, const cluster_snapshot& b) {
  return a.cluster_id == b.cluster_id && a.controller_id == b.controller_id && a.registered == b.registered &&
         a.deleting_topics == b.deleting_topics &&
         same_map(a.brokers, b.brokers, [](const auto& x, const auto& y) { return same(x, y) && x.epoch == y.epoch; }) &&
         same_map(a.topics, b.topics, [](const auto& x, const auto& y) { return same(x, y); }) &&
         same_map(a.states, b.states, [](const auto& x, const auto& y) {
           if (x.size() != y.size()) return false;
           for (size_t i = 0; i < x.size(); ++i)
             if (!same(x[i], y[i])) return false;
           return true;
         });
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// options

result<zk_options> zk_options::from_config(const std::map<std::string, std::string>& props) {
  zk_options o;
  auto bad = [](const std::string& key, const std::string& v) {
    return error{static_cast<int>(zk_errc::malformed), "invalid value for " + key + ": " + v};
  };
  auto get_int = [&](const std::string& key, int64_t lo, int64_t hi, auto& out) -> std::optional<error> {
    auto it = props.find(key);
    if (it == props.end() || it->second.empty()) return std::nullopt;  // unset: the default
    int64_t v = 0;
    if (!parse_int(it->second, v) || v < lo || v > hi) return bad(key, it->second);
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return std::nullopt;
  };
  auto get_bool = [&](const std::string& key, bool& out) -> std::optional<error> {
    auto it = props.find(key);
    if (it == props.end() || it->second.empty()) return std::nullopt;
    std::string v;
    for (char c : it->second) v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (v == "true") out = true;
    else if (v == "false") out = false;
    else return bad(key, it->second);
    return std::nullopt;
  };
  if (auto it = props.find("zookeeper.connect"); it != props.end()) o.connect = it->second;
  int64_t interval_s = o.leader_imbalance_check_interval_ms / 1000;
  for (auto e : {get_int("zookeeper.session.timeout.ms", 1, INT32_MAX, o.session_timeout_ms),
                 get_int("zookeeper.connection.timeout.ms", 1, INT32_MAX, o.connection_timeout_ms),
                 get_bool("unclean.leader.election.enable", o.unclean_leader_election),
                 get_bool("auto.leader.rebalance.enable", o.auto_leader_rebalance),
                 get_int("leader.imbalance.check.interval.seconds", 1, INT32_MAX, interval_s),
                 get_int("leader.imbalance.per.broker.percentage", 0, 100, o.leader_imbalance_per_broker_percentage),
                 get_int("sluice.zookeeper.registration.retry.ms", 0, INT32_MAX, o.registration_retry_ms)}) {
    if (e) return *e;
  }
  o.leader_imbalance_check_interval_ms = interval_s * 1000;
  if (auto e = get_int("sluice.leader.imbalance.check.interval.ms", 1, INT64_MAX, o.leader_imbalance_check_interval_ms))
    return *e;
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// construction, threads

struct zk_cluster::event_sink {
  std::mutex mutex;
  boost::asio::io_context* io;
  bool alive = true;
  template <typename F>
  void post(F fn) {
    std::lock_guard lock(mutex);
    if (alive) boost::asio::post(*io, std::move(fn));
  }
};

zk_cluster::zk_cluster(const zk_options& options, std::shared_ptr<zk_connector> connector)
    : options_(options),
      connector_(std::move(connector)),
      sink_(std::make_shared<event_sink>()),
      rebalance_timer_(io_),
      disconnect_timer_(io_) {
  sink_->io = &io_;
  work_.emplace(io_.get_executor());
  thread_ = std::thread([this] { io_.run(); });
  thread_id_ = thread_.get_id();
}

zk_cluster::~zk_cluster() {
  stop();
  if (thread_.joinable()) {
    if (std::this_thread::get_id() == thread_id_) thread_.detach();  // destroyed by its own subscriber
    else thread_.join();
  }
}

template <typename F>
auto zk_cluster::run_sync(F fn) -> decltype(fn()) {
  if (std::this_thread::get_id() == thread_id_) return fn();
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto done = task.get_future();
  boost::asio::post(io_, [&task] { task(); });
  return done.get();
}

void zk_cluster::after_ms(int64_t ms, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(ms));
  timer->async_wait([this, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !stopped_) fn();
  });
}

result<std::unique_ptr<zk_cluster>> zk_cluster::open(const zk_options& options) {
  if (options.connect.empty()) return view_fail(view_errc::unavailable, "zookeeper.connect is empty");
  return open(options, std::make_shared<zk_c_connector>(options.connect));
}

result<std::unique_ptr<zk_cluster>> zk_cluster::open(const zk_options& options,
                                                     std::shared_ptr<zk_connector> connector) {
  std::unique_ptr<zk_cluster> c(new zk_cluster(options, std::move(connector)));
  auto r = c->run_sync([&]() -> result<void> {
    if (auto r = c->connect_session(); !r) return r;
    if (auto r = c->init_paths_and_cluster_id(); !r) return r;
    c->publish();  // registered=false until start(): snapshot() is never null
    return {};
  });
  if (!r) {
    c->stop();
    return r.err();
  }
  return c;
}

std::shared_ptr<zk_session> zk_cluster::current_session() const {
  std::lock_guard lock(mutex_);
  return session_;
}

int64_t zk_cluster::session_id() const {
  auto s = current_session();
  return s ? s->session_id() : 0;
}

result<void> zk_cluster::connect_session() {
  const uint64_t gen = ++generation_;
  armed_.clear();
  auto sink = sink_;
  auto r = connector_->connect(options_.session_timeout_ms, options_.effective_connection_timeout_ms(),
                               [this, sink, gen](session_event ev) {
                                 sink->post([this, gen, ev] { on_session_event(gen, ev); });
                               });
  if (!r.ok())
    return view_fail(view_errc::unavailable, "no ZooKeeper session at " + options_.connect + " within " +
                                                 std::to_string(options_.effective_connection_timeout_ms()) +
                                                 " ms (" + to_string(r.code) + ")");
  std::lock_guard lock(mutex_);
  session_ = r.value;
  return {};
}

result<void> zk_cluster::init_paths_and_cluster_id() {
  auto s = current_session();
  for (const char* p : {kBrokerIdsPath, kTopicsPath, "/brokers/seqid", kConfigTopicsPath, "/config/changes",
                        kDeleteTopicsPath, kControlledShutdownPath, "/cluster"}) {
    if (auto c = create_recursive(*s, p); c != zk_code::ok)
      return view_fail(view_errc::unavailable, std::string("cannot create ") + p + ": " + to_string(c));
  }
  if (auto c = s->create(producer_id_block_znode::path(), "", create_mode::persistent).code;
      c != zk_code::ok && c != zk_code::node_exists)
    return view_fail(view_errc::unavailable, std::string("cannot create /latest_producer_id_block: ") + to_string(c));
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto g = s->get(cluster_id_znode::path(), nullptr);
    if (g.ok()) {
      auto id = cluster_id_znode::decode(g.value.data);
      if (!id) return id.err();
      std::lock_guard lock(mutex_);
      cluster_id_ = *id;
      return {};
    }
    if (g.code != zk_code::no_node) return view_fail(view_errc::unavailable, std::string("/cluster/id: ") + to_string(g.code));
    // Created once: a concurrent creator wins with NODEEXISTS and we read its id.
    auto c = s->create(cluster_id_znode::path(), cluster_id_znode::encode(to_base64(random_topic_id())),
                       create_mode::persistent);
    if (!c.ok() && c.code != zk_code::node_exists)
      return view_fail(view_errc::unavailable, std::string("cannot create /cluster/id: ") + to_string(c.code));
  }
  return view_fail(view_errc::unavailable, "cannot read /cluster/id");
}

void zk_cluster::stop() {
  bool expected = false;
  if (!stopped_.compare_exchange_strong(expected, true)) return;
  if (!thread_.joinable()) return;
  run_sync([this] {  // inline when called from a subscriber
    rebalance_timer_.cancel();
    disconnect_timer_.cancel();
    if (is_controller_) log::info("zookeeper: broker {} stops being the controller", self_id_);
    is_controller_ = false;
    is_controller_flag_ = false;
    registered_ = false;
    registered_flag_ = false;
    std::shared_ptr<zk_session> s;
    {
      std::lock_guard lock(mutex_);
      s.swap(session_);
    }
    if (s) s->close();  // ephemerals (/brokers/ids/<id>, /controller) go at once
    shutdown_done_.reset();
    return 0;
  });
  {
    std::lock_guard lock(sink_->mutex);
    sink_->alive = false;
  }
  work_.reset();
  io_.stop();
  if (std::this_thread::get_id() != thread_id_) thread_.join();  // else the destructor joins
}

// ---------------------------------------------------------------------------------------------------------
// watches and session events (coordination thread)

watch_fn zk_cluster::watcher(watch_kind kind, const std::string& path) {
  if (!armed_.insert({kind, path}).second) return nullptr;  // one pending watch per path and kind
  auto sink = sink_;
  const uint64_t gen = generation_;
  return [this, sink, gen, kind, path](watch_event ev, const std::string&) {
    sink->post([this, gen, kind, ev, path] { on_watch(gen, kind, ev, path); });
  };
}

std::optional<zk_node> zk_cluster::read_watched(const std::string& path, bool* failed) {
  *failed = false;
  auto s = current_session();
  if (!s) {
    *failed = true;
    return std::nullopt;
  }
  auto w = watcher(data_watch, path);
  const bool armed_here = static_cast<bool>(w);
  auto r = s->get(path, std::move(w));
  if (r.ok()) return r.value;
  if (armed_here) armed_.erase({data_watch, path});
  if (r.code != zk_code::no_node) {
    *failed = true;
    on_zk_error(r.code);
    return std::nullopt;
  }
  // Absent: an exists watch tells us when it appears.
  auto w2 = watcher(data_watch, path);
  const bool armed2 = static_cast<bool>(w2);
  auto e = s->exists(path, std::move(w2));
  if (!e.ok()) {
    if (armed2) armed_.erase({data_watch, path});
    *failed = true;
    on_zk_error(e.code);
    return std::nullopt;
  }
  if (!e.value) return std::nullopt;
  auto again = s->get(path, nullptr);  // created meanwhile; the exists watch covers later changes
  if (again.ok()) return again.value;
  if (again.code != zk_code::no_node) {
    *failed = true;
    on_zk_error(again.code);
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> zk_cluster::read_children(const std::string& path) {
  auto s = current_session();
  if (!s) return std::nullopt;
  auto w = watcher(child_watch, path);
  const bool armed_here = static_cast<bool>(w);
  auto r = s->get_children(path, std::move(w));
  if (r.ok()) return std::move(r.value);
  if (armed_here) armed_.erase({child_watch, path});
  if (r.code == zk_code::no_node) {
    log::warn("zookeeper: {} is missing; re-creating it", path);
    create_recursive(*s, path);
    schedule_resync();
  } else {
    on_zk_error(r.code);
  }
  return std::nullopt;
}

void zk_cluster::on_zk_error(zk_code c) {
  if (c == zk_code::session_expired || c == zk_code::closed) {
    const uint64_t gen = generation_;
    boost::asio::post(io_, [this, gen] {
      if (gen == generation_ && !stopped_) session_lost();
    });
  } else {
    log::warn("zookeeper: operation failed ({}); reading the cluster again shortly", to_string(c));
    schedule_resync();
  }
}

void zk_cluster::schedule_resync() {
  const uint64_t gen = generation_;
  after_ms(1000, [this, gen] {
    if (gen != generation_ || !current_session()) return;
    sync_all();
    after_change();
  });
}

void zk_cluster::on_watch(uint64_t generation, watch_kind kind, watch_event, const std::string& path) {
  if (generation != generation_ || stopped_) return;
  armed_.erase({kind, path});
  const std::string topics_prefix = std::string(kTopicsPath) + "/";
  const std::string config_prefix = std::string(kConfigTopicsPath) + "/";
  if (path == kBrokerIdsPath) {
    sync_brokers();
  } else if (path == controller_znode::path()) {
    sync_controller();
  } else if (path == kTopicsPath) {
    sync_topics();
  } else if (path.starts_with(topics_prefix)) {
    std::string rest = path.substr(topics_prefix.size());
    auto slash = rest.find('/');
    if (slash == std::string::npos) {
      load_topic(rest);
    } else {
      // <topic>/partitions/<p>/state
      std::string topic = rest.substr(0, slash);
      std::string tail = rest.substr(slash);
      const std::string mid = "/partitions/";
      int64_t p = -1;
      if (tail.starts_with(mid) && tail.ends_with("/state") &&
          parse_int(std::string_view(tail).substr(mid.size(), tail.size() - mid.size() - 6), p))
        load_state(topic, static_cast<int32_t>(p));
    }
  } else if (path.starts_with(config_prefix)) {
    load_config(path.substr(config_prefix.size()));
  } else if (path == kDeleteTopicsPath) {
    sync_delete_markers();
  } else if (path == kControlledShutdownPath) {
    sync_shutdown_markers();
  } else if (self_ && path == controlled_shutdown_znode::path(self_->id)) {
    check_own_shutdown_marker();
  }
  after_change();
}

void zk_cluster::after_change() {
  if (is_controller_) reconcile();
  publish();
}

void zk_cluster::on_session_event(uint64_t generation, session_event ev) {
  if (generation != generation_ || stopped_) return;
  switch (ev) {
    case session_event::expired:
      log::warn("zookeeper: session 0x{:x} expired", session_id());
      session_lost();
      break;
    case session_event::disconnected: {
      log::warn("zookeeper: disconnected; the session is given up after {} ms without a server",
                options_.session_timeout_ms);
      disconnect_timer_.expires_after(std::chrono::milliseconds(options_.session_timeout_ms));
      disconnect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
        if (ec || generation != generation_ || stopped_) return;
        log::warn("zookeeper: no server for the session timeout; treating the session as expired");
        session_lost();
      });
      break;
    }
    case session_event::connected:
      disconnect_timer_.cancel();
      log::info("zookeeper: reconnected (same session)");
      break;
  }
}

void zk_cluster::session_lost() {
  std::shared_ptr<zk_session> old;
  {
    std::lock_guard lock(mutex_);
    old.swap(session_);
  }
  if (!old) return;
  registered_ = false;
  registered_flag_ = false;
  if (is_controller_) resign();
  controller_id_ = -1;
  ++generation_;
  armed_.clear();
  disconnect_timer_.cancel();
  old->close();
  publish();  // registered=false at once: stop acting as leader or coordinator
  try_reconnect();
}

void zk_cluster::try_reconnect() {
  if (stopped_ || !self_) return;
  if (!current_session()) {
    if (auto r = connect_session(); !r) {
      log::warn("zookeeper: {}; retrying in 1 s", r.err().message);
      after_ms(1000, [this] { try_reconnect(); });
      return;
    }
  }
  const uint64_t gen = generation_;
  if (auto r = register_self(false); !r) {
    log::warn("zookeeper: re-registration failed: {}; retrying in 1 s", r.err().message);
    after_ms(1000, [this, gen] {
      if (gen == generation_) try_reconnect();
    });
    return;
  }
  if (shutdown_requested_) {
    auto s = current_session();
    controlled_shutdown_znode::value v{self_->id, now_ms(), -1};
    s->create(controlled_shutdown_znode::path(self_->id), controlled_shutdown_znode::encode(v), create_mode::ephemeral);
  }
  registered_ = true;
  registered_flag_ = true;
  sync_all();
  try_elect();
  log::info("zookeeper: broker {} registered again with session 0x{:x}", self_->id, session_id());
  after_change();
}

// ---------------------------------------------------------------------------------------------------------
// registration and following

result<void> zk_cluster::register_self(bool retry) {
  auto s = current_session();
  if (!s) return view_fail(view_errc::unavailable, "no ZooKeeper session");
  const std::string path = broker_znode::path(self_->id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry ? options_.registration_retry_ms : 0);
  while (true) {
    auto r = s->create(path, broker_znode::encode(*self_, now_ms()), create_mode::ephemeral);
    if (r.ok()) return {};
    if (r.code != zk_code::node_exists)
      return view_fail(view_errc::unavailable, "cannot register " + path + ": " + to_string(r.code));
    auto e = s->exists(path, nullptr);
    if (!e.ok()) return view_fail(view_errc::unavailable, "cannot read " + path + ": " + to_string(e.code));
    if (!e.value) continue;  // went away meanwhile
    if (e.value->ephemeral_owner == s->session_id()) return {};  // ours already (a retried create)
    if (std::chrono::steady_clock::now() >= deadline) {
      char owner[32];
      std::snprintf(owner, sizeof owner, "0x%llx", static_cast<unsigned long long>(e.value->ephemeral_owner));
      return error{static_cast<int>(zk_errc::registration_conflict),
                   "broker.id " + std::to_string(self_->id) + " is already registered at " + path +
                       " by another live ZooKeeper session (" + owner + "): is another broker running with this id?"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

result<void> zk_cluster::start(const broker_registration& self) {
  if (stopped_) return view_fail(view_errc::unavailable, "stopped");
  return run_sync([&]() -> result<void> {
    if (registered_) return {};
    self_ = self;
    self_id_ = self.id;
    if (!current_session()) {
      if (auto r = connect_session(); !r) return r;
    }
    if (auto r = register_self(true); !r) return r;
    log::info("zookeeper: registered broker {} at {} (session 0x{:x})", self.id, broker_znode::path(self.id),
              session_id());
    registered_ = true;
    registered_flag_ = true;
    sync_all();
    try_elect();
    after_change();
    return {};
  });
}

std::shared_ptr<const cluster_snapshot> zk_cluster::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

void zk_cluster::subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) {
  std::lock_guard lock(mutex_);
  subscribers_.push_back(std::move(on_change));
}

void zk_cluster::forget_topics_except(const std::set<std::string>& present) {
  for (auto it = topics_.begin(); it != topics_.end();) {
    if (!present.contains(it->first)) {
      states_.erase(it->first);
      it = topics_.erase(it);
    } else {
      ++it;
    }
  }
}

void zk_cluster::sync_all() {
  sync_brokers();
  sync_controller();
  if (auto names = read_children(kTopicsPath)) {
    const std::set<std::string> present(names->begin(), names->end());
    forget_topics_except(present);
    for (const auto& n : present) load_topic(n);
  }
  sync_delete_markers();
  sync_shutdown_markers();
}

void zk_cluster::sync_brokers() {
  auto ids = read_children(kBrokerIdsPath);
  if (!ids) return;
  auto s = current_session();
  std::map<int32_t, broker_entry> next;
  for (const auto& name : *ids) {
    int64_t id = -1;
    if (!parse_int(name, id) || id < 0 || id > INT32_MAX) continue;
    auto r = s->get(broker_znode::path(static_cast<int32_t>(id)), nullptr);
    if (r.code == zk_code::no_node) continue;
    if (!r.ok()) {
      on_zk_error(r.code);
      return;
    }
    auto reg = broker_znode::decode(static_cast<int32_t>(id), r.value.data);
    if (!reg) {
      log::error("zookeeper: ignoring broker {}: {}", id, reg.err().message);
      continue;
    }
    reg->epoch = r.value.stat.czxid;
    next[static_cast<int32_t>(id)] = broker_entry{*reg, r.value.stat.czxid};
  }
  brokers_ = std::move(next);
}

void zk_cluster::sync_controller() {
  bool failed = false;
  auto n = read_watched(controller_znode::path(), &failed);
  if (failed) return;
  if (!n) {
    controller_id_ = -1;
    if (is_controller_) resign();
    if (registered_) try_elect();
    return;
  }
  auto id = controller_znode::decode(n->data);
  if (!id) log::error("zookeeper: {}", id.err().message);
  controller_id_ = id ? *id : -1;
  if (is_controller_ && (controller_id_ != self_id_ || n->stat.ephemeral_owner != session_id())) resign();
}

void zk_cluster::sync_topics() {
  auto names = read_children(kTopicsPath);
  if (!names) return;
  const std::set<std::string> present(names->begin(), names->end());
  forget_topics_except(present);
  for (const auto& n : present)
    if (!topics_.contains(n)) load_topic(n);
}

void zk_cluster::load_topic(const std::string& name) {
  bool failed = false;
  auto node = read_watched(topic_znode::path(name), &failed);
  if (failed) return;
  if (!node) {
    topics_.erase(name);
    states_.erase(name);
    return;
  }
  auto t = topic_znode::decode(name, node->data);
  if (!t) {
    log::error("zookeeper: ignoring topic {}: {}", name, t.err().message);
    return;
  }
  auto existing = topics_.find(name);
  const bool is_new = existing == topics_.end();
  if (!is_new) t->configs = existing->second.configs;
  const size_t count = t->replicas.size();
  topics_[name] = std::move(*t);
  auto& st = states_[name];
  const size_t before = st.size();
  st.resize(count);
  if (is_new) load_config(name);
  for (size_t p = 0; p < count; ++p) {
    auto path = partition_state_znode::path(name, static_cast<int32_t>(p));
    if (p >= before || !armed_.contains({data_watch, path})) load_state(name, static_cast<int32_t>(p));
  }
}

void zk_cluster::load_state(const std::string& topic, int32_t partition) {
  auto it = states_.find(topic);
  if (it == states_.end() || partition < 0 || static_cast<size_t>(partition) >= it->second.size()) return;
  bool failed = false;
  auto node = read_watched(partition_state_znode::path(topic, partition), &failed);
  if (failed) return;
  it = states_.find(topic);
  if (it == states_.end() || static_cast<size_t>(partition) >= it->second.size()) return;
  if (!node) {
    it->second[static_cast<size_t>(partition)] = partition_state{};
    return;
  }
  auto s = partition_state_znode::decode(node->data, node->stat.version);
  if (!s) {
    log::error("zookeeper: ignoring state of {}-{}: {}", topic, partition, s.err().message);
    return;
  }
  it->second[static_cast<size_t>(partition)] = *s;
}

void zk_cluster::load_config(const std::string& topic) {
  bool failed = false;
  auto node = read_watched(topic_config_znode::path(topic), &failed);
  if (failed) return;
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  if (!node) {
    it->second.configs.clear();
    return;
  }
  auto c = topic_config_znode::decode(node->data);
  if (!c) {
    log::error("zookeeper: ignoring config of {}: {}", topic, c.err().message);
    return;
  }
  it->second.configs = std::move(*c);
}

void zk_cluster::sync_delete_markers() {
  auto names = read_children(kDeleteTopicsPath);
  if (!names) return;
  deleting_ = std::set<std::string, std::less<>>(names->begin(), names->end());
}

void zk_cluster::sync_shutdown_markers() {
  auto names = read_children(kControlledShutdownPath);
  if (!names) return;
  shutdown_markers_.clear();
  for (const auto& n : *names) {
    int64_t id = -1;
    if (parse_int(n, id) && id >= 0 && id <= INT32_MAX) shutdown_markers_.insert(static_cast<int32_t>(id));
  }
  for (auto it = shutdown_answered_.begin(); it != shutdown_answered_.end();)
    it = shutdown_markers_.contains(it->first) ? std::next(it) : shutdown_answered_.erase(it);
  if (self_ && shutdown_markers_.contains(self_->id)) check_own_shutdown_marker();
}

void zk_cluster::check_own_shutdown_marker() {
  if (!self_ || !shutdown_requested_) return;
  bool failed = false;
  auto node = read_watched(controlled_shutdown_znode::path(self_->id), &failed);
  if (failed || !node) return;
  auto v = controlled_shutdown_znode::decode(node->data);
  if (v && v->remaining_leaders == 0 && shutdown_done_) {
    log::info("zookeeper: controlled shutdown of broker {} acknowledged by the controller", self_->id);
    shutdown_done_->set_value();
    shutdown_done_.reset();
  }
}

void zk_cluster::publish() {
  auto snap = std::make_shared<cluster_snapshot>();
  {
    std::lock_guard lock(mutex_);
    snap->cluster_id = cluster_id_;
  }
  snap->controller_id = controller_id_;
  snap->registered = registered_;
  for (const auto& [id, b] : brokers_) snap->brokers[id] = b.reg;
  snap->topics = topics_;
  snap->states = states_;
  snap->deleting_topics = deleting_;
  std::vector<std::function<void(std::shared_ptr<const cluster_snapshot>)>> subscribers;
  {
    std::lock_guard lock(mutex_);
    if (snapshot_ && same(*snapshot_, *snap)) return;
    snap->sequence = ++sequence_;
    snapshot_ = snap;
    subscribers = subscribers_;
  }
  for (const auto& f : subscribers) f(snap);
}

// ---------------------------------------------------------------------------------------------------------
// controller (coordination thread)

void zk_cluster::try_elect() {
  if (!registered_ || is_controller_ || stopped_) return;
  auto s = current_session();
  if (!s) return;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto e = s->get(controller_epoch_znode::path(), nullptr);
    if (e.code == zk_code::no_node) {
      auto c = s->create(controller_epoch_znode::path(), controller_epoch_znode::encode(0), create_mode::persistent);
      if (!c.ok() && c.code != zk_code::node_exists) return on_zk_error(c.code);
      continue;
    }
    if (!e.ok()) return on_zk_error(e.code);
    auto epoch = controller_epoch_znode::decode(e.value.data);
    if (!epoch) {
      log::error("zookeeper: cannot take part in the controller election: {}", epoch.err().message);
      return;
    }
    size_t failed = 0;
    // Kafka: create /controller and bump /controller_epoch in one multi, conditional on the epoch's version.
    auto rc = s->multi({zk_op::create(controller_znode::path(), controller_znode::encode(self_->id, now_ms()),
                                      create_mode::ephemeral),
                        zk_op::set(controller_epoch_znode::path(), controller_epoch_znode::encode(*epoch + 1),
                                   e.value.stat.version)},
                       &failed);
    if (rc == zk_code::ok) {
      is_controller_ = true;
      is_controller_flag_ = true;
      controller_epoch_ = *epoch + 1;
      controller_epoch_flag_ = controller_epoch_;
      controller_epoch_version_ = e.value.stat.version + 1;
      controller_id_ = self_->id;
      known_czxid_.clear();
      for (const auto& [id, b] : brokers_) known_czxid_[id] = b.czxid;
      shutdown_answered_.clear();
      log::info("zookeeper: broker {} is the controller (controller epoch {})", self_->id, controller_epoch_);
      bool f = false;
      read_watched(controller_znode::path(), &f);
      arm_rebalance_timer();
      reconcile();
      return;
    }
    if (rc == zk_code::node_exists && failed == 0) {
      bool f = false;
      auto n = read_watched(controller_znode::path(), &f);
      if (f) return;
      if (!n) continue;  // gone meanwhile: try again
      auto id = controller_znode::decode(n->data);
      controller_id_ = id ? *id : -1;
      return;
    }
    if (rc == zk_code::bad_version) continue;
    return on_zk_error(rc);
  }
}

void zk_cluster::resign() {
  if (!is_controller_) return;
  log::warn("zookeeper: broker {} is no longer the controller", self_id_);
  is_controller_ = false;
  is_controller_flag_ = false;
  rebalance_timer_.cancel();
  known_czxid_.clear();
  shutdown_answered_.clear();
}

cluster_liveness zk_cluster::liveness(const std::set<int32_t>& treat_as_dead) const {
  cluster_liveness l;
  for (const auto& [id, b] : brokers_)
    if (!treat_as_dead.contains(id)) l.live.insert(id);
  for (int32_t id : shutdown_markers_)
    if (l.live.contains(id)) l.shutting_down.insert(id);
  return l;
}

bool zk_cluster::unclean_for(const std::string& topic) const {
  auto it = topics_.find(topic);
  if (it != topics_.end()) {
    auto c = it->second.configs.find("unclean.leader.election.enable");
    if (c != it->second.configs.end()) return c->second == "true" || c->second == "TRUE" || c->second == "True";
  }
  return options_.unclean_leader_election;
}

void zk_cluster::reconcile() {
  if (!is_controller_ || !registered_) return;
  // Topic deletions first (their partitions need no leader any more).
  for (const auto& t : std::vector<std::string>(deleting_.begin(), deleting_.end())) {
    delete_topic_znodes(t);
    if (!is_controller_) return;
  }
  // A broker that re-registered (new czxid) since we last acted lost its state: treat it as failed, then
  // as started (Kafka's "bounced brokers").
  std::set<int32_t> bounced;
  for (const auto& [id, b] : brokers_) {
    auto k = known_czxid_.find(id);
    if (k != known_czxid_.end() && k->second != b.czxid) bounced.insert(id);
  }
  std::vector<cluster_liveness> passes;
  if (!bounced.empty()) passes.push_back(liveness(bounced));
  passes.push_back(liveness());
  for (const auto& live : passes) {
    for (const auto& [name, topic] : topics_) {
      if (deleting_.contains(name)) continue;
      auto& st = states_[name];
      if (st.size() < topic.replicas.size()) st.resize(topic.replicas.size());
      const bool unclean = unclean_for(name);
      for (size_t p = 0; p < topic.replicas.size(); ++p) {
        for (int attempt = 0; attempt < 3; ++attempt) {
          const partition_state current = states_[name][p];
          auto next = current.version < 0 ? initial_state(topic.replicas[p], live, controller_epoch_)
                                          : next_state(topic.replicas[p], current, live, unclean, controller_epoch_);
          if (!next) break;
          if (write_state(name, static_cast<int32_t>(p), *next)) break;
          if (!is_controller_) return;
          load_state(name, static_cast<int32_t>(p));  // re-read just before deciding again
        }
      }
    }
  }
  known_czxid_.clear();
  for (const auto& [id, b] : brokers_) known_czxid_[id] = b.czxid;
  answer_shutdowns();
}

bool zk_cluster::write_state(const std::string& topic, int32_t partition, const partition_state& next) {
  auto s = current_session();
  if (!s) return false;
  const std::string path = partition_state_znode::path(topic, partition);
  std::vector<zk_op> ops{zk_op::check(controller_epoch_znode::path(), controller_epoch_version_)};
  if (next.version < 0) {
    for (const auto& parent : {topic_znode::partitions_path(topic), partition_state_znode::partition_path(topic, partition)}) {
      auto c = s->create(parent, "", create_mode::persistent);
      if (c.code == zk_code::no_node) return false;  // the topic is gone
      if (!c.ok() && c.code != zk_code::node_exists) {
        on_zk_error(c.code);
        return false;
      }
    }
    ops.push_back(zk_op::create(path, partition_state_znode::encode(next)));
  } else {
    ops.push_back(zk_op::set(path, partition_state_znode::encode(next), next.version));
  }
  size_t failed = 0;
  auto rc = s->multi(ops, &failed);
  if (rc == zk_code::ok) {
    partition_state stored = next;
    stored.version = next.version < 0 ? 0 : next.version + 1;
    auto it = states_.find(topic);
    if (it != states_.end() && static_cast<size_t>(partition) < it->second.size())
      it->second[static_cast<size_t>(partition)] = stored;
    log::info("zookeeper: controller: {}-{} leader {} leader_epoch {} isr [{}]", topic, partition, stored.leader,
              stored.leader_epoch, fmt::join(stored.isr, ","));
    return true;
  }
  if (failed == 0 && (rc == zk_code::bad_version || rc == zk_code::no_node)) {
    log::warn("zookeeper: /controller_epoch moved on: another broker is the controller");
    resign();
    return false;
  }
  if (rc == zk_code::bad_version || rc == zk_code::node_exists || rc == zk_code::no_node) return false;
  on_zk_error(rc);
  return false;
}

void zk_cluster::delete_topic_znodes(const std::string& topic) {
  auto s = current_session();
  if (!s) return;
  // Partition states, the partitions, the topic, its config, then the marker (Kafka's order).
  auto rc = remove_recursive(*s, topic_znode::path(topic));
  if (rc == zk_code::ok) {
    rc = s->remove(topic_config_znode::path(topic), -1);
    if (rc == zk_code::no_node) rc = zk_code::ok;
  }
  if (rc == zk_code::ok) {
    rc = s->remove(delete_topic_znode::path(topic), -1);
    if (rc == zk_code::no_node) rc = zk_code::ok;
  }
  if (rc != zk_code::ok) return on_zk_error(rc);
  log::info("zookeeper: controller: deleted topic {}", topic);
  topics_.erase(topic);
  states_.erase(topic);
  deleting_.erase(topic);
}

void zk_cluster::answer_shutdowns() {
  auto s = current_session();
  if (!s) return;
  for (int32_t id : shutdown_markers_) {
    if (!brokers_.contains(id)) continue;
    int32_t remaining = 0;
    for (const auto& [name, topic] : topics_) {
      auto st = states_.find(name);
      if (st == states_.end()) continue;
      for (size_t p = 0; p < topic.replicas.size() && p < st->second.size(); ++p)
        if (st->second[p].leader == id && topic.replicas[p].size() > 1) ++remaining;
    }
    auto done = shutdown_answered_.find(id);
    if (done != shutdown_answered_.end() && done->second == remaining) continue;
    controlled_shutdown_znode::value v{id, now_ms(), remaining};
    auto r = s->set(controlled_shutdown_znode::path(id), controlled_shutdown_znode::encode(v), -1);
    if (r.ok()) {
      shutdown_answered_[id] = remaining;
      log::info("zookeeper: controller: controlled shutdown of broker {}: {} leaderships remain", id, remaining);
    } else if (r.code != zk_code::no_node) {
      on_zk_error(r.code);
    }
  }
}

void zk_cluster::arm_rebalance_timer() {
  if (!options_.auto_leader_rebalance) return;
  rebalance_timer_.expires_after(std::chrono::milliseconds(options_.leader_imbalance_check_interval_ms));
  rebalance_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_ || !is_controller_) return;
    rebalance_preferred_leaders();
    publish();
    arm_rebalance_timer();
  });
}

void zk_cluster::rebalance_preferred_leaders() {
  std::map<std::string, std::vector<std::vector<int32_t>>, std::less<>> assignments;
  for (const auto& [name, t] : topics_)
    if (!deleting_.contains(name)) assignments[name] = t.replicas;
  auto imbalanced = imbalanced_brokers(assignments, states_, options_.leader_imbalance_per_broker_percentage);
  if (imbalanced.empty()) return;
  const auto live = liveness();
  for (const auto& [name, replicas] : assignments) {
    for (size_t p = 0; p < replicas.size(); ++p) {
      if (replicas[p].empty() || !imbalanced.contains(replicas[p].front())) continue;
      for (int attempt = 0; attempt < 2; ++attempt) {
        auto st = states_.find(name);
        if (st == states_.end() || p >= st->second.size()) break;
        auto next = preferred_state(replicas[p], st->second[p], live, controller_epoch_);
        if (!next) break;
        if (write_state(name, static_cast<int32_t>(p), *next)) break;
        if (!is_controller_) return;
        load_state(name, static_cast<int32_t>(p));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// cluster_view: ISR updates and controlled shutdown

result<partition_state> zk_cluster::update_isr(const std::string& topic, int32_t partition,
                                               const partition_state& next) {
  if (!registered_flag_) return view_fail(view_errc::not_registered, "not registered with ZooKeeper");
  auto s = current_session();
  if (!s) return view_fail(view_errc::not_registered, "no ZooKeeper session");
  if (next.version < 0) return view_fail(view_errc::version_conflict, "the partition state has not been written yet");
  auto r = s->set(partition_state_znode::path(topic, partition), partition_state_znode::encode(next), next.version);
  if (r.ok()) {
    partition_state stored = next;
    stored.version = r.value.version;
    return stored;
  }
  if (r.code == zk_code::bad_version || r.code == zk_code::no_node)
    return view_fail(view_errc::version_conflict, topic + "-" + std::to_string(partition) + ": state changed (" +
                                                      to_string(r.code) + ")");
  return view_fail(view_errc::unavailable, std::string("ISR update failed: ") + to_string(r.code));
}

result<void> zk_cluster::controlled_shutdown(int64_t timeout_ms) {
  if (stopped_) return view_fail(view_errc::not_registered, "stopped");
  if (std::this_thread::get_id() == thread_id_)
    return view_fail(view_errc::unavailable, "controlled_shutdown cannot wait on the coordination thread");
  auto started = run_sync([this]() -> result<std::shared_future<void>> {
    if (!registered_ || !self_) return view_fail(view_errc::not_registered, "not registered with ZooKeeper");
    auto s = current_session();
    shutdown_requested_ = true;
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future().share();
    shutdown_done_ = done;
    controlled_shutdown_znode::value v{self_->id, now_ms(), -1};
    auto r = s->create(controlled_shutdown_znode::path(self_->id), controlled_shutdown_znode::encode(v),
                       create_mode::ephemeral);
    if (!r.ok() && r.code != zk_code::node_exists)
      return view_fail(view_errc::unavailable, std::string("cannot request a controlled shutdown: ") + to_string(r.code));
    log::info("zookeeper: broker {} asks the controller for a controlled shutdown", self_->id);
    check_own_shutdown_marker();
    return future;
  });
  if (!started) return started.err();
  if (started->wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready)
    return view_fail(view_errc::timeout, "the controller did not move every leadership away within " +
                                             std::to_string(timeout_ms) + " ms");
  return {};
}

// ---------------------------------------------------------------------------------------------------------
// cluster_store (caller's thread)

std::string zk_cluster::cluster_id() const {
  std::lock_guard lock(mutex_);
  return cluster_id_;
}

std::vector<topic_assignment> zk_cluster::topics() const {
  std::vector<topic_assignment> out;
  auto s = current_session();
  if (!s) return out;
  auto names = s->get_children(kTopicsPath, nullptr);
  if (!names.ok()) {
    log::error("zookeeper: cannot list topics: {}", to_string(names.code));
    return out;
  }
  std::sort(names.value.begin(), names.value.end());
  for (const auto& n : names.value) {
    auto node = s->get(topic_znode::path(n), nullptr);
    if (!node.ok()) continue;
    auto t = topic_znode::decode(n, node.value.data);
    if (!t) {
      log::error("zookeeper: ignoring topic {}: {}", n, t.err().message);
      continue;
    }
    auto config = s->get(topic_config_znode::path(n), nullptr);
    if (config.ok()) {
      auto c = topic_config_znode::decode(config.value.data);
      if (c) t->configs = std::move(*c);
      else log::error("zookeeper: ignoring config of {}: {}", n, c.err().message);
    }
    out.push_back(std::move(*t));
  }
  return out;
}

result<void> zk_cluster::create_topic(const topic_assignment& topic) {
  auto s = current_session();
  if (!s) return io_fail("create topic " + topic.name, zk_code::closed);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto marker = s->exists(delete_topic_znode::path(topic.name), nullptr);
    if (!marker.ok()) return io_fail("create topic " + topic.name, marker.code);
    if (marker.value)
      return error{static_cast<int>(errc::topic_exists), "topic " + topic.name + " is marked for deletion"};
    auto config = s->exists(topic_config_znode::path(topic.name), nullptr);
    if (!config.ok()) return io_fail("create topic " + topic.name, config.code);
    const std::string config_data = topic_config_znode::encode(topic.configs);
    size_t failed = 0;
    // Config first, then the assignment, in one multi (Kafka writes them in this order).
    auto rc = s->multi({config.value ? zk_op::set(topic_config_znode::path(topic.name), config_data, -1)
                                     : zk_op::create(topic_config_znode::path(topic.name), config_data),
                        zk_op::create(topic_znode::path(topic.name), topic_znode::encode(topic))},
                       &failed);
    if (rc == zk_code::ok) return {};
    if (failed == 1 && rc == zk_code::node_exists) return error{static_cast<int>(errc::topic_exists), topic.name};
    if (failed == 0 && (rc == zk_code::node_exists || rc == zk_code::no_node)) continue;  // config raced
    return io_fail("create topic " + topic.name, rc);
  }
  return io_fail("create topic " + topic.name, zk_code::bad_version);
}

result<void> zk_cluster::delete_topic(const std::string& name) {
  auto s = current_session();
  if (!s) return io_fail("delete topic " + name, zk_code::closed);
  auto e = s->exists(topic_znode::path(name), nullptr);
  if (!e.ok()) return io_fail("delete topic " + name, e.code);
  if (!e.value) return error{static_cast<int>(errc::unknown_topic), name};
  auto r = s->create(delete_topic_znode::path(name), "", create_mode::persistent);
  if (!r.ok() && r.code != zk_code::node_exists) return io_fail("delete topic " + name, r.code);
  return {};
}

result<void> zk_cluster::set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) {
  auto s = current_session();
  if (!s) return io_fail("alter configs of " + name, zk_code::closed);
  auto e = s->exists(topic_znode::path(name), nullptr);
  if (!e.ok()) return io_fail("alter configs of " + name, e.code);
  if (!e.value) return error{static_cast<int>(errc::unknown_topic), name};
  const std::string data = topic_config_znode::encode(configs);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = s->set(topic_config_znode::path(name), data, -1);
    if (r.ok()) return {};
    if (r.code != zk_code::no_node) return io_fail("alter configs of " + name, r.code);
    auto c = s->create(topic_config_znode::path(name), data, create_mode::persistent);
    if (c.ok()) return {};
    if (c.code != zk_code::node_exists) return io_fail("alter configs of " + name, c.code);
  }
  return io_fail("alter configs of " + name, zk_code::node_exists);
}

result<void> zk_cluster::add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) {
  auto s = current_session();
  if (!s) return io_fail("add partitions to " + name, zk_code::closed);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto node = s->get(topic_znode::path(name), nullptr);
    if (node.code == zk_code::no_node) return error{static_cast<int>(errc::unknown_topic), name};
    if (!node.ok()) return io_fail("add partitions to " + name, node.code);
    auto t = topic_znode::decode(name, node.value.data);
    if (!t) return error{static_cast<int>(errc::io_error), t.err().message};
    t->replicas.insert(t->replicas.end(), replicas.begin(), replicas.end());
    auto r = s->set(topic_znode::path(name), topic_znode::encode(*t), node.value.stat.version);
    if (r.ok()) return {};
    if (r.code == zk_code::no_node) return error{static_cast<int>(errc::unknown_topic), name};
    if (r.code != zk_code::bad_version) return io_fail("add partitions to " + name, r.code);
  }
  return io_fail("add partitions to " + name, zk_code::bad_version);
}

result<producer_id_block> zk_cluster::allocate_producer_id_block(int32_t broker_id, int64_t size) {
  if (size <= 0) return error{static_cast<int>(errc::io_error), "producer id block size must be positive"};
  auto s = current_session();
  if (!s) return io_fail("allocate producer ids", zk_code::closed);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto node = s->get(producer_id_block_znode::path(), nullptr);
    if (node.code == zk_code::no_node) {
      auto c = s->create(producer_id_block_znode::path(), "", create_mode::persistent);
      if (!c.ok() && c.code != zk_code::node_exists) return io_fail("allocate producer ids", c.code);
      continue;
    }
    if (!node.ok()) return io_fail("allocate producer ids", node.code);
    int64_t first = 0;
    if (!node.value.data.empty()) {
      auto previous = producer_id_block_znode::decode(node.value.data);
      if (!previous) return error{static_cast<int>(errc::io_error), previous.err().message};
      if (previous->last > INT64_MAX - size) return error{static_cast<int>(errc::io_error), "producer ids exhausted"};
      first = previous->last + 1;
    }
    producer_id_block block{broker_id, first, first + size - 1};
    auto r = s->set(producer_id_block_znode::path(), producer_id_block_znode::encode(block), node.value.stat.version);
    if (r.ok()) return block;
    if (r.code != zk_code::bad_version) return io_fail("allocate producer ids", r.code);
  }
  return io_fail("allocate producer ids", zk_code::bad_version);
}

}  // namespace sluice::coordination::zk
