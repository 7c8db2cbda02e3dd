// DeleteGroups (key 42): deletes Empty groups and their offsets (tombstones in __consumer_offsets).
#include <map>
#include <set>

#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::delete_groups_response;

task<response> delete_groups(broker_services& svc, request_context& rc, protocol::delete_groups_request& req) {
  // A group named twice is deleted and answered once (Kafka's coordinator takes the ids as a set); deleting it
  // twice answered GROUP_ID_NOT_FOUND for a group just deleted.
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const auto& id : req.groups_names) {
    if (seen.insert(id).second) ids.push_back(id);
  }
  std::map<std::string, error_code> codes;
  std::map<std::shared_ptr<group_service::shard>, std::vector<std::string>> by_shard;
  for (const auto& id : ids) {
    auto s = svc.groups.shard_for(id);
    if (!authorized(svc, rc, acl_operation::remove, resource_type::group, id)) {
      codes[id] = error_code::group_authorization_failed;
    } else if (!s) {
      codes[id] = error_code::not_coordinator;
    } else {
      by_shard[s].push_back(id);
    }
  }
  for (auto& [s, shard_ids] : by_shard) {
    auto op = [shard_ids](groups::group_coordinator& c) { return c.delete_groups(shard_ids); };
    auto results = co_await group_write_call<std::vector<groups::group_deletion_result>>(svc.groups, s, std::move(op));
    for (const auto& r : results) codes[r.group_id] = to_kafka(r.error);
  }
  response resp;
  for (const auto& id : ids) {
    response::deletable_group_result r;
    r.group_id = id;
    r.error_code = codes[id];
    // v3: the cause beside the code (only written in v3+).
    if (r.error_code == error_code::group_id_not_found) r.error_message = "Group " + id + " not found.";
    else if (r.error_code == error_code::non_empty_group) r.error_message = "Group " + id + " is not empty.";
    else if (r.error_code == error_code::not_coordinator) r.error_message = "This broker is not the coordinator of group " + id + ".";
    resp.results.push_back(std::move(r));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
