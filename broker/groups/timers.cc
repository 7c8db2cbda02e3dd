// group_coordinator, time: next_deadline, on_timer, and what each expired deadline does (pending member,
// session, join phase end with InitialDelayedJoin, sync phase end).
#include <algorithm>

#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

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
    if (g->is_consumer()) {
      consider(g->consumer->regex_resolution_due);
      for (const auto& [mid, m] : g->consumer->members) {
        consider(m.session_deadline);
        if (m.state == member_state::unrevoked_partitions) consider(m.revocation_deadline);
      }
    }
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

void group_coordinator::on_timer() {
  if (state_ != load_state::active) return;
  int64_t now = mono();
  std::vector<std::shared_ptr<group>> all;
  for (const auto& [id, g] : groups_) all.push_back(g);
  for (auto& g : all) {
    if (g->is_consumer()) {
      process_consumer_deadlines(g, now);
    } else {
      process_group_deadlines(g, now);
    }
  }
  if (next_expiration_check_ && *next_expiration_check_ <= now) {
    expire_offsets();
    next_expiration_check_ = now + config_.offsets_retention_check_interval_ms;
  }
  flush();
}

}  // namespace sluice::groups
