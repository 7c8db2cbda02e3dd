// group_coordinator, the sync phase: SyncGroup, propagation of the leader's assignment, Heartbeat and the
// session deadline it restarts.
#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

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

void group_coordinator::schedule_heartbeat(group& g, member& m) {
  // Kafka's completeAndScheduleNextExpiration: a new member may wait NewMemberJoinTimeoutMs in its first
  // join phase; otherwise the session timeout.
  m.heartbeat_deadline = mono() + (m.is_new ? config_.new_member_join_timeout_ms : m.session_timeout_ms);
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
  } else if (auto invalid = g->validate_member(r.member_id, r.group_instance_id)) {
    fail(*invalid);
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
// Heartbeat

group_error group_coordinator::heartbeat(const heartbeat_request& r) {
  auto err = validate(r.group_id, api::heartbeat);
  if (err == group_error::coordinator_load_in_progress) return group_error::none;  // Kafka answers blindly
  if (err) return *err;
  auto g = get_group(r.group_id);
  if (!g) return group_error::unknown_member_id;
  if (g->is(group_state::dead)) return group_error::coordinator_not_available;
  if (auto invalid = g->validate_member(r.member_id, r.group_instance_id)) return *invalid;
  member* m = g->find(r.member_id);
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

}  // namespace sluice::groups
