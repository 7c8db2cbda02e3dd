#include "coordination/zk/zk_controller.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <vector>

#include "base/logging.h"
#include "coordination/replica_assignment.h"
#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

using detail::now_ms;

zk_controller::zk_controller(zk_session_manager& session, cluster_follower& follower)
    : session_(session), follower_(follower), options_(session.options()), rebalance_timer_(session.io()) {}

// ---------------------------------------------------------------------------------------------------------
// election

void zk_controller::try_elect() {
  if (!session_.registered() || is_controller_ || session_.stopped()) return;
  auto s = session_.current();
  if (!s) return;
  const auto& self = session_.self();
  auto& st = follower_.state();
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto e = s->get(controller_epoch_znode::path(), nullptr);
    if (e.code == zk_code::no_node) {
      auto c = s->create(controller_epoch_znode::path(), controller_epoch_znode::encode(0), create_mode::persistent);
      if (!c.ok() && c.code != zk_code::node_exists) return session_.on_zk_error(c.code);
      continue;
    }
    if (!e.ok()) return session_.on_zk_error(e.code);
    auto epoch = controller_epoch_znode::decode(e.value.data);
    if (!epoch) {
      log::error("zookeeper: cannot take part in the controller election: {}", epoch.err().message);
      return;
    }
    size_t failed = 0;
    // Kafka: create /controller and bump /controller_epoch in one multi, conditional on the epoch's version.
    auto rc = s->multi({zk_op::create(controller_znode::path(), controller_znode::encode(self->id, now_ms()),
                                      create_mode::ephemeral),
                        zk_op::set(controller_epoch_znode::path(), controller_epoch_znode::encode(*epoch + 1),
                                   e.value.stat.version)},
                       &failed);
    if (rc == zk_code::ok) {
      is_controller_ = true;
      controller_epoch_ = *epoch + 1;
      controller_epoch_version_ = e.value.stat.version + 1;
      st.controller_id = self->id;
      known_czxid_.clear();
      for (const auto& [id, b] : st.brokers) known_czxid_[id] = b.czxid;
      shutdown_answered_.clear();
      log::info("zookeeper: broker {} is the controller (controller epoch {})", self->id, controller_epoch_.load());
      bool f = false;
      session_.read_watched(controller_znode::path(), &f);
      arm_rebalance_timer();
      reconcile();
      return;
    }
    if (rc == zk_code::node_exists && failed == 0) {
      bool f = false;
      auto n = session_.read_watched(controller_znode::path(), &f);
      if (f) return;
      if (!n) continue;  // gone meanwhile: try again
      auto id = controller_znode::decode(n->data);
      st.controller_id = id ? *id : -1;
      return;
    }
    if (rc == zk_code::bad_version) continue;
    return session_.on_zk_error(rc);
  }
}

void zk_controller::resign() {
  if (!is_controller_) return;
  log::warn("zookeeper: broker {} is no longer the controller", session_.self_id());
  is_controller_ = false;
  rebalance_timer_.cancel();
  known_czxid_.clear();
  shutdown_answered_.clear();
}

void zk_controller::stop() {
  rebalance_timer_.cancel();
  if (is_controller_) log::info("zookeeper: broker {} stops being the controller", session_.self_id());
  is_controller_ = false;
}

void zk_controller::controller_gone() {
  if (is_controller_) resign();
  if (session_.registered()) try_elect();
}

void zk_controller::controller_seen(int64_t owner) {
  if (is_controller_ && (follower_.state().controller_id != session_.self_id() || owner != session_.session_id()))
    resign();
}

void zk_controller::shutdown_markers_read() {
  const auto& markers = follower_.state().shutdown_markers;
  for (auto it = shutdown_answered_.begin(); it != shutdown_answered_.end();)
    it = markers.contains(it->first) ? std::next(it) : shutdown_answered_.erase(it);
}

// ---------------------------------------------------------------------------------------------------------
// partition states

cluster_liveness zk_controller::liveness(const std::set<int32_t>& treat_as_dead) const {
  const auto& st = follower_.state();
  cluster_liveness l;
  for (const auto& [id, b] : st.brokers)
    if (!treat_as_dead.contains(id)) l.live.insert(id);
  for (int32_t id : st.shutdown_markers)
    if (l.live.contains(id)) l.shutting_down.insert(id);
  return l;
}

bool zk_controller::unclean_for(const std::string& topic) const {
  const auto& topics = follower_.state().topics;
  auto it = topics.find(topic);
  if (it != topics.end()) {
    auto c = it->second.configs.find("unclean.leader.election.enable");
    if (c != it->second.configs.end()) return c->second == "true" || c->second == "TRUE" || c->second == "True";
  }
  return options_.unclean_leader_election;
}

void zk_controller::reconcile() {
  if (!is_controller_ || !session_.registered()) return;
  auto& st = follower_.state();
  // Topic deletions first (their partitions need no leader any more).
  for (const auto& t : std::vector<std::string>(st.deleting.begin(), st.deleting.end())) {
    delete_topic_znodes(t);
    if (!is_controller_) return;
  }
  // A broker that re-registered (new czxid) since we last acted lost its state: treat it as failed, then
  // as started (Kafka's "bounced brokers").
  std::set<int32_t> bounced;
  for (const auto& [id, b] : st.brokers) {
    auto k = known_czxid_.find(id);
    if (k != known_czxid_.end() && k->second != b.czxid) bounced.insert(id);
  }
  std::vector<cluster_liveness> passes;
  if (!bounced.empty()) passes.push_back(liveness(bounced));
  passes.push_back(liveness());
  const int32_t epoch = controller_epoch_;
  for (const auto& live : passes) {
    for (const auto& [name, topic] : st.topics) {
      if (st.deleting.contains(name)) continue;
      auto& states = st.states[name];
      if (states.size() < topic.replicas.size()) states.resize(topic.replicas.size());
      const bool unclean = unclean_for(name);
      for (size_t p = 0; p < topic.replicas.size(); ++p) {
        for (int attempt = 0; attempt < 3; ++attempt) {
          const partition_state current = st.states[name][p];
          auto next = current.version < 0 ? initial_state(topic.replicas[p], live, epoch)
                                          : next_state(topic.replicas[p], current, live, unclean, epoch);
          if (!next) break;
          if (write_state(name, static_cast<int32_t>(p), *next)) break;
          if (!is_controller_) return;
          follower_.load_state(name, static_cast<int32_t>(p));  // re-read just before deciding again
        }
      }
    }
  }
  known_czxid_.clear();
  for (const auto& [id, b] : st.brokers) known_czxid_[id] = b.czxid;
  complete_reassignments();
  if (!is_controller_) return;
  handle_preferred_elections();
  if (!is_controller_) return;
  answer_shutdowns();
}

bool zk_controller::write_state(const std::string& topic, int32_t partition, const partition_state& next) {
  auto s = session_.current();
  if (!s) return false;
  const std::string path = partition_state_znode::path(topic, partition);
  std::vector<zk_op> ops{zk_op::check(controller_epoch_znode::path(), controller_epoch_version_)};
  if (next.version < 0) {
    for (const auto& parent : {topic_znode::partitions_path(topic), partition_state_znode::partition_path(topic, partition)}) {
      auto c = s->create(parent, "", create_mode::persistent);
      if (c.code == zk_code::no_node) return false;  // the topic is gone
      if (!c.ok() && c.code != zk_code::node_exists) {
        session_.on_zk_error(c.code);
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
    auto& states = follower_.state().states;
    auto it = states.find(topic);
    if (it != states.end() && static_cast<size_t>(partition) < it->second.size())
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
  session_.on_zk_error(rc);
  return false;
}

// ---------------------------------------------------------------------------------------------------------
// topic deletion, controlled shutdown, preferred leaders

void zk_controller::delete_topic_znodes(const std::string& topic) {
  auto s = session_.current();
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
  if (rc != zk_code::ok) return session_.on_zk_error(rc);
  log::info("zookeeper: controller: deleted topic {}", topic);
  auto& st = follower_.state();
  st.topics.erase(topic);
  st.states.erase(topic);
  st.deleting.erase(topic);
}

void zk_controller::answer_shutdowns() {
  auto s = session_.current();
  if (!s) return;
  const auto& st = follower_.state();
  for (int32_t id : st.shutdown_markers) {
    if (!st.brokers.contains(id)) continue;
    int32_t remaining = 0;
    for (const auto& [name, topic] : st.topics) {
      auto states = st.states.find(name);
      if (states == st.states.end()) continue;
      for (size_t p = 0; p < topic.replicas.size() && p < states->second.size(); ++p)
        if (states->second[p].leader == id && topic.replicas[p].size() > 1) ++remaining;
    }
    auto done = shutdown_answered_.find(id);
    if (done != shutdown_answered_.end() && done->second == remaining) continue;
    controlled_shutdown_znode::value v{id, now_ms(), remaining};
    auto r = s->set(controlled_shutdown_znode::path(id), controlled_shutdown_znode::encode(v), -1);
    if (r.ok()) {
      shutdown_answered_[id] = remaining;
      log::info("zookeeper: controller: controlled shutdown of broker {}: {} leaderships remain", id, remaining);
    } else if (r.code != zk_code::no_node) {
      session_.on_zk_error(r.code);
    }
  }
}

void zk_controller::handle_preferred_elections() {
  auto& st = follower_.state();
  for (int round = 0; round < 5 && st.preferred_election_version >= 0; ++round) {
    auto s = session_.current();
    if (!s) return;
    const auto requested = st.preferred_elections;
    const int32_t version = st.preferred_election_version;
    const auto live = liveness();
    for (const auto& [topic, partition] : requested) {
      if (st.deleting.contains(topic)) continue;
      follower_.load_topic(topic);  // the request reordered the assignment just before: read it fresh
      auto t = st.topics.find(topic);
      if (t == st.topics.end() || partition >= t->second.partition_count()) {
        log::warn("zookeeper: controller: preferred replica election of {}-{}: no such partition", topic, partition);
        continue;
      }
      const auto& replicas = t->second.replicas[static_cast<size_t>(partition)];
      for (int attempt = 0; attempt < 3; ++attempt) {
        auto states = st.states.find(topic);
        if (states == st.states.end() || static_cast<size_t>(partition) >= states->second.size()) break;
        const partition_state current = states->second[static_cast<size_t>(partition)];
        auto next = preferred_state(replicas, current, live, controller_epoch_);
        if (!next) {
          if (!replicas.empty() && current.leader != replicas.front())
            log::warn("zookeeper: controller: preferred replica election of {}-{}: broker {} is not alive or not in "
                      "the ISR [{}]; leader stays {}", topic, partition, replicas.front(), fmt::join(current.isr, ","),
                      current.leader);
          break;
        }
        if (write_state(topic, partition, *next)) break;
        if (!is_controller_) return;
        follower_.load_state(topic, partition);  // re-read just before deciding again
      }
    }
    // Done with what was read; deleted on that version (Kafka deletes the znode once the election is handled).
    auto rc = s->remove(preferred_replica_election_znode::path(), version);
    if (rc == zk_code::ok || rc == zk_code::no_node) {
      st.preferred_elections.clear();
      st.preferred_election_version = -1;
      return;
    }
    if (rc != zk_code::bad_version) return session_.on_zk_error(rc);
    follower_.sync_preferred_election();  // more partitions were added meanwhile
  }
}

void zk_controller::arm_rebalance_timer() {
  if (!options_.auto_leader_rebalance) return;
  rebalance_timer_.expires_after(std::chrono::milliseconds(options_.leader_imbalance_check_interval_ms));
  rebalance_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || session_.stopped() || !is_controller_) return;
    rebalance_preferred_leaders();
    follower_.publish();
    arm_rebalance_timer();
  });
}

void zk_controller::rebalance_preferred_leaders() {
  const auto& st = follower_.state();
  std::map<std::string, std::vector<std::vector<int32_t>>, std::less<>> assignments;
  for (const auto& [name, t] : st.topics)
    if (!st.deleting.contains(name)) assignments[name] = t.replicas;
  auto imbalanced = imbalanced_brokers(assignments, st.states, options_.leader_imbalance_per_broker_percentage);
  if (imbalanced.empty()) return;
  const auto live = liveness();
  for (const auto& [name, replicas] : assignments) {
    for (size_t p = 0; p < replicas.size(); ++p) {
      if (replicas[p].empty() || !imbalanced.contains(replicas[p].front())) continue;
      for (int attempt = 0; attempt < 2; ++attempt) {
        auto states = st.states.find(name);
        if (states == st.states.end() || p >= states->second.size()) break;
        auto next = preferred_state(replicas[p], states->second[p], live, controller_epoch_);
        if (!next) break;
        if (write_state(name, static_cast<int32_t>(p), *next)) break;
        if (!is_controller_) return;
        follower_.load_state(name, static_cast<int32_t>(p));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// reassignments (KIP-455) and elections (KIP-183, KIP-460)

bool zk_controller::write_assignment(const std::string& topic, const std::function<void(topic_assignment&)>& change) {
  auto s = session_.current();
  if (!s) return false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto node = s->get(topic_znode::path(topic), nullptr);
    if (node.code == zk_code::no_node) return false;
    if (!node.ok()) {
      session_.on_zk_error(node.code);
      return false;
    }
    auto t = topic_znode::decode(topic, node.value.data);
    if (!t) {
      log::error("zookeeper: controller: cannot change topic {}: {}", topic, t.err().message);
      return false;
    }
    change(*t);
    size_t failed = 0;
    auto rc = s->multi({zk_op::check(controller_epoch_znode::path(), controller_epoch_version_),
                        zk_op::set(topic_znode::path(topic), topic_znode::encode(*t), node.value.stat.version)},
                       &failed);
    if (rc == zk_code::ok) {
      auto& topics = follower_.state().topics;
      if (auto it = topics.find(topic); it != topics.end()) {
        t->configs = it->second.configs;
        it->second = std::move(*t);
      }
      return true;
    }
    if (failed == 0 && (rc == zk_code::bad_version || rc == zk_code::no_node)) {
      log::warn("zookeeper: /controller_epoch moved on: another broker is the controller");
      resign();
      return false;
    }
    if (rc == zk_code::bad_version) continue;  // the topic changed meanwhile (partitions added): read again
    if (rc != zk_code::no_node) session_.on_zk_error(rc);
    return false;
  }
  return false;
}

bool zk_controller::write_state_for_replicas(const std::string& topic, int32_t partition,
                                             const std::vector<int32_t>& replicas) {
  auto& st = follower_.state();
  const auto live = liveness();
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto* known = st.state(topic, partition);
    if (known == nullptr || known->version < 0) return true;
    const partition_state current = *known;
    if (write_state(topic, partition, state_for_replicas(replicas, current, live, controller_epoch_))) return true;
    if (!is_controller_) return false;
    follower_.load_state(topic, partition);
  }
  return false;
}

bool zk_controller::finish_reassignment(const std::string& topic, int32_t partition, const std::vector<int32_t>& replicas) {
  if (!write_state_for_replicas(topic, partition, replicas)) return false;
  const bool written = write_assignment(topic, [&](topic_assignment& t) {
    if (partition >= t.partition_count()) return;
    t.replicas[static_cast<size_t>(partition)] = replicas;
    t.adding_replicas.erase(partition);
    t.removing_replicas.erase(partition);
  });
  if (written)
    log::info("zookeeper: controller: reassignment of {}-{} done: replicas [{}]", topic, partition, fmt::join(replicas, ","));
  return written;
}

void zk_controller::complete_reassignments() {
  const auto& st = follower_.state();
  std::vector<std::pair<std::string, int32_t>> due;
  for (const auto& [name, t] : st.topics) {
    if (st.deleting.contains(name)) continue;
    std::set<int32_t> moving;
    for (const auto& [p, ids] : t.adding_replicas) moving.insert(p);
    for (const auto& [p, ids] : t.removing_replicas) moving.insert(p);
    for (int32_t p : moving) {
      const auto* state = st.state(name, p);
      if (state == nullptr || state->version < 0) continue;
      const auto target = t.target_replicas(p);
      const bool caught_up = !target.empty() && std::all_of(target.begin(), target.end(), [&](int32_t b) {
        return std::find(state->isr.begin(), state->isr.end(), b) != state->isr.end();
      });
      if (caught_up) due.emplace_back(name, p);
    }
  }
  for (const auto& [name, p] : due) {
    auto t = follower_.state().topics.find(name);
    if (t == follower_.state().topics.end()) continue;
    const auto target = t->second.target_replicas(p);
    if (!finish_reassignment(name, p, target) && !is_controller_) return;
  }
}

partition_outcome zk_controller::reassign(const reassignment_request& r, bool allow_rf_change) {
  partition_outcome out{r.topic, r.partition, admin_outcome::ok, {}};
  auto fail = [&](admin_outcome o, std::string message) {
    out.outcome = o;
    out.message = std::move(message);
    return out;
  };
  auto& st = follower_.state();
  auto t = st.topics.find(r.topic);
  if (t == st.topics.end() || st.deleting.contains(r.topic)) return unknown_reassignment_partition(r.topic, r.partition, false);
  if (r.partition < 0 || r.partition >= t->second.partition_count())
    return unknown_reassignment_partition(r.topic, r.partition, true);
  const auto& a = t->second;
  const auto current = a.replicas[static_cast<size_t>(r.partition)];
  if (!r.target) {
    if (!a.reassigning(r.partition))
      return fail(admin_outcome::no_reassignment, {});  // Kafka sends no message with it
    const auto original = a.original_replicas(r.partition);
    if (!finish_reassignment(r.topic, r.partition, original))
      return fail(admin_outcome::invalid_assignment, "The reassignment could not be cancelled; try again.");
    log::info("zookeeper: controller: reassignment of {}-{} cancelled: replicas [{}]", r.topic, r.partition,
              fmt::join(original, ","));
    return out;
  }
  const auto& target = *r.target;
  const auto original = a.original_replicas(r.partition);
  if (auto bad = check_reassignment_target(target, [&](int32_t b) { return st.brokers.contains(b); }, original.size(),
                                           allow_rf_change))
    return fail(bad->first, bad->second);
  const auto plan = plan_reassignment(original, target);
  auto listed = [&](const std::map<int32_t, std::vector<int32_t>>& m) {
    auto it = m.find(r.partition);
    return it == m.end() ? std::vector<int32_t>{} : it->second;
  };
  if (plan.replicas == current && plan.adding == listed(a.adding_replicas) && plan.removing == listed(a.removing_replicas))
    return out;  // already there, or already moving there
  if (!write_assignment(r.topic, [&](topic_assignment& w) {
        if (r.partition >= w.partition_count()) return;
        w.replicas[static_cast<size_t>(r.partition)] = plan.replicas;
        if (plan.adding.empty()) w.adding_replicas.erase(r.partition);
        else w.adding_replicas[r.partition] = plan.adding;
        if (plan.removing.empty()) w.removing_replicas.erase(r.partition);
        else w.removing_replicas[r.partition] = plan.removing;
      }))
    return fail(admin_outcome::invalid_assignment, "The reassignment could not be stored; try again.");
  log::info("zookeeper: controller: reassignment of {}-{} to [{}]: replicas [{}], adding [{}], removing [{}]", r.topic,
            r.partition, fmt::join(target, ","), fmt::join(plan.replicas, ","), fmt::join(plan.adding, ","),
            fmt::join(plan.removing, ","));
  // The leader learns the new replica set through a new leader epoch; replicas an earlier reassignment was adding
  // and this one drops leave the ISR.
  write_state_for_replicas(r.topic, r.partition, plan.replicas);
  return out;
}

result<std::vector<partition_outcome>> zk_controller::alter_reassignments(const std::vector<reassignment_request>& requests,
                                                                          bool allow_rf_change) {
  if (!is_controller_ || !session_.registered())
    return error{view_errc::not_controller, "This is not the correct controller for this cluster."};
  std::vector<partition_outcome> out;
  for (const auto& r : requests) {
    out.push_back(reassign(r, allow_rf_change));
    if (!is_controller_) return error{view_errc::not_controller, "This broker stopped being the controller."};
  }
  complete_reassignments();  // a target already in the ISR (a shrink, a reorder) is done at once
  return out;
}

partition_outcome zk_controller::elect(const std::string& topic, int32_t partition, bool unclean, const cluster_liveness& live) {
  partition_outcome out{topic, partition, admin_outcome::ok, {}};
  auto fail = [&](admin_outcome o, std::string message) {
    out.outcome = o;
    out.message = std::move(message);
    return out;
  };
  auto& st = follower_.state();
  auto t = st.topics.find(topic);
  if (t == st.topics.end() || st.deleting.contains(topic)) return unknown_election_partition(topic, partition, false);
  if (partition < 0 || partition >= t->second.partition_count()) return unknown_election_partition(topic, partition, true);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto& replicas = t->second.replicas[static_cast<size_t>(partition)];
    const auto* known = st.state(topic, partition);
    if (known == nullptr || known->version < 0) return fail(admin_outcome::no_eligible_leader, "The partition has no state yet.");
    const partition_state current = *known;
    std::optional<partition_state> next;
    if (unclean) {
      if (current.leader >= 0 && live.live.contains(current.leader))
        return election_not_needed(topic, partition);
      next = unclean_state(replicas, current, live, controller_epoch_);
      if (!next) return fail(admin_outcome::no_eligible_leader, "Eligible topic partition leaders are not available.");
    } else {
      if (!replicas.empty() && current.leader == replicas.front())
        return election_not_needed(topic, partition);
      next = preferred_state(replicas, current, live, controller_epoch_);
      if (!next) return fail(admin_outcome::preferred_not_available, "The preferred leader was not available.");
    }
    if (write_state(topic, partition, *next)) return out;
    if (!is_controller_) break;
    follower_.load_state(topic, partition);
  }
  return fail(admin_outcome::no_eligible_leader, "The election could not be stored; try again.");
}

result<std::vector<partition_outcome>> zk_controller::elect_leaders(
    bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) {
  if (!is_controller_ || !session_.registered())
    return error{view_errc::not_controller, "This is not the correct controller for this cluster."};
  const auto live = liveness();
  std::vector<partition_outcome> out;
  if (partitions) {
    for (const auto& [topic, p] : *partitions) out.push_back(elect(topic, p, unclean, live));
  } else {
    // Every partition; only those an election was needed for are answered (Kafka's electAll).
    std::vector<std::pair<std::string, int32_t>> all;
    for (const auto& [name, t] : follower_.state().topics)
      if (!follower_.state().deleting.contains(name))
        for (int32_t p = 0; p < t.partition_count(); ++p) all.emplace_back(name, p);
    for (const auto& [topic, p] : all) {
      auto o = elect(topic, p, unclean, live);
      if (o.outcome != admin_outcome::election_not_needed) out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace sluice::coordination::zk
