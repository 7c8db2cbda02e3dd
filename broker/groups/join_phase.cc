// group_coordinator, the join phase: JoinGroup, new and current member joins (KIP-394), static member
// replacement (KIP-345), preparing and completing a rebalance, leader election.
#include <algorithm>

#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

// ---------------------------------------------------------------------------------------------------
// JoinGroup

void group_coordinator::join_group(join_group_request r, join_group_callback done) {
  // v0 has no rebalance timeout: the handler passes the session timeout. From v1 the member's value is kept as
  // sent, -1 included (Kafka: a group's rebalance timeout is the members' largest, so a lone member's -1 ends
  // the join and sync phases at once).
  if (auto e = validate(r.group_id, api::join)) {
    reply(done, join_error(r.member_id, *e));
  } else if (r.session_timeout_ms < config_.min_session_timeout_ms ||
             r.session_timeout_ms > config_.max_session_timeout_ms) {
    reply(done, join_error(r.member_id, group_error::invalid_session_timeout));
  } else if (auto cg = get_group(r.group_id); cg && cg->is_consumer() && !cg->consumer->members.empty()) {
    // A KIP-848 group with members: classic members cannot join it (Kafka without migration of classic members).
    reply(done, join_error(r.member_id, group_error::inconsistent_group_protocol));
  } else {
    if (cg && cg->is_consumer() && !cg->is(group_state::dead)) {
      // An Empty consumer group becomes a classic group again (Kafka 4.0's downgrade of an empty group): its
      // KIP-848 records go; its offsets stay.
      auto records = consumer_group_tombstones(cg->id, *cg->consumer);
      cg->consumer.reset();
      cg->protocol_type.reset();
      cg->subscribed_topics.reset();
      cg->transition_to(group_state::empty, wall());
      write(std::move(records), [](group_error) {});
      log::info("groups: empty consumer group {} converted to a classic group", cg->id);
    }
    bool unknown_member = r.member_id.empty();
    const bool new_group = unknown_member && !get_group(r.group_id);
    auto g = get_or_create(r.group_id, unknown_member);
    // Kafka commits a group it creates here with an empty metadata record, whatever the join's outcome; queued
    // first, it is written before anything the join itself writes.
    if (new_group) store_new_group(g);
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
  if (auto e = g->validate_member(r.member_id, r.group_instance_id)) {
    reply(cb, join_error(r.member_id, *e));
    return;
  }
  member* m = g->find(r.member_id);
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

}  // namespace sluice::groups
