// AddOffsetsToTxn (key 25, v0-4): the group's __consumer_offsets partition joins the ongoing transaction, so
// that the TxnOffsetCommit that follows is committed or aborted with it (KIP-98; Kafka's
// handleAddOffsetsToTxnRequest adds TopicPartition(__consumer_offsets, partitionFor(group))).
#include "broker/group_service.h"
#include "broker/groups/partition_for_group.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;

task<protocol::add_offsets_to_txn_response> add_offsets_to_txn(broker_services& svc, request_context& rc,
                                                               protocol::add_offsets_to_txn_request& req) {
  protocol::add_offsets_to_txn_response resp;
  if (!authorized(svc, rc, acl_operation::write, resource_type::transactional_id, req.transactional_id)) {
    resp.error_code = error_code::transactional_id_authorization_failed;
    co_return resp;
  }
  if (!authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    co_return resp;
  }
  auto [s, lookup] = txn_shard_for_request(svc, req.transactional_id);
  if (!s) {
    resp.error_code = lookup;
    co_return resp;
  }
  if (auto err = svc.groups.ensure_topic(); !err.ok()) {
    resp.error_code = error_code::coordinator_not_available;
    co_return resp;
  }
  auto offsets = svc.topics.find(consumer_offsets_topic);
  if (!offsets || offsets->partitions.empty()) {
    resp.error_code = error_code::coordinator_not_available;
    co_return resp;
  }
  txn::add_partitions_request r;
  r.transactional_id = req.transactional_id;
  r.producer_id = req.producer_id;
  r.producer_epoch = req.producer_epoch;
  r.partitions.push_back({std::string(consumer_offsets_topic),
                          groups::partition_for_group(req.group_id, static_cast<int32_t>(offsets->partitions.size()))});
  auto op = [r](txn::transaction_coordinator& c) { return c.add_partitions(r); };
  auto result = co_await coordinator::write_on<txn::add_partitions_result>(svc.txns.coordinators(), s, std::move(op));
  resp.error_code = to_protocol(result.error, rc.header.api_version, 2);
  co_return resp;
}

}  // namespace sluice::broker::handlers
