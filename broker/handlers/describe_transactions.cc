// DescribeTransactions (key 65, v0, KIP-664): the state of transactional ids coordinated here. Per id:
// NOT_COORDINATOR (coordinated elsewhere), COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND.
#include <map>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_transactions_response;

task<response> describe_transactions(broker_services& svc, request_context& rc, protocol::describe_transactions_request& req) {
  response resp;
  for (const auto& id : req.transactional_ids) {
    response::transaction_state st;
    st.transactional_id = id;
    // An id with an error keeps the schema's defaults (0), as Kafka answers it.
    if (!authorized(svc, rc, acl_operation::describe, resource_type::transactional_id, id)) {
      st.error_code = error_code::transactional_id_authorization_failed;
      resp.transaction_states.push_back(std::move(st));
      continue;
    }
    auto [s, lookup] = txn_shard_for_request(svc, id);  // an empty id is INVALID_REQUEST, not looked up
    if (!s) {
      st.error_code = lookup;
      resp.transaction_states.push_back(std::move(st));
      continue;
    }
    auto op = [id](txn::transaction_coordinator& c) { return c.describe({id}); };
    auto described = co_await coordinator::run_on(svc.txns.coordinators(), s, std::move(op));
    const auto& d = described.front();
    st.error_code = to_protocol(d.error);
    if (d.error == txn::txn_error::none) {
      st.transaction_state_ = std::string(txn::to_string(d.state));
      st.transaction_timeout_ms = d.timeout_ms;
      st.transaction_start_time_ms = d.start_timestamp_ms;
      st.producer_id = d.producer_id;
      st.producer_epoch = d.producer_epoch;
      std::map<std::string, std::vector<int32_t>> by_topic;
      for (const auto& tp : d.partitions) by_topic[tp.topic].push_back(tp.partition);
      for (auto& [topic, parts] : by_topic) st.topics.push_back({topic, std::move(parts), {}});
    }
    resp.transaction_states.push_back(std::move(st));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
