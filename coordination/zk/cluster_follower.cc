#include "coordination/zk/cluster_follower.h"

#include "base/logging.h"
#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/zk_store.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

using detail::now_ms;
using detail::parse_int;
using detail::view_fail;

namespace {

bool same(const broker_registration& a, const broker_registration& b) {
  auto same_endpoints = [](const std::vector<listener_endpoint>& x, const std::vector<listener_endpoint>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].listener_name != y[i].listener_name || x[i].host != y[i].host || x[i].port != y[i].port ||
          x[i].security_protocol != y[i].security_protocol)
        return false;
    return true;
  };
  return a.id == b.id && a.host == b.host && a.port == b.port && a.listener_name == b.listener_name && a.rack == b.rack &&
         same_endpoints(a.endpoints, b.endpoints);
}
bool same(const topic_assignment& a, const topic_assignment& b) {
  return a.name == b.name && a.id == b.id && a.replicas == b.replicas && a.configs == b.configs &&
         a.adding_replicas == b.adding_replicas && a.removing_replicas == b.removing_replicas;
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

cluster_follower::cluster_follower(zk_session_manager& session, const zk_store& store)
    : session_(session), store_(store) {}

// ---------------------------------------------------------------------------------------------------------
// reads with watches

void cluster_follower::on_watch(const std::string& path) {
  const std::string topics_prefix = std::string(kTopicsPath) + "/";
  const std::string config_prefix = std::string(kConfigTopicsPath) + "/";
  const auto& self = session_.self();
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
  } else if (path == kPreferredReplicaElectionPath) {
    sync_preferred_election();
  } else if (self && path == controlled_shutdown_znode::path(self->id)) {
    check_own_shutdown_marker();
  }
}

void cluster_follower::forget_topics_except(const std::set<std::string>& present) {
  for (auto it = state_.topics.begin(); it != state_.topics.end();) {
    if (!present.contains(it->first)) {
      state_.states.erase(it->first);
      it = state_.topics.erase(it);
    } else {
      ++it;
    }
  }
}

void cluster_follower::sync_all() {
  sync_brokers();
  sync_controller();
  if (auto names = session_.read_children(kTopicsPath)) {
    const std::set<std::string> present(names->begin(), names->end());
    forget_topics_except(present);
    for (const auto& n : present) load_topic(n);
  }
  sync_delete_markers();
  sync_shutdown_markers();
  sync_preferred_election();
}

void cluster_follower::sync_brokers() {
  auto ids = session_.read_children(kBrokerIdsPath);
  if (!ids) return;
  auto s = session_.current();
  std::map<int32_t, followed_state::broker_entry> next;
  for (const auto& name : *ids) {
    int64_t id = -1;
    if (!parse_int(name, id) || id < 0 || id > INT32_MAX) continue;
    auto r = s->get(broker_znode::path(static_cast<int32_t>(id)), nullptr);
    if (r.code == zk_code::no_node) continue;
    if (!r.ok()) {
      session_.on_zk_error(r.code);
      return;
    }
    auto reg = broker_znode::decode(static_cast<int32_t>(id), r.value.data);
    if (!reg) {
      log::error("zookeeper: ignoring broker {}: {}", id, reg.err().message);
      continue;
    }
    reg->epoch = r.value.stat.czxid;
    next[static_cast<int32_t>(id)] = followed_state::broker_entry{*reg, r.value.stat.czxid};
  }
  state_.brokers = std::move(next);
}

void cluster_follower::sync_controller() {
  bool failed = false;
  auto n = session_.read_watched(controller_znode::path(), &failed);
  if (failed) return;
  if (!n) {
    state_.controller_id = -1;
    listener_->controller_gone();
    return;
  }
  auto id = controller_znode::decode(n->data);
  if (!id) log::error("zookeeper: {}", id.err().message);
  state_.controller_id = id ? *id : -1;
  listener_->controller_seen(n->stat.ephemeral_owner);
}

void cluster_follower::sync_topics() {
  auto names = session_.read_children(kTopicsPath);
  if (!names) return;
  const std::set<std::string> present(names->begin(), names->end());
  forget_topics_except(present);
  for (const auto& n : present)
    if (!state_.topics.contains(n)) load_topic(n);
}

void cluster_follower::load_topic(const std::string& name) {
  bool failed = false;
  auto node = session_.read_watched(topic_znode::path(name), &failed);
  if (failed) return;
  if (!node) {
    state_.topics.erase(name);
    state_.states.erase(name);
    return;
  }
  auto t = topic_znode::decode(name, node->data);
  if (!t) {
    log::error("zookeeper: ignoring topic {}: {}", name, t.err().message);
    return;
  }
  auto existing = state_.topics.find(name);
  const bool is_new = existing == state_.topics.end();
  if (!is_new) t->configs = existing->second.configs;
  const size_t count = t->replicas.size();
  state_.topics[name] = std::move(*t);
  auto& st = state_.states[name];
  const size_t before = st.size();
  st.resize(count);
  if (is_new) load_config(name);
  for (size_t p = 0; p < count; ++p) {
    auto path = partition_state_znode::path(name, static_cast<int32_t>(p));
    if (p >= before || !session_.armed(zk_session_manager::data_watch, path)) load_state(name, static_cast<int32_t>(p));
  }
}

void cluster_follower::load_state(const std::string& topic, int32_t partition) {
  auto it = state_.states.find(topic);
  if (it == state_.states.end() || partition < 0 || static_cast<size_t>(partition) >= it->second.size()) return;
  bool failed = false;
  auto node = session_.read_watched(partition_state_znode::path(topic, partition), &failed);
  if (failed) return;
  it = state_.states.find(topic);
  if (it == state_.states.end() || static_cast<size_t>(partition) >= it->second.size()) return;
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

void cluster_follower::load_config(const std::string& topic) {
  bool failed = false;
  auto node = session_.read_watched(topic_config_znode::path(topic), &failed);
  if (failed) return;
  auto it = state_.topics.find(topic);
  if (it == state_.topics.end()) return;
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

void cluster_follower::sync_delete_markers() {
  auto names = session_.read_children(kDeleteTopicsPath);
  if (!names) return;
  state_.deleting = std::set<std::string, std::less<>>(names->begin(), names->end());
}

void cluster_follower::sync_preferred_election() {
  bool failed = false;
  auto node = session_.read_watched(preferred_replica_election_znode::path(), &failed);
  if (failed) return;
  state_.preferred_elections.clear();
  state_.preferred_election_version = -1;
  if (!node) return;
  state_.preferred_election_version = node->stat.version;
  auto ps = preferred_replica_election_znode::decode(node->data);
  if (!ps) {
    log::error("zookeeper: ignoring {}: {}", preferred_replica_election_znode::path(), ps.err().message);
    return;
  }
  state_.preferred_elections = std::move(*ps);
}

void cluster_follower::sync_shutdown_markers() {
  auto names = session_.read_children(kControlledShutdownPath);
  if (!names) return;
  state_.shutdown_markers.clear();
  for (const auto& n : *names) {
    int64_t id = -1;
    if (parse_int(n, id) && id >= 0 && id <= INT32_MAX) state_.shutdown_markers.insert(static_cast<int32_t>(id));
  }
  listener_->shutdown_markers_read();
  const auto& self = session_.self();
  if (self && state_.shutdown_markers.contains(self->id)) check_own_shutdown_marker();
}

// ---------------------------------------------------------------------------------------------------------
// this broker's controlled shutdown

result<std::shared_future<void>> cluster_follower::request_controlled_shutdown() {
  const auto& self = session_.self();
  if (!session_.registered() || !self) return view_fail(view_errc::not_registered, "not registered with ZooKeeper");
  auto s = session_.current();
  shutdown_requested_ = true;
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future().share();
  shutdown_done_ = done;
  controlled_shutdown_znode::value v{self->id, now_ms(), -1};
  auto r = s->create(controlled_shutdown_znode::path(self->id), controlled_shutdown_znode::encode(v),
                     create_mode::ephemeral);
  if (!r.ok() && r.code != zk_code::node_exists)
    return view_fail(view_errc::unavailable, std::string("cannot request a controlled shutdown: ") + to_string(r.code));
  log::info("zookeeper: broker {} asks the controller for a controlled shutdown", self->id);
  check_own_shutdown_marker();
  return future;
}

void cluster_follower::recreate_shutdown_marker() {
  if (!shutdown_requested_) return;
  const auto& self = session_.self();
  auto s = session_.current();
  controlled_shutdown_znode::value v{self->id, now_ms(), -1};
  s->create(controlled_shutdown_znode::path(self->id), controlled_shutdown_znode::encode(v), create_mode::ephemeral);
}

void cluster_follower::check_own_shutdown_marker() {
  const auto& self = session_.self();
  if (!self || !shutdown_requested_) return;
  bool failed = false;
  auto node = session_.read_watched(controlled_shutdown_znode::path(self->id), &failed);
  if (failed || !node) return;
  auto v = controlled_shutdown_znode::decode(node->data);
  if (v && v->remaining_leaders == 0 && shutdown_done_) {
    log::info("zookeeper: controlled shutdown of broker {} acknowledged by the controller", self->id);
    shutdown_done_->set_value();
    shutdown_done_.reset();
  }
}

// ---------------------------------------------------------------------------------------------------------
// snapshots

void cluster_follower::publish() {
  auto snap = std::make_shared<cluster_snapshot>();
  snap->cluster_id = store_.cluster_id();
  snap->controller_id = state_.controller_id;
  snap->registered = session_.registered();
  for (const auto& [id, b] : state_.brokers) snap->brokers[id] = b.reg;
  snap->topics = state_.topics;
  snap->states = state_.states;
  snap->deleting_topics = state_.deleting;
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

std::shared_ptr<const cluster_snapshot> cluster_follower::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

void cluster_follower::subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) {
  std::lock_guard lock(mutex_);
  subscribers_.push_back(std::move(on_change));
}

}  // namespace sluice::coordination::zk
