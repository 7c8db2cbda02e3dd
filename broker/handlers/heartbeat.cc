// Heartbeat (key 12): keeps a member's session alive; tells it of a rebalance in progress.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::heartbeat_response;

task<response> heartbeat(broker_services& svc, request_context& rc, protocol::heartbeat_request& req) {
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
  groups::heartbeat_request r{req.group_id, req.generation_id, req.member_id, req.group_instance_id};
  auto work = [r](groups::group_coordinator& c) { return c.heartbeat(r); };
  auto e = co_await group_run(svc.groups, s, std::move(work));
  resp.error_code = to_kafka(e);
  co_return resp;
}

}  // namespace sluice::broker::handlers
