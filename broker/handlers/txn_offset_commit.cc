// TxnOffsetCommit (key 28, v0-4): a transactional producer commits its consumer's offsets as part of its
// transaction (KIP-98; v3 adds the group's generation, member id and group instance id, KIP-447). The offsets are
// appended to the group's __consumer_offsets partition as a transactional batch of the producer and stay pending
// until the transaction's COMMIT marker lands there (an ABORT drops them): broker/groups/README.md.
//
// Kafka 4.x KafkaApis.handleTxnOffsetCommitRequest: partitions of unknown topics (or out of range) answer
// UNKNOWN_TOPIC_OR_PARTITION and are not sent to the coordinator; the rest is answered by the coordinator
// (GroupCoordinatorService.commitTransactionalOffsets: INVALID_GROUP_ID for an empty group id, then
// OffsetMetadataManager.commitTransactionalOffset), every partition carrying a request-level error.
#include "base/logging.h"
#include "broker/group_service.h"
#include "broker/groups/partition_for_group.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"
#include "broker/txn_service.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::txn_offset_commit_response;

task<response> txn_offset_commit(broker_services& svc, request_context& rc, protocol::txn_offset_commit_request& req) {
  const int16_t version = rc.header.api_version;
  std::vector<std::vector<error_code>> codes(req.topics.size());  // answers indexed like the request
  groups::txn_offset_commit_request r;
  r.transactional_id = req.transactional_id;
  r.group_id = req.group_id;
  r.producer_id = req.producer_id;
  r.producer_epoch = req.producer_epoch;
  if (version >= 3) {
    r.generation_id = req.generation_id;
    r.member_id = req.member_id;
    r.group_instance_id = req.group_instance_id;
  }
  std::vector<std::pair<size_t, size_t>> where;  // r.partitions[i] answers codes[first][second]
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    auto topic = svc.topics.find(t.name);
    codes[ti].resize(t.partitions.size(), error_code::none);
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const auto& p = t.partitions[pi];
      if (!topic || p.partition_index < 0 || p.partition_index >= static_cast<int32_t>(topic->partitions.size())) {
        codes[ti][pi] = error_code::unknown_topic_or_partition;
        continue;
      }
      r.partitions.push_back({{t.name, p.partition_index},
                              p.committed_offset,
                              version >= 2 ? p.committed_leader_epoch : -1,
                              p.committed_metadata,
                              -1,
                              topic->id});
      where.emplace_back(ti, pi);
    }
  }
  // The producer must be the transaction's current one, and its transaction must have added the group's
  // __consumer_offsets partition (AddOffsetsToTxn): Kafka 4.x verifies that with the transaction coordinator
  // before the append (KIP-890). Another epoch answers INVALID_PRODUCER_EPOCH, another producer id
  // INVALID_PRODUCER_ID_MAPPING (also an id the coordinator does not know), a partition not in the ongoing
  // transaction INVALID_TXN_STATE (v0-3) or TRANSACTION_ABORTABLE (v4), as Kafka 4.4 answers. Checked when the coordinator of the transactional id is on
  // this broker (single node always); otherwise the log's epoch check is what fences a stale producer.
  error_code verified = error_code::none;
  // Kafka: Write on the transactional id, Read on the group.
  if (!authorized(svc, rc, acl_operation::write, resource_type::transactional_id, req.transactional_id))
    verified = error_code::transactional_id_authorization_failed;
  else if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id))
    verified = error_code::group_authorization_failed;
  auto offsets_topic = svc.topics.find(consumer_offsets_topic);
  // An empty group id is INVALID_GROUP_ID first (the coordinator answers it).
  if (verified != error_code::none) {
    // answered below
  } else if (!r.partitions.empty() && !req.group_id.empty() && req.transactional_id.empty()) {
    // The transaction coordinator's verification refuses an empty transactional id (INVALID_REQUEST).
    verified = error_code::invalid_request;
  } else if (!r.partitions.empty() && !req.group_id.empty() && offsets_topic && !offsets_topic->partitions.empty()) {
    if (auto ts = svc.txns.shard_for(req.transactional_id); ts && ts->part->is_leader()) {
      const txn::topic_partition group_partition{
          std::string(consumer_offsets_topic),
          groups::partition_for_group(req.group_id, static_cast<int32_t>(offsets_topic->partitions.size()))};
      auto op = [id = req.transactional_id, pid = req.producer_id, epoch = req.producer_epoch,
                 group_partition](txn::transaction_coordinator& c) {
        if (c.state() != txn::transaction_coordinator::load_state::active) return txn::txn_error::none;
        const auto* m = c.find(id);
        if (!m || m->producer_id != pid) return txn::txn_error::invalid_producer_id_mapping;
        if (m->producer_epoch != epoch) return txn::txn_error::invalid_producer_epoch;
        if (m->state != txn::txn_state::ongoing || !m->partitions.count(group_partition))
          return txn::txn_error::invalid_txn_state;
        return txn::txn_error::none;
      };
      auto e = co_await coordinator::run_on(svc.txns.coordinators(), ts, std::move(op));
      verified = static_cast<error_code>(static_cast<int16_t>(e));
      if (verified == error_code::invalid_txn_state && version >= 4) verified = error_code::transaction_abortable;
    }
  }
  if (verified != error_code::none) {
    for (auto [ti, pi] : where) codes[ti][pi] = verified;
  } else if (!r.partitions.empty()) {
    auto s = svc.groups.shard_for(req.group_id);
    if (!s) {
      for (auto [ti, pi] : where) codes[ti][pi] = error_code::not_coordinator;
    } else {
      auto op = [r = std::move(r)](groups::group_coordinator& c) mutable { return c.txn_offset_commit(std::move(r)); };
      auto result = co_await group_write_call<groups::offset_commit_result>(svc.groups, s, std::move(op));
      for (size_t i = 0; i < where.size() && i < result.partitions.size(); ++i) {
        codes[where[i].first][where[i].second] = to_kafka(result.partitions[i].error);
      }
    }
  }
  log::debug("TxnOffsetCommit v{} {} group {} producer {} epoch {} from {}", version, req.transactional_id,
             req.group_id, req.producer_id, req.producer_epoch, rc.session.peer);
  response resp;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    // As OffsetCommit: an unknown topic is answered before the coordinator (an entry even without partitions),
    // a known topic named without partitions gets no entry.
    if (req.topics[ti].partitions.empty() && svc.topics.find(req.topics[ti].name)) continue;
    response::txn_offset_commit_response_topic t;
    t.name = req.topics[ti].name;
    for (size_t pi = 0; pi < req.topics[ti].partitions.size(); ++pi) {
      t.partitions.push_back({req.topics[ti].partitions[pi].partition_index, codes[ti][pi]});
    }
    resp.topics.push_back(std::move(t));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
