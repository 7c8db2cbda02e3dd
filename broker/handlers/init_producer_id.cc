// InitProducerId (key 22, v0-5): a producer id and epoch for an idempotent or transactional producer (KIP-98).
//
// Kafka's rules (TransactionCoordinator.handleInitProducerId):
//  - null transactional id: always a NEW producer id with epoch 0, whatever ProducerId/ProducerEpoch the
//    request carries (v3+, KIP-360). Kafka never bumps the epoch of an idempotent producer on the broker:
//    the client bumps it itself (Java's bumpIdempotentProducerEpoch; librdkafka asks for a new id), and
//    the partition logs accept the new epoch starting at sequence 0 (storage/producer_state.h).
//  - empty transactional id: INVALID_REQUEST.
//  - any other transactional id: the transaction coordinator of its __transaction_state partition
//    (broker/txn): a new id, or the epoch bumped (fencing older producers; an ongoing transaction is aborted
//    first and CONCURRENT_TRANSACTIONS answered so the client retries), KIP-360 rules for ProducerId/Epoch.
//    NOT_COORDINATOR when the id is coordinated elsewhere.
#include "base/logging.h"
#include "broker/error_map.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
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
  // Kafka: Write on the transactional id; an idempotent producer needs IdempotentWrite on the cluster or Write on
  // some topic (KIP-679).
  if (req.transactional_id.has_value() && !req.transactional_id->empty() &&
      !authorized(svc, rc, acl_operation::write, resource_type::transactional_id, *req.transactional_id)) {
    resp.error_code = error_code::transactional_id_authorization_failed;
    co_return resp;
  }
  if (!req.transactional_id.has_value() && svc.authorizer != nullptr &&
      !cluster_authorized(svc, rc, acl_operation::idempotent_write) &&
      !svc.authorizer->authorize_any(rc.session.principal, rc.session.client_host, acl_operation::write,
                                     resource_type::topic)) {
    resp.error_code = error_code::cluster_authorization_failed;
    co_return resp;
  }
  if (req.transactional_id.has_value()) {
    if (req.transactional_id->empty()) {
      resp.error_code = error_code::invalid_request;
      co_return resp;
    }
    auto s = txn_shard(svc, *req.transactional_id);
    if (!s) {
      resp.error_code = error_code::not_coordinator;
      co_return resp;
    }
    txn::init_producer_id_request r;
    r.transactional_id = *req.transactional_id;
    r.timeout_ms = req.transaction_timeout_ms;
    r.expected_producer_id = req.producer_id;
    r.expected_producer_epoch = req.producer_epoch;
    auto op = [r](txn::transaction_coordinator& c) { return c.init_producer_id(r); };
    auto result = co_await coordinator::write_on<txn::init_producer_id_result>(svc.txns.coordinators(), s, std::move(op));
    resp.error_code = to_protocol(result.error, rc.header.api_version, 4);
    if (result.error == txn::txn_error::none) {
      resp.producer_id = result.producer_id;
      resp.producer_epoch = result.producer_epoch;
    }
    log::debug("InitProducerId {} from {}: {} producer id {} epoch {}", r.transactional_id, rc.session.peer,
               txn::to_string(result.error), resp.producer_id, resp.producer_epoch);
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
