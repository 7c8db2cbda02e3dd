// LeaveGroup (key 13): one member (v0-2) or a batch named by member id or group instance id (v3+, KIP-345).
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::leave_group_response;

task<response> leave_group(broker_services& svc, request_context& rc, protocol::leave_group_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  auto s = svc.groups.shard_for(req.group_id);
  if (!s) {
    resp.error_code = error_code::not_coordinator;
    co_return resp;
  }
  std::vector<groups::member_identity> members;
  if (version <= 2) {
    members.push_back({req.member_id, std::nullopt, ""});
  } else {
    for (const auto& m : req.members) members.push_back({m.member_id, m.group_instance_id, m.reason.value_or("")});
  }
  auto work = [id = req.group_id, members](groups::group_coordinator& c) {
    return c.leave_group(id, members);
  };
  auto result = co_await group_run(svc.groups, s, std::move(work));
  resp.error_code = to_kafka(result.error);
  if (version <= 2) {
    // Kafka's LeaveGroupResponse: a single member's error becomes the top-level one.
    if (resp.error_code == error_code::none && !result.members.empty()) {
      resp.error_code = to_kafka(result.members.front().error);
    }
  } else {
    for (const auto& m : result.members) resp.members.push_back({m.member_id, m.group_instance_id, to_kafka(m.error)});
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
