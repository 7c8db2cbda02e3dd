#include "broker/groups/group_coordinator.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

#include "base/logging.h"
#include "broker/groups/partition_for_group.h"

namespace sluice::groups {

namespace {

std::string random_uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng(), lo = rng();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                     // version 4
  lo = (lo & ~(0xC0ULL << 56)) | (0x80ULL << 56);          // IETF variant
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Kafka's GroupMetadataManager.storeOffsets error mapping of the append result.
group_error map_offset_append_error(group_error e) {
  switch (e) {
    case group_error::unknown_topic_or_partition:
    case group_error::not_enough_replicas:
    case group_error::not_enough_replicas_after_append:
      return group_error::coordinator_not_available;
    case group_error::not_leader_or_follower:
    case group_error::kafka_storage_error:
      return group_error::not_coordinator;
    case group_error::message_too_large:
    case group_error::record_list_too_large:
    case group_error::invalid_fetch_size:
      return group_error::invalid_commit_offset_size;
    default:
      return e;
  }
}

// Kafka's GroupMetadataManager.storeGroup error mapping of the append result.
group_error map_group_append_error(group_error e) {
  switch (e) {
    case group_error::unknown_topic_or_partition:
    case group_error::not_enough_replicas:
    case group_error::not_enough_replicas_after_append:
      return group_error::coordinator_not_available;
    case group_error::not_leader_or_follower:
    case group_error::kafka_storage_error:
      return group_error::not_coordinator;
    case group_error::request_timed_out:
      return group_error::rebalance_in_progress;
    case group_error::message_too_large:
    case group_error::record_list_too_large:
    case group_error::invalid_fetch_size:
      return group_error::unknown_server_error;
    default:
      return e;
  }
}

}  // namespace

std::string_view to_string(group_error e) {
  switch (e) {
    case group_error::unknown_server_error: return "UNKNOWN_SERVER_ERROR";
    case group_error::none: return "NONE";
    case group_error::unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case group_error::invalid_fetch_size: return "INVALID_FETCH_SIZE";
    case group_error::not_leader_or_follower: return "NOT_LEADER_OR_FOLLOWER";
    case group_error::request_timed_out: return "REQUEST_TIMED_OUT";
    case group_error::message_too_large: return "MESSAGE_TOO_LARGE";
    case group_error::offset_metadata_too_large: return "OFFSET_METADATA_TOO_LARGE";
    case group_error::coordinator_load_in_progress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case group_error::coordinator_not_available: return "COORDINATOR_NOT_AVAILABLE";
    case group_error::not_coordinator: return "NOT_COORDINATOR";
    case group_error::record_list_too_large: return "RECORD_LIST_TOO_LARGE";
    case group_error::not_enough_replicas: return "NOT_ENOUGH_REPLICAS";
    case group_error::not_enough_replicas_after_append: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case group_error::illegal_generation: return "ILLEGAL_GENERATION";
    case group_error::inconsistent_group_protocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case group_error::invalid_group_id: return "INVALID_GROUP_ID";
    case group_error::unknown_member_id: return "UNKNOWN_MEMBER_ID";
    case group_error::invalid_session_timeout: return "INVALID_SESSION_TIMEOUT";
    case group_error::rebalance_in_progress: return "REBALANCE_IN_PROGRESS";
    case group_error::invalid_commit_offset_size: return "INVALID_COMMIT_OFFSET_SIZE";
    case group_error::kafka_storage_error: return "KAFKA_STORAGE_ERROR";
    case group_error::non_empty_group: return "NON_EMPTY_GROUP";
    case group_error::group_id_not_found: return "GROUP_ID_NOT_FOUND";
    case group_error::member_id_required: return "MEMBER_ID_REQUIRED";
    case group_error::group_max_size_reached: return "GROUP_MAX_SIZE_REACHED";
    case group_error::fenced_instance_id: return "FENCED_INSTANCE_ID";
    case group_error::group_subscribed_to_topic: return "GROUP_SUBSCRIBED_TO_TOPIC";
    case group_error::unstable_offset_commit: return "UNSTABLE_OFFSET_COMMIT";
  }
  return "UNKNOWN";
}

std::string_view to_string(group_coordinator::load_state s) {
  switch (s) {
    case group_coordinator::load_state::inactive: return "inactive";
    case group_coordinator::load_state::loading: return "loading";
    case group_coordinator::load_state::active: return "active";
  }
  return "inactive";
}

group_coordinator::group_coordinator(int32_t partition, group_config config, const sluice::clock& clock,
                                     group_log& log, std::function<std::string()> uuid)
    : partition_(partition), config_(config), clock_(clock), log_(log),
      uuid_(uuid ? std::move(uuid) : std::function<std::string()>(random_uuid)) {}

group_coordinator::~group_coordinator() = default;

// ---------------------------------------------------------------------------------------------------
// Plumbing

void group_coordinator::flush() {
  if (flushing_) return;  // the outer flush delivers what a nested call queued
  flushing_ = true;
  while (!out_.empty()) {
    auto batch = std::move(out_);
    out_.clear();
    for (auto& f : batch) f();
  }
  flushing_ = false;
}

join_group_result group_coordinator::join_error(const std::string& member_id, group_error e) {
  join_group_result r;
  r.error = e;
  r.member_id = member_id;
  return r;
}

std::optional<group_error> group_coordinator::validate(const std::string& group_id, api a) const {
  // Kafka's isValidGroupId: the offset APIs, DescribeGroups and DeleteGroups accept "" for
  // compatibility; group membership needs a non-empty id.
  bool empty_ok = a == api::offset_commit || a == api::offset_fetch || a == api::describe || a == api::del;
  if (group_id.empty() && !empty_ok) return group_error::invalid_group_id;
  if (state_ == load_state::inactive) return group_error::not_coordinator;
  if (partition_ >= 0 && partition_for_group(group_id, config_.offsets_topic_num_partitions) != partition_) {
    return group_error::not_coordinator;
  }
  if (state_ == load_state::loading) return group_error::coordinator_load_in_progress;
  return std::nullopt;
}

std::shared_ptr<group> group_coordinator::get_group(const std::string& group_id) const {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second;
}

std::shared_ptr<group> group_coordinator::get_or_create(const std::string& group_id, bool create) {
  auto g = get_group(group_id);
  if (!g && create) {
    g = std::make_shared<group>(group_id, wall());
    groups_[group_id] = g;
  }
  return g;
}

const group* group_coordinator::find_group(const std::string& group_id) const {
  return get_group(group_id).get();
}

std::string group_coordinator::new_member_id(const std::string& prefix) { return prefix + "-" + uuid_(); }

void group_coordinator::schedule_heartbeat(group& g, member& m) {
  // Kafka's completeAndScheduleNextExpiration: a new member may wait NewMemberJoinTimeoutMs in its first
  // join phase; otherwise the session timeout.
  m.heartbeat_deadline = mono() + (m.is_new ? config_.new_member_join_timeout_ms : m.session_timeout_ms);
}

// ---------------------------------------------------------------------------------------------------
// Ownership

void group_coordinator::begin_loading() {
  if (state_ == load_state::active) unload();
  state_ = load_state::loading;
  replay_groups_.clear();
  replay_offsets_.clear();
}

void group_coordinator::replay(const bytes& key, const std::optional<bytes>& value) {
  auto k = decode_key(key);
  if (!k) {
    log::warn("groups[{}]: skipping undecodable __consumer_offsets key: {}", partition_, k.err().message);
    return;
  }
  if (auto* ok = std::get_if<offset_commit_key>(&*k)) {
    topic_partition tp{ok->topic, ok->partition};
    if (!value) {
      auto it = replay_offsets_.find(ok->group);
      if (it != replay_offsets_.end()) {
        it->second.erase(tp);
        if (it->second.empty()) replay_offsets_.erase(it);
      }
      return;
    }
    auto v = decode_offset_commit_value(*value);
    if (!v) {
      log::warn("groups[{}]: skipping offset record of group {}: {}", partition_, ok->group, v.err().message);
      return;
    }
    replay_offsets_[ok->group][tp] =
        committed_offset{v->offset, v->leader_epoch, v->metadata, v->commit_timestamp, v->expire_timestamp};
  } else if (auto* gk = std::get_if<group_metadata_key>(&*k)) {
    if (!value) {
      replay_groups_.erase(gk->group);
      return;
    }
    auto v = decode_group_metadata_value(*value);
    if (!v) {
      log::warn("groups[{}]: skipping metadata record of group {}: {}", partition_, gk->group, v.err().message);
      return;
    }
    replay_groups_[gk->group] = std::move(*v);
  }
}

void group_coordinator::finish_loading() {
  groups_.clear();
  int64_t now_wall = wall();
  for (auto& [id, v] : replay_groups_) {
    auto g = std::make_shared<group>(id, v.current_state_timestamp);
    g->generation_id = v.generation;
    g->protocol_type = v.protocol_type;
    g->protocol_name = v.protocol;
    for (auto& rm : v.members) {
      member m;
      m.member_id = rm.member_id;
      m.group_instance_id = rm.group_instance_id;
      m.client_id = rm.client_id;
      m.client_host = rm.client_host;
      m.rebalance_timeout_ms = rm.rebalance_timeout;
      m.session_timeout_ms = rm.session_timeout;
      m.protocol_type = v.protocol_type;
      if (v.protocol) m.protocols.push_back({*v.protocol, rm.subscription});
      m.assignment = rm.assignment;
      g->add(std::move(m), nullptr);
    }
    g->leader_id = v.leader;
    if (g->leader_id && !g->has(*g->leader_id)) {
      g->leader_id = g->members.empty() ? std::nullopt : std::optional<std::string>(g->members.front().member_id);
    }
    g->state = g->members.empty() ? group_state::empty : group_state::stable;
    g->compute_subscribed_topics();
    for (auto& m : g->members) schedule_heartbeat(*g, m);
    groups_[id] = g;
  }
  for (auto& [id, offsets] : replay_offsets_) {
    auto& g = groups_[id];
    if (!g) g = std::make_shared<group>(id, now_wall);  // a "simple" group: offsets only
    g->offsets = std::move(offsets);
  }
  replay_groups_.clear();
  replay_offsets_.clear();
  state_ = load_state::active;
  next_expiration_check_ = mono() + config_.offsets_retention_check_interval_ms;
  log::info("groups[{}]: loaded {} groups", partition_, groups_.size());
}

void group_coordinator::unload() {
  for (auto& [id, g] : groups_) {
    g->transition_to(group_state::dead, wall());
    for (auto& m : g->members) {
      g->invoke_join_callback(m, join_error(m.member_id, group_error::not_coordinator), out_);
      g->invoke_sync_callback(m, sync_group_result{group_error::not_coordinator, {}, {}, {}}, out_);
    }
  }
  groups_.clear();
  replay_groups_.clear();
  replay_offsets_.clear();
  next_expiration_check_.reset();
  state_ = load_state::inactive;
  flush();
}

// ---------------------------------------------------------------------------------------------------
// JoinGroup

void group_coordinator::join_group(join_group_request r, join_group_callback done) {
  if (r.rebalance_timeout_ms < 0) r.rebalance_timeout_ms = r.session_timeout_ms;  // v0
  if (auto e = validate(r.group_id, api::join)) {
    reply(done, join_error(r.member_id, *e));
  } else if (r.session_timeout_ms < config_.min_session_timeout_ms ||
             r.session_timeout_ms > config_.max_session_timeout_ms) {
    reply(done, join_error(r.member_id, group_error::invalid_session_timeout));
  } else {
    bool unknown_member = r.member_id.empty();
    auto g = get_or_create(r.group_id, unknown_member);
    if (!g) {
      reply(done, join_error(r.member_id, group_error::unknown_member_id));
    } else if (!accept_joining_member(*g, r.member_id)) {
      // Kafka: a member over group.max.size is removed and told to give up (KIP-389).
      if (g->has(r.member_id)) {
        remove_member_and_update_group(*g, r.member_id);
      } else {
        g->remove(r.member_id);
      }
      reply(done, join_error("", group_error::group_max_size_reached));
    } else if (unknown_member) {
      do_new_member_join(g, r, done);
    } else {
      do_current_member_join(g, r, done);
    }
    if (g && g->is(group_state::preparing_rebalance)) try_complete_join(*g);
  }
  flush();
}

bool group_coordinator::accept_joining_member(const group& g, const std::string& member_id) const {
  switch (g.state) {
    case group_state::empty:
    case group_state::dead:
      return true;
    case group_state::preparing_rebalance: {
      const member* m = g.find(member_id);
      return (m && m->is_awaiting_join()) || g.num_awaiting_join < config_.max_size;
    }
    case group_state::completing_rebalance:
    case group_state::stable:
      return g.has(member_id) || static_cast<int64_t>(g.size()) < config_.max_size;
  }
  return true;
}

void group_coordinator::do_new_member_join(const std::shared_ptr<group>& g, join_group_request& r,
                                           join_group_callback& cb) {
  if (g->is(group_state::dead)) {
    reply(cb, join_error(r.member_id, group_error::coordinator_not_available));
    return;
  }
  if (!g->supports_protocols(r.protocol_type, r.protocols)) {
    reply(cb, join_error(r.member_id, group_error::inconsistent_group_protocol));
    return;
  }
  std::string id = new_member_id(r.group_instance_id ? *r.group_instance_id : r.client_id);
  if (r.group_instance_id) {
    // KIP-345: a static member never needs the MEMBER_ID_REQUIRED round.
    if (auto old_id = g->static_member_id(*r.group_instance_id)) {
      log::info("groups: static member {} of group {} rejoins with unknown member id; {} replaces {}",
                *r.group_instance_id, g->id, id, *old_id);
      update_static_member_and_rebalance(g, *old_id, id, r, std::move(cb));
    } else {
      add_member_and_rebalance(*g, r, id, std::move(cb));
    }
  } else if (r.require_known_member_id) {
    // KIP-394: remember the id and have the member rejoin with it.
    g->pending_members[id] = mono() + r.session_timeout_ms;
    reply(cb, join_error(id, group_error::member_id_required));
  } else {
    add_member_and_rebalance(*g, r, id, std::move(cb));
  }
}

void group_coordinator::do_current_member_join(const std::shared_ptr<group>& g, join_group_request& r,
                                               join_group_callback& cb) {
  if (g->is(group_state::dead)) {
    reply(cb, join_error(r.member_id, group_error::coordinator_not_available));
    return;
  }
  if (!g->supports_protocols(r.protocol_type, r.protocols)) {
    reply(cb, join_error(r.member_id, group_error::inconsistent_group_protocol));
    return;
  }
  if (g->is_pending(r.member_id)) {
    if (r.group_instance_id) {
      // Pending members are never static; a static member naming one is not who it claims.
      reply(cb, join_error(r.member_id, group_error::unknown_member_id));
      return;
    }
    g->pending_members.erase(r.member_id);
    add_member_and_rebalance(*g, r, r.member_id, std::move(cb));
    return;
  }
  bool instance_unknown = r.group_instance_id && !g->static_member_id(*r.group_instance_id);
  if (g->is_static_member_fenced(r.group_instance_id, r.member_id)) {
    reply(cb, join_error(r.member_id, group_error::fenced_instance_id));
    return;
  }
  member* m = g->find(r.member_id);
  if (!m || instance_unknown) {
    reply(cb, join_error(r.member_id, group_error::unknown_member_id));
    return;
  }
  switch (g->state) {
    case group_state::preparing_rebalance:
      update_member_and_rebalance(*g, *m, r, std::move(cb));
      break;
    case group_state::completing_rebalance:
      if (m->matches(r.protocols)) {
        // Same metadata: it probably missed the JoinGroup answer; repeat it for this generation.
        reply(cb, join_answer(*g, *m, g->is_leader(m->member_id)));
      } else {
        update_member_and_rebalance(*g, *m, r, std::move(cb));
      }
      break;
    case group_state::stable:
      if (g->is_leader(m->member_id) || !m->matches(r.protocols)) {
        // The leader rejoining forces a rebalance (it may have seen metadata changes).
        update_member_and_rebalance(*g, *m, r, std::move(cb));
      } else {
        reply(cb, join_answer(*g, *m, false));
      }
      break;
    case group_state::empty:
    case group_state::dead:
      reply(cb, join_error(r.member_id, group_error::unknown_member_id));
      break;
  }
}

join_group_result group_coordinator::join_answer(const group& g, const member& m, bool with_members) const {
  join_group_result r;
  r.error = group_error::none;
  r.generation_id = g.generation_id;
  r.protocol_type = g.protocol_type;
  r.protocol_name = g.protocol_name;
  r.leader = g.leader_id.value_or("");
  r.member_id = m.member_id;
  if (with_members) r.members = g.current_member_metadata();
  return r;
}

void group_coordinator::add_member_and_rebalance(group& g, join_group_request& r, const std::string& member_id,
                                                 join_group_callback cb) {
  member m;
  m.member_id = member_id;
  m.group_instance_id = r.group_instance_id;
  m.client_id = r.client_id;
  m.client_host = r.client_host;
  m.rebalance_timeout_ms = r.rebalance_timeout_ms;
  m.session_timeout_ms = r.session_timeout_ms;
  m.protocol_type = r.protocol_type;
  m.protocols = r.protocols;
  m.is_new = true;
  // A join during the initial delay of a new group extends the delay (InitialDelayedJoin).
  if (g.is(group_state::preparing_rebalance) && g.generation_id == 0) g.new_member_added = true;
  g.add(std::move(m), std::move(cb));
  schedule_heartbeat(g, g.members.back());
  maybe_prepare_rebalance(g);
}

void group_coordinator::update_member_and_rebalance(group& g, member& m, join_group_request& r,
                                                    join_group_callback cb) {
  auto previous = g.update_member(m, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, std::move(cb));
  // Kafka silently drops a superseded JoinGroup; we answer it so no request waits forever.
  if (previous) reply(previous, join_error(m.member_id, group_error::rebalance_in_progress));
  maybe_prepare_rebalance(g);
}

void group_coordinator::replace_static_member(group& g, const std::string& instance_id,
                                              const std::string& old_id, const std::string& new_id) {
  member* m = g.find(old_id);
  // Fence a duplicate instance that still waits on the old member id.
  g.invoke_join_callback(*m, join_error(old_id, group_error::fenced_instance_id), out_);
  g.invoke_sync_callback(*m, sync_group_result{group_error::fenced_instance_id, {}, {}, {}}, out_);
  m->member_id = new_id;
  if (g.is_leader(old_id)) g.leader_id = new_id;
  if (g.pending_sync_members.erase(old_id)) g.pending_sync_members.insert(new_id);
  g.static_members[instance_id] = new_id;
}

void group_coordinator::update_static_member_and_rebalance(const std::shared_ptr<group>& g,
                                                           const std::string& old_id, const std::string& new_id,
                                                           join_group_request& r, join_group_callback cb) {
  std::string instance_id = *r.group_instance_id;
  std::string current_leader = g->leader_id.value_or("");
  replace_static_member(*g, instance_id, old_id, new_id);
  member* m = g->find(new_id);
  schedule_heartbeat(*g, *m);
  auto old_protocols = m->protocols;
  int32_t old_rebalance_timeout = m->rebalance_timeout_ms;
  int32_t old_session_timeout = m->session_timeout_ms;
  g->update_member(*m, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, std::move(cb));

  switch (g->state) {
    case group_state::stable: {
      if (g->protocol_name && *g->protocol_name == g->select_protocol()) {
        // KIP-345: same protocol, so no rebalance; persist the new member id and hand back the
        // current generation (the member then syncs and gets its stored assignment).
        std::map<std::string, bytes> assignment;
        for (const auto& mm : g->members) assignment[mm.member_id] = mm.assignment;
        bool skip = r.supports_skip_assignment;
        store_group(g, assignment, [this, g, instance_id, old_id, new_id, current_leader, old_protocols,
                                    old_rebalance_timeout, old_session_timeout, skip](group_error e) {
          member* sm = g->find(new_id);
          if (!sm) return;  // removed meanwhile (e.g. left or fenced again)
          if (e != group_error::none) {
            log::warn("groups: failed to persist static member {} of group {}: {}", instance_id, g->id,
                      to_string(e));
            auto cb = g->update_member(*sm, old_protocols, old_rebalance_timeout, old_session_timeout, nullptr);
            replace_static_member(*g, instance_id, new_id, old_id);
            schedule_heartbeat(*g, *g->find(old_id));
            join_group_result jr = join_error("", e);
            jr.generation_id = g->generation_id;
            jr.protocol_type = g->protocol_type;
            jr.protocol_name = g->protocol_name;
            jr.leader = current_leader;
            if (cb) reply(cb, std::move(jr));
            return;
          }
          join_group_result jr;
          jr.member_id = new_id;
          jr.generation_id = g->generation_id;
          jr.protocol_type = g->protocol_type;
          jr.protocol_name = g->protocol_name;
          if (skip) {
            // JoinGroup v9+: tell a static leader it leads but must not run the assignor.
            bool leader = g->is_leader(new_id);
            if (leader) jr.members = g->current_member_metadata();
            jr.leader = g->leader_id.value_or("");
            jr.skip_assignment = leader;
          } else {
            // Older versions: answer with the old leader id so that a rejoining leader does not
            // believe it leads and run a useless assignment.
            jr.leader = current_leader;
          }
          g->invoke_join_callback(*sm, std::move(jr), out_);
        });
      } else {
        maybe_prepare_rebalance(*g);
      }
      break;
    }
    case group_state::completing_rebalance:
      // The old member id may already be in the leader's hands: rebalance so assignments match.
      prepare_rebalance(*g);
      break;
    case group_state::preparing_rebalance:
      break;
    case group_state::empty:
    case group_state::dead:
      log::error("groups: static member {} known in {} group {}", instance_id, to_string(g->state), g->id);
      break;
  }
}

void group_coordinator::maybe_prepare_rebalance(group& g) {
  if (g.is(group_state::stable) || g.is(group_state::completing_rebalance) || g.is(group_state::empty)) {
    prepare_rebalance(g);
  }
}

void group_coordinator::prepare_rebalance(group& g) {
  if (g.is(group_state::completing_rebalance)) {
    reset_and_propagate_assignment_error(g, group_error::rebalance_in_progress);
  }
  g.sync_deadline.reset();
  int64_t rebalance_timeout = g.rebalance_timeout_ms();
  if (g.is(group_state::empty)) {
    // Kafka's InitialDelayedJoin: wait group.initial.rebalance.delay.ms, extended by the same delay
    // while new members keep arriving, up to the rebalance timeout.
    g.initial_join = true;
    g.initial_delay_ms = config_.initial_rebalance_delay_ms;
    g.initial_remaining_ms = std::max<int64_t>(rebalance_timeout - config_.initial_rebalance_delay_ms, 0);
    g.new_member_added = false;
    g.join_deadline = mono() + g.initial_delay_ms;
  } else {
    g.initial_join = false;
    g.join_deadline = mono() + rebalance_timeout;
  }
  g.transition_to(group_state::preparing_rebalance, wall());
  log::info("groups: preparing to rebalance group {} in generation {}", g.id, g.generation_id);
  try_complete_join(g);
}

void group_coordinator::try_complete_join(group& g) {
  if (g.is(group_state::preparing_rebalance) && g.join_deadline && !g.initial_join &&
      g.has_all_members_joined()) {
    complete_join(g);
  }
}

bool group_coordinator::maybe_elect_new_joined_leader(group& g) {
  if (!g.leader_id) return false;
  const member* leader = g.find(*g.leader_id);
  if (leader && leader->is_awaiting_join()) return true;
  for (const auto& m : g.members) {
    if (m.is_awaiting_join()) {
      g.leader_id = m.member_id;
      return true;
    }
  }
  return false;
}

void group_coordinator::complete_join(group& g) {
  g.join_deadline.reset();
  g.initial_join = false;
  // Dynamic members that did not rejoin in time are dropped; static ones stay until their session ends.
  for (const auto& id : g.not_yet_rejoined()) {
    member* m = g.find(id);
    if (m && !m->is_static()) {
      log::info("groups: member {} of group {} did not rejoin in time; removing it", id, g.id);
      g.remove(id);
    }
  }
  if (g.is(group_state::dead)) return;
  if (!maybe_elect_new_joined_leader(g) && !g.members.empty()) {
    // Nobody rejoined: wait another rebalance timeout for the session timeouts to clear them.
    log::error("groups: group {} could not complete rebalance because no members rejoined", g.id);
    g.join_deadline = mono() + std::max<int64_t>(g.rebalance_timeout_ms(), 1);
    return;
  }
  g.init_next_generation(wall());
  if (g.is(group_state::empty)) {
    log::info("groups: group {} with generation {} is now empty", g.id, g.generation_id);
    auto gp = get_group(g.id);
    if (gp) {
      store_group(gp, {}, [id = g.id](group_error e) {
        if (e != group_error::none) log::warn("groups: failed to write empty metadata of group {}: {}", id, to_string(e));
      });
    }
    return;
  }
  log::info("groups: stabilized group {} generation {} with {} members", g.id, g.generation_id, g.size());
  for (auto& m : g.members) {
    g.invoke_join_callback(m, join_answer(g, m, g.is_leader(m.member_id)), out_);
    m.is_new = false;
    schedule_heartbeat(g, m);
    g.pending_sync_members.insert(m.member_id);
  }
  // Kafka's DelayedSync: members that do not sync within the rebalance timeout are removed.
  g.sync_deadline = mono() + g.rebalance_timeout_ms();
}

// ---------------------------------------------------------------------------------------------------
// SyncGroup

void group_coordinator::reset_and_propagate_assignment_error(group& g, group_error e) {
  for (auto& m : g.members) m.assignment.clear();
  propagate_assignment(g, e);
}

void group_coordinator::propagate_assignment(group& g, group_error e) {
  for (auto& m : g.members) {
    sync_group_result r;
    r.error = e;
    if (e == group_error::none) {
      r.protocol_type = g.protocol_type;
      r.protocol_name = g.protocol_name;
      r.assignment = m.assignment;
    }
    if (g.invoke_sync_callback(m, std::move(r), out_)) schedule_heartbeat(g, m);
  }
}

void group_coordinator::sync_group(sync_group_request r, sync_group_callback done) {
  auto err = validate(r.group_id, api::sync);
  if (err == group_error::coordinator_load_in_progress) {
    // The join state is lost while loading: have the member rejoin (Kafka).
    reply(done, sync_group_result{group_error::rebalance_in_progress, {}, {}, {}});
    flush();
    return;
  }
  if (err) {
    reply(done, sync_group_result{*err, {}, {}, {}});
    flush();
    return;
  }
  auto g = get_group(r.group_id);
  auto fail = [&](group_error e) { reply(done, sync_group_result{e, {}, {}, {}}); };
  if (!g) {
    fail(group_error::unknown_member_id);
  } else if (g->is(group_state::dead)) {
    fail(group_error::coordinator_not_available);
  } else if (g->is_static_member_fenced(r.group_instance_id, r.member_id)) {
    fail(group_error::fenced_instance_id);
  } else if (!g->has(r.member_id)) {
    fail(group_error::unknown_member_id);
  } else if (r.generation_id != g->generation_id) {
    fail(group_error::illegal_generation);
  } else if ((r.protocol_type && g->protocol_type != r.protocol_type) ||
             (r.protocol_name && g->protocol_name != r.protocol_name)) {
    fail(group_error::inconsistent_group_protocol);  // v5+
  } else {
    switch (g->state) {
      case group_state::empty:
        fail(group_error::unknown_member_id);
        break;
      case group_state::preparing_rebalance:
        fail(group_error::rebalance_in_progress);
        break;
      case group_state::completing_rebalance: {
        member* m = g->find(r.member_id);
        if (m->awaiting_sync) {
          auto previous = std::move(m->awaiting_sync);
          reply(previous, sync_group_result{group_error::rebalance_in_progress, {}, {}, {}});
        }
        m->awaiting_sync = std::move(done);
        g->pending_sync_members.erase(r.member_id);
        if (g->pending_sync_members.empty()) g->sync_deadline.reset();
        if (g->is_leader(r.member_id)) {
          log::info("groups: assignment received from leader {} of group {} for generation {}", r.member_id,
                    g->id, g->generation_id);
          std::map<std::string, bytes> assignment;
          for (auto& a : r.assignments) assignment[a.member_id] = std::move(a.assignment);
          for (const auto& mm : g->members) assignment.try_emplace(mm.member_id);  // missing: empty
          int32_t generation = g->generation_id;
          store_group(g, assignment, [this, g, generation, assignment](group_error e) {
            // Another join may have moved the group on meanwhile: then do nothing.
            if (!g->is(group_state::completing_rebalance) || g->generation_id != generation) return;
            if (e != group_error::none) {
              reset_and_propagate_assignment_error(*g, e);
              maybe_prepare_rebalance(*g);
            } else {
              for (auto& mm : g->members) {
                auto it = assignment.find(mm.member_id);
                mm.assignment = it == assignment.end() ? bytes{} : it->second;
              }
              propagate_assignment(*g, group_error::none);
              g->transition_to(group_state::stable, wall());
            }
          });
        }
        break;
      }
      case group_state::stable: {
        member* m = g->find(r.member_id);
        g->pending_sync_members.erase(r.member_id);
        if (g->pending_sync_members.empty()) g->sync_deadline.reset();
        reply(done, sync_group_result{group_error::none, g->protocol_type, g->protocol_name, m->assignment});
        schedule_heartbeat(*g, *m);
        break;
      }
      case group_state::dead:
        fail(group_error::coordinator_not_available);
        break;
    }
  }
  flush();
}

// ---------------------------------------------------------------------------------------------------
// Heartbeat, LeaveGroup

group_error group_coordinator::heartbeat(const heartbeat_request& r) {
  auto err = validate(r.group_id, api::heartbeat);
  if (err == group_error::coordinator_load_in_progress) return group_error::none;  // Kafka answers blindly
  if (err) return *err;
  auto g = get_group(r.group_id);
  if (!g) return group_error::unknown_member_id;
  if (g->is(group_state::dead)) return group_error::coordinator_not_available;
  if (g->is_static_member_fenced(r.group_instance_id, r.member_id)) return group_error::fenced_instance_id;
  member* m = g->find(r.member_id);
  if (!m) return group_error::unknown_member_id;
  if (r.generation_id != g->generation_id) return group_error::illegal_generation;
  switch (g->state) {
    case group_state::empty:
      return group_error::unknown_member_id;
    case group_state::completing_rebalance:
    case group_state::stable:
      schedule_heartbeat(*g, *m);
      return group_error::none;
    case group_state::preparing_rebalance:
      schedule_heartbeat(*g, *m);
      return group_error::rebalance_in_progress;
    case group_state::dead:
      return group_error::coordinator_not_available;
  }
  return group_error::none;
}

void group_coordinator::remove_member_and_update_group(group& g, const std::string& member_id) {
  member* m = g.find(member_id);
  if (!m) return;
  // A new member may still wait in JoinGroup: tell it to retry (Kafka).
  g.invoke_join_callback(*m, join_error("", group_error::unknown_member_id), out_);
  g.invoke_sync_callback(*m, sync_group_result{group_error::unknown_member_id, {}, {}, {}}, out_);
  g.remove(member_id);
  switch (g.state) {
    case group_state::dead:
    case group_state::empty:
      break;
    case group_state::stable:
    case group_state::completing_rebalance:
      maybe_prepare_rebalance(g);
      break;
    case group_state::preparing_rebalance:
      try_complete_join(g);
      break;
  }
}

void group_coordinator::remove_pending_member_and_update_group(group& g, const std::string& member_id) {
  g.remove(member_id);
  if (g.is(group_state::preparing_rebalance)) try_complete_join(g);
}

leave_group_result group_coordinator::leave_group(const std::string& group_id,
                                                  const std::vector<member_identity>& members) {
  leave_group_result out;
  if (auto e = validate(group_id, api::leave)) {
    out.error = *e;
    return out;
  }
  auto g = get_group(group_id);
  auto item = [](const member_identity& mi, group_error e) {
    return member_leave_result{mi.member_id, mi.group_instance_id, e};
  };
  if (!g) {
    for (const auto& mi : members) out.members.push_back(item(mi, group_error::unknown_member_id));
    return out;
  }
  if (g->is(group_state::dead)) {
    out.error = group_error::coordinator_not_available;
    return out;
  }
  for (const auto& mi : members) {
    if (mi.member_id.empty()) {
      // KIP-345 admin removal by group instance id.
      auto current = mi.group_instance_id ? g->static_member_id(*mi.group_instance_id) : std::nullopt;
      if (current) {
        log::info("groups: static member {} ({}) leaves group {}", *mi.group_instance_id, *current, g->id);
        remove_member_and_update_group(*g, *current);
        out.members.push_back(item(mi, group_error::none));
      } else {
        out.members.push_back(item(mi, group_error::unknown_member_id));
      }
    } else if (g->is_pending(mi.member_id)) {
      remove_pending_member_and_update_group(*g, mi.member_id);
      out.members.push_back(item(mi, group_error::none));
    } else if (g->is_static_member_fenced(mi.group_instance_id, mi.member_id)) {
      out.members.push_back(item(mi, group_error::fenced_instance_id));
    } else if (g->has(mi.member_id)) {
      log::info("groups: member {} leaves group {}", mi.member_id, g->id);
      remove_member_and_update_group(*g, mi.member_id);
      out.members.push_back(item(mi, group_error::none));
    } else {
      out.members.push_back(item(mi, group_error::unknown_member_id));
    }
  }
  flush();
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Persistence

group_record group_coordinator::group_metadata_record(const group& g,
                                                      const std::map<std::string, bytes>& assignment) const {
  group_metadata_value v;
  v.protocol_type = g.protocol_type.value_or("");
  v.generation = g.generation_id;
  v.protocol = g.protocol_name;
  v.leader = g.leader_id;
  v.current_state_timestamp = g.current_state_timestamp;
  for (const auto& m : g.members) {
    member_metadata_record rm;
    rm.member_id = m.member_id;
    rm.group_instance_id = m.group_instance_id;
    rm.client_id = m.client_id;
    rm.client_host = m.client_host;
    rm.rebalance_timeout = m.rebalance_timeout_ms;
    rm.session_timeout = m.session_timeout_ms;
    rm.subscription = m.metadata_for(g.protocol_name.value_or(""));
    auto it = assignment.find(m.member_id);
    if (it != assignment.end()) rm.assignment = it->second;
    v.members.push_back(std::move(rm));
  }
  return group_record{encode_key(group_metadata_key{g.id}), encode_value(v)};
}

void group_coordinator::store_group(const std::shared_ptr<group>& g, const std::map<std::string, bytes>& assignment,
                                    std::function<void(group_error)> done) {
  std::vector<group_record> records;
  records.push_back(group_metadata_record(*g, assignment));
  std::weak_ptr<int> alive = alive_;
  log_.append(std::move(records), [this, alive, done = std::move(done)](group_error e) {
    if (alive.expired()) return;
    done(map_group_append_error(e));
    flush();
  });
}

void group_coordinator::store_offsets(const std::shared_ptr<group>& g, offset_commit_request& r,
                                      offset_commit_callback cb) {
  int64_t now_wall = wall();
  std::vector<bool> valid(r.partitions.size());
  std::vector<group_record> records;
  std::vector<std::pair<topic_partition, committed_offset>> pending;
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    const auto& p = r.partitions[i];
    std::string metadata = p.metadata.value_or("");
    valid[i] = static_cast<int64_t>(metadata.size()) <= config_.offset_metadata_max_bytes;
    if (!valid[i]) continue;
    committed_offset c;
    c.offset = p.offset;
    c.leader_epoch = p.leader_epoch;
    c.metadata = std::move(metadata);
    c.commit_timestamp = p.commit_timestamp_ms == -1 ? now_wall : p.commit_timestamp_ms;
    if (r.retention_time_ms != -1) c.expire_timestamp = now_wall + r.retention_time_ms;
    records.push_back({encode_key(offset_commit_key{g->id, p.tp.topic, p.tp.partition}),
                       encode_value(offset_commit_value{c.offset, c.leader_epoch, c.metadata,
                                                        c.commit_timestamp, c.expire_timestamp})});
    pending.emplace_back(p.tp, std::move(c));
  }
  auto answer = [valid, tps = [&] {
    std::vector<topic_partition> v;
    for (const auto& p : r.partitions) v.push_back(p.tp);
    return v;
  }()](group_error e) {
    offset_commit_result res;
    for (size_t i = 0; i < tps.size(); ++i) {
      res.partitions.push_back({tps[i], valid[i] ? e : group_error::offset_metadata_too_large});
    }
    return res;
  };
  if (records.empty()) {
    reply(cb, answer(group_error::none));
    return;
  }
  for (const auto& [tp, c] : pending) g->pending_offset_commits[tp] += 1;
  std::weak_ptr<int> alive = alive_;
  log_.append(std::move(records), [this, alive, g, pending = std::move(pending), answer = std::move(answer),
                                   cb = std::move(cb)](group_error e) mutable {
    if (alive.expired()) return;
    for (const auto& [tp, c] : pending) {
      auto it = g->pending_offset_commits.find(tp);
      if (it != g->pending_offset_commits.end() && --it->second <= 0) g->pending_offset_commits.erase(it);
      if (e == group_error::none && !g->is(group_state::dead)) g->offsets[tp] = c;
    }
    reply(cb, answer(map_offset_append_error(e)));
    flush();
  });
}

std::vector<topic_partition> group_coordinator::cleanup_group(
    const std::shared_ptr<group>& g, const std::function<std::vector<topic_partition>(group&)>& selector,
    std::function<void(group_error)> done) {
  auto removed = selector(*g);
  std::vector<group_record> records;
  for (const auto& tp : removed) {
    g->offsets.erase(tp);
    records.push_back({encode_key(offset_commit_key{g->id, tp.topic, tp.partition}), std::nullopt});
  }
  if (g->is(group_state::empty) && !g->has_offsets()) {
    log::info("groups: group {} transitioned to Dead in generation {}", g->id, g->generation_id);
    g->transition_to(group_state::dead, wall());
  }
  if (g->is(group_state::dead)) {
    groups_.erase(g->id);
    // A group that never completed a generation has no metadata record to delete.
    if (g->generation_id > 0) records.push_back({encode_key(group_metadata_key{g->id}), std::nullopt});
  }
  if (records.empty()) {
    done(group_error::none);
    return removed;
  }
  std::weak_ptr<int> alive = alive_;
  log_.append(std::move(records), [this, alive, done = std::move(done)](group_error e) {
    if (alive.expired()) return;
    done(e);
    flush();
  });
  return removed;
}

// ---------------------------------------------------------------------------------------------------
// OffsetCommit, OffsetFetch

void group_coordinator::offset_commit(offset_commit_request r, offset_commit_callback done) {
  auto all = [&](group_error e) {
    offset_commit_result res;
    for (const auto& p : r.partitions) res.partitions.push_back({p.tp, e});
    reply(done, std::move(res));
  };
  if (auto e = validate(r.group_id, api::offset_commit)) {
    all(*e);
    flush();
    return;
  }
  auto g = get_group(r.group_id);
  if (!g) {
    if (r.generation_id < 0) {
      // Not using Kafka's group management ("simple" consumer): the commit creates an Empty group.
      g = get_or_create(r.group_id, true);
    } else {
      // Kafka 4.x (OffsetMetadataManager.validateOffsetCommit): GROUP_ID_NOT_FOUND from v9, which works
      // for classic and KIP-848 groups alike; ILLEGAL_GENERATION before, for compatibility.
      all(r.api_version >= 9 ? group_error::group_id_not_found : group_error::illegal_generation);
      flush();
      return;
    }
  }
  std::optional<group_error> v;
  if (g->is(group_state::dead)) {
    v = group_error::coordinator_not_available;
  } else if (r.generation_id < 0 && g->is(group_state::empty)) {
    // Kafka 4.x ClassicGroup.validateOffsetCommit: generation -1 into an Empty group comes from the admin
    // client or a consumer not using group management; accepted whatever member id or group instance id
    // it carries (a static member cannot exist in an Empty group).
  } else if (r.generation_id >= 0 || !r.member_id.empty() || r.group_instance_id) {
    if (g->is_static_member_fenced(r.group_instance_id, r.member_id)) {
      v = group_error::fenced_instance_id;
    } else if (!g->has(r.member_id)) {
      v = group_error::unknown_member_id;
    } else if (r.generation_id != g->generation_id) {
      v = group_error::illegal_generation;
    }
  } else if (!g->is(group_state::empty)) {
    v = group_error::unknown_member_id;  // only members may commit for a group with members
  }
  if (v) {
    all(*v);
  } else {
    switch (g->state) {
      case group_state::empty:
        store_offsets(g, r, std::move(done));
        break;
      case group_state::stable:
      case group_state::preparing_rebalance: {
        // During PreparingRebalance commits are still allowed: the heartbeat tells of the rebalance.
        schedule_heartbeat(*g, *g->find(r.member_id));
        store_offsets(g, r, std::move(done));
        break;
      }
      case group_state::completing_rebalance:
        all(group_error::rebalance_in_progress);
        break;
      case group_state::dead:
        all(group_error::coordinator_not_available);
        break;
    }
  }
  flush();
}

offset_fetch_result group_coordinator::offset_fetch(const std::string& group_id,
                                                    const std::optional<std::vector<topic_partition>>& partitions,
                                                    bool require_stable) {
  offset_fetch_result out;
  if (auto e = validate(group_id, api::offset_fetch)) {
    out.error = *e;
    return out;
  }
  // Offsets are returned whatever the group's state: it may use Kafka for offsets only.
  auto g = get_group(group_id);
  bool live = g && !g->is(group_state::dead);
  auto entry = [&](const topic_partition& tp) {
    offset_fetch_partition p;
    p.tp = tp;
    if (!live) return p;
    if (require_stable && g->pending_offset_commits.count(tp)) {
      // KIP-447 (OffsetFetch v7+): a commit for it is not yet acknowledged.
      p.error = group_error::unstable_offset_commit;
      return p;
    }
    auto it = g->offsets.find(tp);
    if (it != g->offsets.end()) {
      p.offset = it->second.offset;
      p.leader_epoch = it->second.leader_epoch;
      p.metadata = it->second.metadata;
    }
    return p;
  };
  if (partitions) {
    for (const auto& tp : *partitions) out.partitions.push_back(entry(tp));
  } else if (live) {
    for (const auto& [tp, c] : g->offsets) out.partitions.push_back(entry(tp));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// DescribeGroups, ListGroups, DeleteGroups, OffsetDelete

group_description group_coordinator::describe_group(const std::string& group_id) const {
  group_description d;
  d.group_id = group_id;
  if (auto e = validate(group_id, api::describe)) {
    d.error = *e;
    return d;
  }
  auto g = get_group(group_id);
  if (!g) {
    d.state = "Dead";
    return d;
  }
  d.state = std::string(to_string(g->state));
  d.protocol_type = g->protocol_type.value_or("");
  bool stable = g->is(group_state::stable);
  // Kafka's GroupMetadata.summary: protocol, metadata and assignments only for a Stable group.
  if (stable) d.protocol = g->protocol_name.value_or("");
  for (const auto& m : g->members) {
    described_member dm{m.member_id, m.group_instance_id, m.client_id, m.client_host, {}, {}};
    if (stable) {
      dm.metadata = m.metadata_for(d.protocol);
      dm.assignment = m.assignment;
    }
    d.members.push_back(std::move(dm));
  }
  return d;
}

list_groups_result group_coordinator::list_groups(const std::vector<std::string>& states,
                                                  const std::vector<std::string>& types) const {
  list_groups_result out;
  if (state_ == load_state::inactive) return out;
  if (state_ == load_state::loading) out.error = group_error::coordinator_load_in_progress;
  auto matches = [](const std::vector<std::string>& filter, std::string_view v) {
    if (filter.empty()) return true;
    return std::any_of(filter.begin(), filter.end(), [&](const std::string& f) { return iequals(f, v); });
  };
  for (const auto& [id, g] : groups_) {
    if (g->is(group_state::dead)) continue;
    auto state = to_string(g->state);
    if (!matches(states, state) || !matches(types, "classic")) continue;
    out.groups.push_back({id, g->protocol_type.value_or(""), std::string(state)});
  }
  return out;
}

void group_coordinator::delete_groups(const std::vector<std::string>& group_ids, delete_groups_callback done) {
  auto results = std::make_shared<std::vector<group_deletion_result>>();
  std::vector<std::shared_ptr<group>> eligible;
  for (const auto& id : group_ids) {
    if (auto e = validate(id, api::del)) {
      results->push_back({id, *e});
      continue;
    }
    auto g = get_group(id);
    if (!g || g->is(group_state::dead)) {
      results->push_back({id, group_error::group_id_not_found});
    } else if (g->is(group_state::empty)) {
      results->push_back({id, group_error::none});
      eligible.push_back(g);
    } else {
      results->push_back({id, group_error::non_empty_group});
    }
  }
  auto remaining = std::make_shared<size_t>(eligible.size() + 1);
  auto finish = [this, results, remaining, done = std::move(done)]() mutable {
    if (--*remaining == 0) reply(done, std::move(*results));
  };
  for (auto& g : eligible) {
    g->transition_to(group_state::dead, wall());
    cleanup_group(g, [](group& gg) {
      std::vector<topic_partition> all;
      for (const auto& [tp, c] : gg.offsets) all.push_back(tp);
      return all;
    }, [finish, id = g->id](group_error e) mutable {
      // Kafka answers NONE once the group is gone from memory, whatever the append's outcome.
      if (e != group_error::none) log::warn("groups: tombstones of deleted group {} failed: {}", id, to_string(e));
      finish();
    });
  }
  finish();
  flush();
}

void group_coordinator::offset_delete(const std::string& group_id, const std::vector<topic_partition>& partitions,
                                      offset_delete_callback done) {
  offset_delete_result out;
  if (auto e = validate(group_id, api::offset_delete)) {
    out.error = *e;
    reply(done, std::move(out));
    flush();
    return;
  }
  auto g = get_group(group_id);
  std::vector<topic_partition> eligible;
  if (!g || g->is(group_state::dead)) {
    out.error = group_error::group_id_not_found;
  } else if (g->is(group_state::empty)) {
    eligible = partitions;
  } else if (g->protocol_type == "consumer") {
    for (const auto& tp : partitions) {
      if (g->is_subscribed_to(tp.topic)) {
        out.partitions.push_back({tp, group_error::group_subscribed_to_topic});
      } else {
        eligible.push_back(tp);
      }
    }
  } else {
    out.error = group_error::non_empty_group;
  }
  if (eligible.empty()) {
    reply(done, std::move(out));
    flush();
    return;
  }
  for (const auto& tp : eligible) out.partitions.push_back({tp, group_error::none});
  // Answer in request order.
  std::vector<partition_error> ordered;
  for (const auto& tp : partitions) {
    auto it = std::find_if(out.partitions.begin(), out.partitions.end(), [&](const auto& p) { return p.tp == tp; });
    ordered.push_back(*it);
  }
  out.partitions = std::move(ordered);
  cleanup_group(g, [eligible](group& gg) {
    std::vector<topic_partition> removed;
    for (const auto& tp : eligible) {
      if (gg.offsets.count(tp)) removed.push_back(tp);
    }
    return removed;
  }, [this, out = std::move(out), done = std::move(done)](group_error e) mutable {
    if (e != group_error::none) log::warn("groups: offset tombstones failed: {}", to_string(e));
    reply(done, std::move(out));
  });
  flush();
}

// ---------------------------------------------------------------------------------------------------
// Timers

std::optional<int64_t> group_coordinator::next_deadline() const {
  std::optional<int64_t> best;
  auto consider = [&](std::optional<int64_t> d) {
    if (d && (!best || *d < *best)) best = d;
  };
  if (state_ != load_state::active) return best;
  consider(next_expiration_check_);
  for (const auto& [id, g] : groups_) {
    consider(g->join_deadline);
    consider(g->sync_deadline);
    for (const auto& [mid, d] : g->pending_members) consider(d);
    for (const auto& m : g->members) consider(m.heartbeat_deadline);
  }
  return best;
}

void group_coordinator::on_heartbeat_expired(group& g, const std::string& member_id) {
  member* m = g.find(member_id);
  if (!m) return;
  m->heartbeat_deadline.reset();
  // Kafka's hasSatisfiedHeartbeat: members waiting in a join or sync phase are not expired, unless
  // they are new (their first JoinGroup timed out).
  if (!m->is_new && (m->is_awaiting_join() || m->is_awaiting_sync())) return;
  log::info("groups: member {} in group {} has failed (session timeout), removing it", member_id, g.id);
  remove_member_and_update_group(g, member_id);
}

void group_coordinator::on_sync_expired(group& g) {
  g.sync_deadline.reset();
  if (!g.is(group_state::completing_rebalance) && !g.is(group_state::stable)) return;
  if (g.pending_sync_members.empty()) return;
  auto pending = g.pending_sync_members;
  for (const auto& id : pending) {
    log::info("groups: member {} of group {} did not sync in time, removing it", id, g.id);
    member* m = g.find(id);
    if (m) g.invoke_join_callback(*m, join_error("", group_error::unknown_member_id), out_);
    g.remove(id);
  }
  maybe_prepare_rebalance(g);
}

void group_coordinator::process_group_deadlines(const std::shared_ptr<group>& g, int64_t now) {
  // One expired deadline at a time, earliest first, since each may change the others.
  for (;;) {
    if (g->is(group_state::dead)) return;
    enum class kind { none, pending, heartbeat, join, sync } k = kind::none;
    int64_t when = 0;
    std::string who;
    auto consider = [&](std::optional<int64_t> d, kind kk, const std::string& id) {
      if (d && *d <= now && (k == kind::none || *d < when)) {
        k = kk;
        when = *d;
        who = id;
      }
    };
    for (const auto& [id, d] : g->pending_members) consider(d, kind::pending, id);
    for (const auto& m : g->members) consider(m.heartbeat_deadline, kind::heartbeat, m.member_id);
    consider(g->join_deadline, kind::join, "");
    consider(g->sync_deadline, kind::sync, "");
    switch (k) {
      case kind::none:
        return;
      case kind::pending:
        log::info("groups: pending member {} of group {} removed after session timeout", who, g->id);
        remove_pending_member_and_update_group(*g, who);
        break;
      case kind::heartbeat:
        on_heartbeat_expired(*g, who);
        break;
      case kind::join:
        if (g->initial_join && g->new_member_added && g->initial_remaining_ms != 0) {
          // InitialDelayedJoin: extend while members keep arriving, within the rebalance timeout.
          g->new_member_added = false;
          int64_t delay = std::min<int64_t>(config_.initial_rebalance_delay_ms, g->initial_remaining_ms);
          g->initial_remaining_ms = std::max<int64_t>(g->initial_remaining_ms - g->initial_delay_ms, 0);
          g->initial_delay_ms = delay;
          g->join_deadline = now + delay;
        } else {
          complete_join(*g);
        }
        break;
      case kind::sync:
        on_sync_expired(*g);
        break;
    }
  }
}

std::vector<topic_partition> group_coordinator::expired_offsets(group& g, int64_t now_wall) const {
  // Kafka's GroupMetadata.removeExpiredOffsets (KIP-211).
  auto collect = [&](auto base_timestamp, const std::set<std::string>* subscribed) {
    std::vector<topic_partition> out;
    for (const auto& [tp, c] : g.offsets) {
      if (subscribed && subscribed->count(tp.topic)) continue;
      if (g.pending_offset_commits.count(tp)) continue;
      bool expired = c.expire_timestamp ? now_wall >= *c.expire_timestamp
                                        : now_wall - base_timestamp(c) >= config_.offsets_retention_ms;
      if (expired) out.push_back(tp);
    }
    return out;
  };
  if (g.protocol_type && g.is(group_state::empty)) {
    // No member: the retention runs from when the group became Empty.
    int64_t since = g.current_state_timestamp;
    return collect([since](const committed_offset& c) { return since >= 0 ? since : c.commit_timestamp; }, nullptr);
  }
  if (g.protocol_type == "consumer" && g.subscribed_topics && g.is(group_state::stable)) {
    // Offsets of topics nobody subscribes to any more expire from their commit time.
    return collect([](const committed_offset& c) { return c.commit_timestamp; }, &*g.subscribed_topics);
  }
  if (!g.protocol_type) {
    // A "simple" group: each offset expires from its commit time.
    return collect([](const committed_offset& c) { return c.commit_timestamp; }, nullptr);
  }
  return {};
}

void group_coordinator::expire_offsets() {
  int64_t now_wall = wall();
  std::vector<std::shared_ptr<group>> all;
  for (const auto& [id, g] : groups_) all.push_back(g);
  for (auto& g : all) {
    auto removed = cleanup_group(g, [&](group& gg) { return expired_offsets(gg, now_wall); },
                                 [id = g->id](group_error e) {
                                   if (e != group_error::none) {
                                     log::warn("groups: expiration tombstones of group {} failed: {}", id, to_string(e));
                                   }
                                 });
    if (!removed.empty()) log::info("groups: removed {} expired offsets of group {}", removed.size(), g->id);
  }
}

void group_coordinator::on_timer() {
  if (state_ != load_state::active) return;
  int64_t now = mono();
  std::vector<std::shared_ptr<group>> all;
  for (const auto& [id, g] : groups_) all.push_back(g);
  for (auto& g : all) process_group_deadlines(g, now);
  if (next_expiration_check_ && *next_expiration_check_ <= now) {
    expire_offsets();
    next_expiration_check_ = now + config_.offsets_retention_check_interval_ms;
  }
  flush();
}

}  // namespace sluice::groups
