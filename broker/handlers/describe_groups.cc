// DescribeGroups (key 15): state, protocol and members of each group (unknown groups: "Dead").
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_groups_response;

task<response> describe_groups(broker_services& svc, request_context& rc, protocol::describe_groups_request& req) {
  response resp;
  for (const auto& id : req.groups) {
    response::described_group out;
    out.group_id = id;
    auto s = svc.groups.shard_for(id);
    if (!authorized(svc, rc, acl_operation::describe, resource_type::group, id)) {
      out.error_code = error_code::group_authorization_failed;
      resp.groups.push_back(std::move(out));
      continue;
    }
    if (!s) {
      out.error_code = error_code::not_coordinator;
      resp.groups.push_back(std::move(out));
      continue;
    }
    auto work = [id](groups::group_coordinator& c) { return c.describe_group(id); };
    auto d = co_await group_run(svc.groups, s, std::move(work));
    out.error_code = to_kafka(d.error);
    // KIP-1043 (v6): a group that does not exist is GROUP_ID_NOT_FOUND, not an empty "Dead" group.
    if (rc.header.api_version >= 6 && out.error_code == error_code::none && d.state == "Dead") {
      out.error_code = error_code::group_id_not_found;
      out.error_message = "Group " + id + " not found.";
      out.group_state = "Dead";
      resp.groups.push_back(std::move(out));
      continue;
    }
    out.group_state = d.state;
    out.protocol_type = d.protocol_type;
    out.protocol_data = d.protocol;
    // Kafka fills the operations of the groups it answered without an error (v3+, when asked).
    if (req.include_authorized_operations && out.error_code == error_code::none) out.authorized_operations = authorized_operations(svc, rc, resource_type::group, id, group_operations);
    for (auto& m : d.members) {
      out.members.push_back({m.member_id, m.group_instance_id, m.client_id, m.client_host, std::move(m.metadata),
                             std::move(m.assignment)});
    }
    resp.groups.push_back(std::move(out));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
