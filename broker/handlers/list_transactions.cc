// ListTransactions (key 66, v0-1, KIP-664; DurationFilter v1, KIP-994): the transactions of every
// __transaction_state partition coordinated here. State names Kafka does not know are echoed in
// UnknownStateFilters and filter nothing (with only unknown names every state matches, as in Kafka).
// COORDINATOR_LOAD_IN_PROGRESS while a partition led here is still loading. v2 (KIP-1152): TransactionalIdPattern,
// a regular expression the whole id must match (ECMAScript syntax here, Java's in Kafka: the common subset
// behaves the same); one that does not compile answers INVALID_REGULAR_EXPRESSION.
#include <optional>
#include <regex>

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::list_transactions_response;

task<response> list_transactions(broker_services& svc, request_context& rc, protocol::list_transactions_request& req) {
  response resp;
  txn::list_transactions_filter filter;
  for (const auto& name : req.state_filters) {
    if (auto st = txn::txn_state_from_string(name)) {
      filter.states.push_back(*st);
    } else {
      resp.unknown_state_filters.push_back(name);
    }
  }
  filter.producer_ids = req.producer_id_filters;
  filter.min_duration_ms = rc.header.api_version >= 1 ? req.duration_filter : -1;
  std::optional<std::regex> pattern;
  if (rc.header.api_version >= 2 && req.transactional_id_pattern && !req.transactional_id_pattern->empty()) {
    try {
      pattern.emplace(*req.transactional_id_pattern);
    } catch (const std::regex_error&) {
      resp.error_code = error_code::invalid_regular_expression;
      co_return resp;
    }
  }
  for (auto& s : svc.txns.shards()) {
    if (!s || !s->part->is_leader()) continue;
    auto op = [filter](txn::transaction_coordinator& c) {
      std::vector<txn::transaction_listing> found;
      auto e = c.list(filter, found);
      return std::make_pair(e, std::move(found));
    };
    auto [e, found] = co_await coordinator::run_on(svc.txns.coordinators(), s, std::move(op));
    if (e == txn::txn_error::coordinator_load_in_progress) resp.error_code = error_code::coordinator_load_in_progress;
    if (e != txn::txn_error::none) continue;
    for (const auto& l : found) {
      if (pattern && !std::regex_match(l.transactional_id, *pattern)) continue;
      resp.transaction_states.push_back({l.transactional_id, l.producer_id, std::string(txn::to_string(l.state)), {}});
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
