// AddPartitionsToTxn (key 24, v0-5): partitions join the ongoing transaction of a transactional id (KIP-98).
// v0-3: one transaction, from its producer. v4+ (KIP-890): a batch of transactions, sent by brokers; VerifyOnly
// asks whether the partitions are already part of the transaction without adding them.
//
// Kafka's checks before the coordinator (KafkaApis.handleAddPartitionsToTxnRequest, even for an empty id): a partition of an unknown
// topic, or beyond its partition count, answers UNKNOWN_TOPIC_OR_PARTITION and every other partition of that
// transaction OPERATION_NOT_ATTEMPTED; so does a partition of an internal topic (TOPIC_AUTHORIZATION_FAILED, as
// Kafka: producers may not write them). The coordinator then answers every partition with one error.
#include <map>
#include <set>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using request = protocol::add_partitions_to_txn_request;
using response = protocol::add_partitions_to_txn_response;

namespace {

/// Kafka builds the answer two ways: from a map of partitions (the partition checks, verify-only: no entry for a
/// topic named without partitions) or from the request's topics (an error of the whole transaction from the
/// coordinator, `request_topics`: such a topic keeps an empty entry).
std::vector<response::add_partitions_to_txn_topic_result> answer_all(
    const std::vector<request::add_partitions_to_txn_topic>& topics, const std::map<txn::topic_partition, error_code>& own,
    error_code rest, bool request_topics = false) {
  std::vector<response::add_partitions_to_txn_topic_result> out;
  std::map<std::string, size_t> where;  // a topic named twice is answered once
  std::set<std::pair<size_t, int32_t>> answered;  // (topic entry, partition): each answered once, in O(n log n)
  for (const auto& t : topics) {
    if (t.partitions.empty() && !request_topics) continue;
    auto [it, fresh] = where.emplace(t.name, out.size());
    if (fresh) out.push_back({t.name, {}, {}});
    auto& tr = out[it->second];
    for (int32_t p : t.partitions) {
      if (!answered.emplace(it->second, p).second) continue;
      auto found = own.find({t.name, p});
      tr.results_by_partition.push_back({p, found == own.end() ? rest : found->second, {}});
    }
  }
  return out;
}

/// One transaction: the unknown-partition check, then the coordinator.
task<std::vector<response::add_partitions_to_txn_topic_result>> add_one(broker_services& svc, request_context& rc,
                                                                         int16_t version,
                                                                         const std::string& id,
                                                                         int64_t producer_id, int16_t producer_epoch,
                                                                         bool verify_only,
                                                                         const std::vector<request::add_partitions_to_txn_topic>& topics) {
  txn::add_partitions_request r;
  r.transactional_id = id;
  r.producer_id = producer_id;
  r.producer_epoch = producer_epoch;
  // Kafka: Write on the transactional id (every partition answers the error), then Write on each topic.
  if (version <= 3 && !authorized(svc, rc, acl_operation::write, resource_type::transactional_id, id))
    co_return answer_all(topics, {}, error_code::transactional_id_authorization_failed, true);
  std::map<txn::topic_partition, error_code> unknown;
  for (const auto& t : topics) {
    auto topic = svc.topics.find(t.name);
    const bool denied = version <= 3 && !authorized(svc, rc, acl_operation::write, resource_type::topic, t.name);
    for (int32_t p : t.partitions) {
      if (denied) {
        unknown[{t.name, p}] = error_code::topic_authorization_failed;
      } else if (!topic || p < 0 || p >= static_cast<int32_t>(topic->partitions.size())) {
        unknown[{t.name, p}] = error_code::unknown_topic_or_partition;
      } else if (topic->internal) {
        // Kafka: a producer may not write an internal topic (it is not authorized to; no markers go there).
        unknown[{t.name, p}] = error_code::topic_authorization_failed;
      } else {
        r.partitions.push_back({t.name, p});
      }
    }
  }
  if (!unknown.empty()) co_return answer_all(topics, unknown, error_code::operation_not_attempted);
  if (id.empty()) co_return answer_all(topics, {}, error_code::invalid_request, !verify_only);  // the coordinator's first check
  auto s = txn_shard(svc, id);
  if (!s) co_return answer_all(topics, {}, error_code::not_coordinator, true);
  if (verify_only) {
    auto op = [r](txn::transaction_coordinator& c) { return c.verify_partitions(r); };
    auto verified = co_await coordinator::run_on(svc.txns.coordinators(), s, std::move(op));
    std::map<txn::topic_partition, error_code> each;
    for (const auto& [tp, e] : verified) each[tp] = to_protocol(e);
    co_return answer_all(topics, each, error_code::none);
  }
  auto op = [r](txn::transaction_coordinator& c) { return c.add_partitions(r); };
  auto result = co_await coordinator::write_on<txn::add_partitions_result>(svc.txns.coordinators(), s, std::move(op));
  co_return answer_all(topics, {}, to_protocol(result.error, version, 2), true);
}

}  // namespace

task<response> add_partitions_to_txn(broker_services& svc, request_context& rc, request& req) {
  response resp;
  if (rc.header.api_version <= 3) {
    auto op = add_one(svc, rc, rc.header.api_version, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                      req.v3_and_below_producer_epoch, false, req.v3_and_below_topics);
    resp.results_by_topic_v3_and_below = co_await std::move(op);
    co_return resp;
  }
  // v4+: sent by brokers (KIP-890), ClusterAction on the cluster.
  if (!cluster_authorized(svc, rc, acl_operation::cluster_action)) {
    resp.error_code = error_code::cluster_authorization_failed;
    co_return resp;
  }
  for (const auto& t : req.transactions) {
    auto op = add_one(svc, rc, rc.header.api_version, t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics);
    auto topics = co_await std::move(op);
    resp.results_by_transaction.push_back({t.transactional_id, std::move(topics), {}});
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
