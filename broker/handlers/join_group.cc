// JoinGroup (key 11): joins a member to its group's rebalance; the answer comes when the join phase ends.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::join_group_response;

task<response> join_group(broker_services& svc, request_context& rc, protocol::join_group_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  resp.member_id = req.member_id;
  if (version < 7) resp.protocol_name = "";
  if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  auto s = svc.groups.shard_for(req.group_id);
  if (!s) {
    resp.error_code = error_code::not_coordinator;
    co_return resp;
  }
  groups::join_group_request r;
  r.group_id = req.group_id;
  r.member_id = req.member_id;
  r.group_instance_id = req.group_instance_id;
  r.client_id = rc.header.client_id.value_or("");
  r.client_host = client_host_of(rc.session.peer);
  r.session_timeout_ms = req.session_timeout_ms;
  r.rebalance_timeout_ms = version >= 1 ? req.rebalance_timeout_ms : req.session_timeout_ms;
  r.protocol_type = req.protocol_type;
  for (auto& p : req.protocols) r.protocols.push_back({p.name, std::move(p.metadata)});
  r.require_known_member_id = version >= 4;  // KIP-394
  r.supports_skip_assignment = version >= 9;
  r.reason = req.reason.value_or("");
  // Named before co_await: GCC 12 destroys lambda temporaries of a co_await full-expression twice.
  auto work = [r = std::move(r)](groups::group_coordinator& c, auto reply) mutable {
    c.join_group(std::move(r), std::move(reply));
  };
  std::optional<parked_time> parked(std::in_place, rc, svc.clock);  // the rebalance: not work (request quotas)
  auto result = co_await group_call<groups::join_group_result>(svc.groups, s, std::move(work));
  parked.reset();
  resp.error_code = to_kafka(result.error);
  resp.generation_id = result.generation_id;
  resp.protocol_type = result.protocol_type;
  // Kafka's JoinGroupResponse(data, version): v0-6 cannot carry null, so "" stands for none; v7+ (nullable) sends a
  // selected protocol named "" as null.
  resp.protocol_name = result.protocol_name.value_or("");
  if (version >= 7 && resp.protocol_name->empty()) resp.protocol_name = std::nullopt;
  resp.leader = result.leader;
  resp.skip_assignment = result.skip_assignment;
  resp.member_id = result.member_id;
  for (auto& m : result.members) resp.members.push_back({m.member_id, m.group_instance_id, std::move(m.metadata)});
  co_return resp;
}

}  // namespace sluice::broker::handlers
