// OffsetDelete (key 47, KIP-496): deletes committed offsets of a group for topics it does not consume.
#include <map>
#include <string_view>
#include <utility>

#include "broker/group_service.h"
#include <set>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::offset_delete_response;

task<response> offset_delete(broker_services& svc, request_context& rc, protocol::offset_delete_request& req) {
  response resp;
  if (!authorized(svc, rc, acl_operation::remove, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  auto s = svc.groups.shard_for(req.group_id);
  if (!s) {
    resp.error_code = error_code::not_coordinator;
    co_return resp;
  }
  std::vector<groups::topic_partition> parts;
  std::set<std::string> denied;  // topics without Read: TOPIC_AUTHORIZATION_FAILED
  for (const auto& t : req.topics) {
    if (!authorized(svc, rc, acl_operation::read, resource_type::topic, t.name)) {
      denied.insert(t.name);
      continue;
    }
    auto topic = svc.topics.find(t.name);
    for (const auto& p : t.partitions) {
      if (topic && p.partition_index >= 0 && p.partition_index < static_cast<int32_t>(topic->partitions.size())) {
        parts.push_back({t.name, p.partition_index});
      }
    }
  }
  auto op = [id = req.group_id, parts](groups::group_coordinator& c) { return c.offset_delete(id, parts); };
  auto result = co_await group_write_call<groups::offset_delete_result>(svc.groups, s, std::move(op));
  resp.error_code = to_kafka(result.error);
  if (resp.error_code != error_code::none) co_return resp;
  std::map<std::pair<std::string_view, int32_t>, error_code> outcome;
  for (const auto& r : result.partitions) outcome[{r.tp.topic, r.tp.partition}] = to_kafka(r.error);
  for (const auto& t : req.topics) {
    // Kafka answers an unknown topic before the coordinator (an entry even without partitions); a known topic
    // named without partitions gets no entry.
    if (t.partitions.empty() && svc.topics.find(t.name) && !denied.contains(t.name)) continue;
    response::offset_delete_response_topic out;
    out.name = t.name;
    for (const auto& p : t.partitions) {
      if (denied.contains(t.name)) {
        out.partitions.push_back({p.partition_index, error_code::topic_authorization_failed});
        continue;
      }
      auto it = outcome.find({t.name, p.partition_index});
      out.partitions.push_back({p.partition_index, it == outcome.end() ? error_code::unknown_topic_or_partition : it->second});
    }
    resp.topics.push_back(std::move(out));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
