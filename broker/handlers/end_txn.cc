// EndTxn (key 26, v0-5): commit or abort the ongoing transaction (KIP-98). Answered once PrepareCommit /
// PrepareAbort is in __transaction_state; the markers are written after the answer, as in Kafka, and the
// transaction completes when every partition has its marker. Transaction version 1 semantics at every version:
// the producer's epoch must be the current one; v5 echoes the producer id and epoch (unchanged).
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"

namespace sluice::broker::handlers {

using protocol::error_code;

task<protocol::end_txn_response> end_txn(broker_services& svc, request_context& rc, protocol::end_txn_request& req) {
  protocol::end_txn_response resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  if (!authorized(svc, rc, acl_operation::write, resource_type::transactional_id, req.transactional_id)) {
    resp.error_code = error_code::transactional_id_authorization_failed;
    co_return resp;
  }
  auto [s, lookup] = txn_shard_for_request(svc, req.transactional_id);
  if (!s) {
    resp.error_code = lookup;
    co_return resp;
  }
  txn::end_txn_request r{req.transactional_id, req.producer_id, req.producer_epoch, req.committed};
  auto op = [r](txn::transaction_coordinator& c) { return c.end_txn(r); };
  auto result = co_await coordinator::write_on<txn::end_txn_result>(svc.txns.coordinators(), s, std::move(op));
  resp.error_code = to_protocol(result.error, rc.header.api_version, 2);
  if (rc.header.api_version >= 5 && result.error == txn::txn_error::none) {  // defined, not served (end_txn.def)
    resp.producer_id = req.producer_id;
    resp.producer_epoch = req.producer_epoch;
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
