// WriteTxnMarkers (key 27, v0-2): a transaction coordinator on another broker asks this broker to write COMMIT or
// ABORT markers into partitions it leads (KIP-98). Each marker is appended with acks=-1 and answered once the ISR
// has it; a marker into __consumer_offsets also completes that producer's pending transactional offsets.
// Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not led here), INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, UNKNOWN_SERVER_ERROR (transaction version -1, or no producer id/epoch),
// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::write_txn_markers_response;

task<response> write_txn_markers(broker_services& svc, request_context& rc, protocol::write_txn_markers_request& req) {
  if (!cluster_authorized(svc, rc, acl_operation::cluster_action)) {
    // Kafka: only brokers (ClusterAction on the cluster) write markers; every partition answers the error.
    response denied;
    for (const auto& m : req.markers) {
      response::writable_txn_marker_result mr;
      mr.producer_id = m.producer_id;
      for (const auto& t : m.topics) {
        mr.topics.push_back({t.name, {}, {}});
        for (int32_t index : t.partition_indexes)
          mr.topics.back().partitions.push_back({index, error_code::cluster_authorization_failed, {}});
      }
      denied.markers.push_back(std::move(mr));
    }
    co_return denied;
  }
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
    std::vector<std::tuple<const std::string*, int32_t, std::shared_ptr<partition>>> here;  // the marker's partitions here
    for (const auto& t : m.topics) {
      auto topic = svc.topics.find(t.name);
      for (int32_t index : t.partition_indexes) {
        if (auto p = partition_of(topic, index)) here.emplace_back(&t.name, index, std::move(p));
        else entry(m.producer_id)[{t.name, index}] = error_code::unknown_topic_or_partition;
      }
    }
    // A marker none of whose partitions is here writes nothing. (Kafka 4.4 then never answers the request if an
    // earlier marker was written: its countdown of markers reaches zero on the skipped one, which does not send the
    // response. Sluice answers; compat/diff KNOWN.md K16.)
    if (here.empty()) continue;
    if (m.producer_id == -1 || m.producer_epoch == -1) {
      // No producer id, or a producer without an epoch: building the marker batch throws in Kafka's request
      // thread (a control batch needs both), so the whole request fails (below); what earlier markers wrote stays.
      whole_request_failed = true;
      break;
    }
    for (auto& [name, index, p] : here) {
      error_code e;
      if (!p->is_leader()) {
        e = error_code::not_leader_or_follower;
      } else if (m.transaction_version == -1) {
        // v2 (KIP-890): Kafka 4.4 checks the marker's producer epoch (INVALID_PRODUCER_EPOCH) and then refuses to
        // append a marker of transaction version -1, before its coordinator epoch check (observed:
        // UNKNOWN_SERVER_ERROR on each of its partitions, nothing written, the request's other markers written;
        // other negative versions, -128 included, are written). compat/diff write_txn_markers.json.
        auto check_op = call_on(p->strand(), [p, &m] {
          return p->check_marker(m.producer_id, m.producer_epoch,
                                 storage::end_txn_marker{m.transaction_result, m.coordinator_epoch});
        });
        auto checked = co_await std::move(check_op);
        const error_code check = checked ? error_code::none : to_kafka(checked.err());
        e = check == error_code::invalid_producer_epoch ? check : error_code::unknown_server_error;
      } else {
        auto op = svc.txns.write_marker(p, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch);
        e = co_await std::move(op);
      }
      entry(m.producer_id)[{*name, index}] = e;
    }
  }
  if (whole_request_failed) {
    // WriteTxnMarkersRequest.getErrorResponse: UNKNOWN_SERVER_ERROR for every partition; per producer id only the
    // partitions of its last marker (each marker replaces the map entry of its producer id).
    producers.clear();
    outcome.clear();
    for (const auto& m : req.markers) {
      auto& e = entry(m.producer_id);
      e.clear();
      for (const auto& t : m.topics)
        for (int32_t index : t.partition_indexes) e[{t.name, index}] = error_code::unknown_server_error;
    }
  }
  response resp;
  for (int64_t producer : producers) {
    // A producer without partitions is not answered, except in the whole-request failure, where Kafka's error
    // response has an entry (with no topics) for every producer id of the request.
    if (outcome[producer].empty() && !whole_request_failed) continue;
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
