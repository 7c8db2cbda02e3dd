// ConsumerGroupDescribe (key 69, KIP-848): epochs, assignor and members (current and target assignments) of
// consumer groups. Unknown and classic groups answer GROUP_ID_NOT_FOUND.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::consumer_group_describe_response;

namespace {

response::assignment to_assignment(broker_services& svc, const groups::partition_map& m) {
  response::assignment a;
  for (const auto& [topic, parts] : m) {
    response::topic_partitions tp;
    tp.topic_id = to_wire(topic);
    auto t = svc.topics.find(topic);
    tp.topic_name = t ? t->name : "";
    tp.partitions.assign(parts.begin(), parts.end());
    a.topic_partitions_.push_back(std::move(tp));
  }
  return a;
}

}  // namespace

task<response> consumer_group_describe(broker_services& svc, request_context& rc,
                                       protocol::consumer_group_describe_request& req) {
  response resp;
  for (const auto& id : req.group_ids) {
    response::described_group out;
    out.group_id = id;
    if (!authorized(svc, rc, acl_operation::describe, resource_type::group, id)) {
      out.error_code = error_code::group_authorization_failed;
      resp.groups.push_back(std::move(out));
      continue;
    }
    auto s = svc.groups.shard_for(id);
    if (!s) {
      out.error_code = id.empty() ? error_code::invalid_group_id : error_code::not_coordinator;
      resp.groups.push_back(std::move(out));
      continue;
    }
    auto work = [id](groups::group_coordinator& c) { return c.describe_consumer_group(id); };
    auto d = co_await group_run(svc.groups, s, std::move(work));
    out.error_code = to_kafka(d.error);
    out.error_message = d.error_message;
    if (d.error != groups::group_error::none) {
      resp.groups.push_back(std::move(out));
      continue;
    }
    out.group_state = d.state;
    out.group_epoch = d.group_epoch;
    out.assignment_epoch = d.assignment_epoch;
    out.assignor_name = d.assignor;
    for (const auto& m : d.members) {
      response::member pm;
      pm.member_id = m.member_id;
      pm.instance_id = m.instance_id;
      pm.rack_id = m.rack_id;
      pm.member_epoch = m.member_epoch;
      pm.client_id = m.client_id;
      pm.client_host = m.client_host;
      pm.subscribed_topic_names = m.subscribed_topic_names;
      pm.subscribed_topic_regex = m.subscribed_topic_regex.value_or("");  // Kafka: "" when none
      pm.assignment_ = to_assignment(svc, m.assigned);
      auto t = d.target.find(m.member_id);
      pm.target_assignment = to_assignment(svc, t == d.target.end() ? groups::partition_map{} : t->second);
      pm.member_type = 1;  // v1: 1 = consumer protocol (0 would be a classic member)
      out.members.push_back(std::move(pm));
    }
    if (req.include_authorized_operations) {
      out.authorized_operations = authorized_operations(svc, rc, resource_type::group, id, group_operations);
    }
    resp.groups.push_back(std::move(out));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
