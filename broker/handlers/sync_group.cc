// SyncGroup (key 14): the leader hands in the assignment; every member gets its own part.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::sync_group_response;

task<response> sync_group(broker_services& svc, request_context& rc, protocol::sync_group_request& req) {
  response resp;
  if (rc.header.api_version >= 5 && (!req.protocol_type || !req.protocol_name)) {
    // Kafka's handleSyncGroupRequest: from v5 both are mandatory, checked before the group is looked at.
    resp.error_code = error_code::inconsistent_group_protocol;
    co_return resp;
  }
  if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  auto s = svc.groups.shard_for(req.group_id);
  if (!s) {
    resp.error_code = error_code::not_coordinator;
    co_return resp;
  }
  groups::sync_group_request r;
  r.group_id = req.group_id;
  r.generation_id = req.generation_id;
  r.member_id = req.member_id;
  r.group_instance_id = req.group_instance_id;
  r.protocol_type = req.protocol_type;
  r.protocol_name = req.protocol_name;
  for (auto& a : req.assignments) r.assignments.push_back({a.member_id, std::move(a.assignment)});
  auto work = [r = std::move(r)](groups::group_coordinator& c, auto reply) mutable {
    c.sync_group(std::move(r), std::move(reply));
  };
  std::optional<parked_time> parked(std::in_place, rc, svc.clock);  // the rebalance: not work (request quotas)
  auto result = co_await group_call<groups::sync_group_result>(svc.groups, s, std::move(work));
  parked.reset();
  resp.error_code = to_kafka(result.error);
  resp.protocol_type = result.protocol_type;
  resp.protocol_name = result.protocol_name;
  resp.assignment = std::move(result.assignment);
  co_return resp;
}

}  // namespace sluice::broker::handlers
