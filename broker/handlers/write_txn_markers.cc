// WriteTxnMarkers (key 27, v0-1): a transaction coordinator on another broker asks this broker to write COMMIT or
// ABORT markers into partitions it leads (KIP-98). Each marker is appended with acks=-1 and answered once the ISR
// has it; a marker into __consumer_offsets also completes that producer's pending transactional offsets.
// Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not led here), INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR.
#include <map>
#include <utility>

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::write_txn_markers_response;

task<response> write_txn_markers(broker_services& svc, request_context&, protocol::write_txn_markers_request& req) {
  // Kafka keeps the outcome in a map by producer id, then by topic-partition: markers of the same producer are
  // answered as one, a partition named twice once (the last outcome), and a topic or marker without partitions
  // not at all. A partition this broker does not have is UNKNOWN_TOPIC_OR_PARTITION.
  std::vector<int64_t> producers;  // in the order first named
  std::map<int64_t, std::map<std::pair<std::string, int32_t>, error_code>> outcome;
  auto entry = [&](int64_t producer) -> auto& {
    auto [it, fresh] = outcome.try_emplace(producer);
    if (fresh) producers.push_back(producer);
    return it->second;
  };
  bool whole_request_failed = false;
  for (const auto& m : req.markers) {
    bool any_here = false;
    for (const auto& t : m.topics) {
      auto topic = svc.topics.find(t.name);
      for (int32_t index : t.partition_indexes) any_here = any_here || partition_of(topic, index) != nullptr;
    }
    if (!any_here) {
      for (const auto& t : m.topics)
        for (int32_t index : t.partition_indexes) entry(m.producer_id)[{t.name, index}] = error_code::unknown_topic_or_partition;
      continue;
    }
    if (m.producer_id >= 0 && m.producer_epoch < 0) {
      // A marker of a producer without an epoch: Kafka's append throws in the request thread and the whole
      // request is answered UNKNOWN_SERVER_ERROR (below); nothing more is written.
      whole_request_failed = true;
      break;
    }
    if (m.producer_id < 0) {
      // No producer: the append of the marker fails as a whole, and its outcome replaces what this producer id
      // had: every partition of the marker, here or not, UNKNOWN_SERVER_ERROR; nothing is written.
      auto& e = entry(m.producer_id);
      e.clear();
      for (const auto& t : m.topics)
        for (int32_t index : t.partition_indexes) e[{t.name, index}] = error_code::unknown_server_error;
      continue;
    }
    for (const auto& t : m.topics) {
      auto topic = svc.topics.find(t.name);
      for (int32_t index : t.partition_indexes) {
        auto p = partition_of(topic, index);
        error_code e;
        if (!p) {
          e = error_code::unknown_topic_or_partition;
        } else if (!p->is_leader()) {
          e = error_code::not_leader_or_follower;
        } else {
          auto op = svc.txns.write_marker(p, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch);
          e = co_await std::move(op);
        }
        entry(m.producer_id)[{t.name, index}] = e;
      }
    }
  }
  if (whole_request_failed) {
    // WriteTxnMarkersRequest.getErrorResponse: every partition of every marker, merged as above.
    producers.clear();
    outcome.clear();
    for (const auto& m : req.markers)
      for (const auto& t : m.topics)
        for (int32_t index : t.partition_indexes) entry(m.producer_id)[{t.name, index}] = error_code::unknown_server_error;
  }
  response resp;
  for (int64_t producer : producers) {
    if (outcome[producer].empty()) continue;
    response::writable_txn_marker_result mr;
    mr.producer_id = producer;
    for (const auto& [tp, e] : outcome[producer]) {
      if (mr.topics.empty() || mr.topics.back().name != tp.first) mr.topics.push_back({tp.first, {}, {}});
      mr.topics.back().partitions.push_back({tp.second, e, {}});
    }
    resp.markers.push_back(std::move(mr));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
