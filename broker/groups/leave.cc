// group_coordinator, leaving a group: LeaveGroup and the removal of members and pending members.
#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

// ---------------------------------------------------------------------------------------------------
// LeaveGroup, member removal

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
    } else if (auto invalid = g->validate_member(mi.member_id, mi.group_instance_id)) {
      out.members.push_back(item(mi, *invalid));
    } else {
      log::info("groups: member {} leaves group {}", mi.member_id, g->id);
      remove_member_and_update_group(*g, mi.member_id);
      out.members.push_back(item(mi, group_error::none));
    }
  }
  flush();
  return out;
}

}  // namespace sluice::groups
