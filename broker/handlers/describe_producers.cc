// DescribeProducers (key 61, v0, KIP-664): the active producers of partitions led here, from the partition's
// producer state (storage/producer_state.h): id, epoch, last sequence and timestamp, the coordinator epoch of its
// last marker, and the first offset of its open transaction (-1: none). Per partition:
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
#include "broker/call_on.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_name.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_producers_response;

task<response> describe_producers(broker_services& svc, request_context& rc, protocol::describe_producers_request& req) {
  response resp;
  for (const auto& t : req.topics) {
    response::topic_response tr;
    tr.name = t.name;
    auto topic = svc.topics.find(t.name);
    for (int32_t index : t.partition_indexes) {
      response::partition_response pr;
      pr.partition_index = index;
      auto p = partition_of(topic, index);
      if (invalid_topic_name_reason(t.name)) {
        pr.error_code = error_code::invalid_topic_exception;  // Kafka checks the name first
      } else if (!authorized(svc, rc, acl_operation::read, resource_type::topic, t.name)) {
        pr.error_code = error_code::topic_authorization_failed;
      } else if (!p) {
        pr.error_code = missing_partition_error(topic, index);
      } else if (!p->is_leader()) {
        pr.error_code = error_code::not_leader_or_follower;
      } else {
        auto op = call_on(p->strand(), [p] { return p->producers(); });
        auto producers = co_await std::move(op);
        for (const auto& e : producers) {
          response::producer_state ps;
          ps.producer_id = e.producer_id;
          ps.producer_epoch = e.producer_epoch;
          ps.last_sequence = e.last_seq();
          ps.last_timestamp = e.last_timestamp;
          ps.coordinator_epoch = e.coordinator_epoch;
          ps.current_txn_start_offset = e.current_txn_first_offset;
          pr.active_producers.push_back(std::move(ps));
        }
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
