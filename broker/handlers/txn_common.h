#pragma once
// What the transaction handlers share: finding the coordinator of a transactional id and turning the
// coordinator's plain types into the protocol's.
#include <memory>
#include <string>

#include "broker/broker_services.h"
#include "broker/txn_service.h"

namespace sluice::broker::handlers {

/// The shard coordinating `transactional_id` here, or null: NOT_COORDINATOR to answer (no __transaction_state yet,
/// or, in cluster mode, no replica of its partition here; a shard led elsewhere answers NOT_COORDINATOR itself).
inline std::shared_ptr<txn_service::shard> txn_shard(broker_services& svc, const std::string& transactional_id) {
  return svc.txns.shard_for(transactional_id);
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
