// InitProducerId (key 22, v0-5): a producer id and epoch for an idempotent producer (KIP-98).
//
// Kafka's rules (TransactionCoordinator.handleInitProducerId):
//  - null transactional id: always a NEW producer id with epoch 0, whatever ProducerId/ProducerEpoch the
//    request carries (v3+, KIP-360). Kafka never bumps the epoch of an idempotent producer on the broker:
//    the client bumps it itself (Java's bumpIdempotentProducerEpoch; librdkafka asks for a new id), and
//    the partition logs accept the new epoch starting at sequence 0 (storage/producer_state.h).
//  - empty transactional id: INVALID_REQUEST.
//  - any other transactional id needs the transaction coordinator, which Sluice does not have yet:
//    COORDINATOR_NOT_AVAILABLE, the answer FindCoordinator(key type 1) already gives; a client keeps
//    retrying until its transaction.timeout.ms, as it would against a cluster without
//    __transaction_state. The epoch-bump rules of KIP-360 belong to that coordinator.
#include "base/logging.h"
#include "broker/error_map.h"
#include "broker/handlers/handlers.h"
#include "broker/producer_id_manager.h"

namespace sluice::broker::handlers {

using protocol::error_code;

task<protocol::init_producer_id_response> init_producer_id(broker_services& svc, request_context& rc,
                                                           protocol::init_producer_id_request& req) {
  protocol::init_producer_id_response resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  // v3+ (KIP-360): the producer id and epoch are both set or both -1 (Kafka's InitProducerIdRequest check).
  if ((req.producer_id == -1) != (req.producer_epoch == -1)) {
    resp.error_code = error_code::invalid_request;
    co_return resp;
  }
  if (req.transactional_id.has_value()) {
    resp.error_code = req.transactional_id->empty() ? error_code::invalid_request : error_code::coordinator_not_available;
    co_return resp;
  }
  auto id = svc.producer_ids.generate_producer_id();
  if (!id) {
    log::error("InitProducerId from {}: cannot reserve producer ids: {}", rc.session.peer, id.err().message);
    resp.error_code = to_kafka(id.err());
    co_return resp;
  }
  resp.error_code = error_code::none;
  resp.producer_id = *id;
  resp.producer_epoch = 0;
  log::debug("InitProducerId from {}: producer id {} epoch 0 (request had id {} epoch {})", rc.session.peer, *id,
             req.producer_id, req.producer_epoch);
  co_return resp;
}

}  // namespace sluice::broker::handlers
