// ListTransactions (key 66, v0-2, KIP-664; DurationFilter v1, KIP-994): the transactions of every
// __transaction_state partition coordinated here. State names Kafka does not know are echoed in
// UnknownStateFilters; given only unknown names, nothing matches (as Kafka 4.4 answers).
// COORDINATOR_LOAD_IN_PROGRESS while a partition led here is still loading. v2 (KIP-1152): TransactionalIdPattern,
// a regular expression the whole id must match. Kafka uses RE2J (linear time, no back-references or lookaround);
// here Boost.Regex in Perl syntax, which bounds its own work (nesting depth when compiling, states when matching:
// a client's pattern can neither overflow the stack nor spin), with RE2's refusals added: a pattern with a
// back-reference or lookaround, or one that does not compile, answers INVALID_REGULAR_EXPRESSION. A match that
// exceeds Boost's bound counts as no match (logged).
#include <boost/regex.hpp>
#include <optional>

#include "base/logging.h"

#include "broker/handlers/authorization.h"
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
  if (!req.state_filters.empty() && filter.states.empty()) co_return resp;  // only unknown states: none match
  filter.producer_ids = req.producer_id_filters;
  filter.min_duration_ms = rc.header.api_version >= 1 ? req.duration_filter : -1;
  std::optional<boost::regex> pattern;
  if (rc.header.api_version >= 2 && req.transactional_id_pattern && !req.transactional_id_pattern->empty()) {
    const std::string& text = *req.transactional_id_pattern;
    static const boost::regex unsupported(R"((\\[1-9])|(\(\?<?[=!]))");  // RE2: no back-references, lookaround
    bool ok = !boost::regex_search(text, unsupported);
    if (ok) {
      try {
        pattern.emplace(text, boost::regex::perl);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
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
      // Kafka lists the transactional ids the principal may describe.
      if (!authorized(svc, rc, acl_operation::describe, resource_type::transactional_id, l.transactional_id)) continue;
      if (pattern) {
        bool match = false;
        try {
          match = boost::regex_match(l.transactional_id, *pattern);
        } catch (const std::exception& e) {
          log::warn("ListTransactions: pattern too costly on {}: {}", l.transactional_id, e.what());
        }
        if (!match) continue;
      }
      resp.transaction_states.push_back({l.transactional_id, l.producer_id, std::string(txn::to_string(l.state)), {}});
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
