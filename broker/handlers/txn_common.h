#pragma once
// What the transaction handlers share: finding the coordinator of a transactional id and turning the
// coordinator's plain types into the protocol's.
#include <memory>
#include <string>
#include <utility>

#include "broker/broker_services.h"
#include "broker/txn_service.h"

namespace sluice::broker::handlers {

/// The shard coordinating `transactional_id` here, or null: NOT_COORDINATOR to answer (no __transaction_state yet,
/// or, in cluster mode, no replica of its partition here; a shard led elsewhere answers NOT_COORDINATOR itself).
inline std::shared_ptr<txn_service::shard> txn_shard(broker_services& svc, const std::string& transactional_id) {
  return svc.txns.shard_for(transactional_id);
}

/// The shard for a request naming `transactional_id`, or the error to answer instead: INVALID_REQUEST for an
/// empty id (Kafka checks it before anything else), NOT_COORDINATOR when no shard is here.
inline std::pair<std::shared_ptr<txn_service::shard>, protocol::error_code> txn_shard_for_request(
    broker_services& svc, const std::string& transactional_id) {
  if (transactional_id.empty()) return {nullptr, protocol::error_code::invalid_request};
  auto s = txn_shard(svc, transactional_id);
  return {s, s ? protocol::error_code::none : protocol::error_code::not_coordinator};
}

inline protocol::error_code to_protocol(txn::txn_error e) {
  return static_cast<protocol::error_code>(static_cast<int16_t>(e));
}

/// KIP-588: PRODUCER_FENCED exists for a client from these versions on (InitProducerId 4, AddPartitionsToTxn 2,
/// AddOffsetsToTxn 2, EndTxn 2, TxnOffsetCommit 3); older versions are answered INVALID_PRODUCER_EPOCH, as Kafka
/// does.
inline protocol::error_code to_protocol(txn::txn_error e, int16_t version, int16_t first_fenced_version) {
  if (e == txn::txn_error::producer_fenced && version < first_fenced_version)
    return protocol::error_code::invalid_producer_epoch;
  return to_protocol(e);
}

}  // namespace sluice::broker::handlers
