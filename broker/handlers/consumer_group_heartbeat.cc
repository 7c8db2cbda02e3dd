// ConsumerGroupHeartbeat (key 68, KIP-848): a member of a consumer group joins, heartbeats and leaves; the
// coordinator answers its epoch and, when it changed, its assignment. Answers after the group's records are
// committed to __consumer_offsets.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::consumer_group_heartbeat_response;

task<response> consumer_group_heartbeat(broker_services& svc, request_context& rc,
                                        protocol::consumer_group_heartbeat_request& req) {
  response resp;
  if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  // Kafka also needs DESCRIBE on every subscribed topic; a denied one is TOPIC_AUTHORIZATION_FAILED.
  if (req.subscribed_topic_names) {
    for (const auto& t : *req.subscribed_topic_names) {
      if (!authorized(svc, rc, acl_operation::describe, resource_type::topic, t)) {
        resp.error_code = error_code::topic_authorization_failed;
        co_return resp;
      }
    }
  }
  auto s = svc.groups.shard_for(req.group_id);
  if (!s) {
    resp.error_code = req.group_id.empty() ? error_code::invalid_request : error_code::not_coordinator;
    co_return resp;
  }
  groups::consumer_heartbeat_request r;
  r.group_id = req.group_id;
  r.member_id = req.member_id;
  r.member_epoch = req.member_epoch;
  r.instance_id = req.instance_id;
  r.rack_id = req.rack_id;
  r.rebalance_timeout_ms = req.rebalance_timeout_ms;
  r.subscribed_topic_names = req.subscribed_topic_names;
  r.subscribed_topic_regex = req.subscribed_topic_regex;
  r.server_assignor = req.server_assignor;
  if (req.topic_partitions_) {
    r.owned.emplace();
    for (const auto& tp : *req.topic_partitions_) {
      (*r.owned)[from_wire(tp.topic_id)].insert(tp.partitions.begin(), tp.partitions.end());
    }
  }
  r.client_id = rc.header.client_id.value_or("");
  r.client_host = client_host_of(rc.session.peer);
  r.api_version = rc.header.api_version;
  auto op = [r = std::move(r)](groups::group_coordinator& c) mutable {
    return c.consumer_group_heartbeat(std::move(r));
  };
  auto result = co_await group_write_call<groups::consumer_heartbeat_result>(svc.groups, s, std::move(op));
  resp.error_code = to_kafka(result.error);
  resp.error_message = result.error_message;
  if (result.error != groups::group_error::none) co_return resp;  // Kafka: only the error on failure
  resp.member_id = result.member_id;
  resp.member_epoch = result.member_epoch;
  resp.heartbeat_interval_ms = result.heartbeat_interval_ms;
  if (result.assignment) {
    resp.assignment_.emplace();
    for (const auto& [topic, parts] : *result.assignment) {
      response::topic_partitions tp;
      tp.topic_id = to_wire(topic);
      tp.partitions.assign(parts.begin(), parts.end());
      resp.assignment_->topic_partitions_.push_back(std::move(tp));
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
