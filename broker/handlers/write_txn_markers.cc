// WriteTxnMarkers (key 27, v0-1): a transaction coordinator on another broker asks this broker to write COMMIT or
// ABORT markers into partitions it leads (KIP-98). Each marker is appended with acks=-1 and answered once the ISR
// has it; a marker into __consumer_offsets also completes that producer's pending transactional offsets.
// Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not led here), INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR.
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::write_txn_markers_response;

task<response> write_txn_markers(broker_services& svc, request_context&, protocol::write_txn_markers_request& req) {
  response resp;
  for (const auto& m : req.markers) {
    response::writable_txn_marker_result mr;
    mr.producer_id = m.producer_id;
    for (const auto& t : m.topics) {
      response::writable_txn_marker_topic_result tr;
      tr.name = t.name;
      auto topic = svc.topics.find(t.name);
      for (int32_t index : t.partition_indexes) {
        response::writable_txn_marker_partition_result pr;
        pr.partition_index = index;
        auto p = partition_of(topic, index);
        if (m.producer_id < 0) {
          // No producer: Kafka fails the whole marker with UNKNOWN_SERVER_ERROR (every partition, known or not);
          // nothing is written.
          pr.error_code = error_code::unknown_server_error;
        } else if (!p) {
          pr.error_code = missing_partition_error(topic, index);
        } else if (!p->is_leader()) {
          pr.error_code = error_code::not_leader_or_follower;
        } else {
          auto op = svc.txns.write_marker(p, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch);
          pr.error_code = co_await std::move(op);
        }
        tr.partitions.push_back(std::move(pr));
      }
      mr.topics.push_back(std::move(tr));
    }
    resp.markers.push_back(std::move(mr));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
