// ListGroups (key 16): every group of every __consumer_offsets partition; states filter (v4+, KIP-518),
// types filter (v5+, KIP-848: "classic" or "consumer").
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::list_groups_response;

task<response> list_groups(broker_services& svc, request_context& rc, protocol::list_groups_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  std::vector<std::string> states = version >= 4 ? req.states_filter : std::vector<std::string>{};
  std::vector<std::string> types = version >= 5 ? req.types_filter : std::vector<std::string>{};
  // Kafka: Describe on the cluster lists every group, else the groups the principal may describe.
  const bool all_groups = cluster_authorized(svc, rc, acl_operation::describe);
  for (auto& s : svc.groups.shards()) {
    if (!s || !s->part->is_leader()) continue;  // cluster mode: groups coordinated elsewhere
    auto work = [states, types](groups::group_coordinator& c) {
      return c.list_groups(states, types);
    };
    auto r = co_await group_run(svc.groups, s, std::move(work));
    if (auto code = to_kafka(r.error); code != error_code::none && resp.error_code == error_code::none) resp.error_code = code;
    for (auto& g : r.groups)
      if (all_groups || authorized(svc, rc, acl_operation::describe, resource_type::group, g.group_id))
        resp.groups.push_back({g.group_id, g.protocol_type, g.state, g.type});
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
