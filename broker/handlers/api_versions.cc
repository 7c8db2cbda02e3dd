// ApiVersions (key 18): the versions of every API in the handler table (KIP-35; KIP-511 for the v0
// fallback and the client software fields).
#include <algorithm>
#include <regex>

#include "broker/handler_table.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;

protocol::api_versions_response api_versions_list(error_code error) {
  protocol::api_versions_response r;
  r.error_code = error;
  for (const auto& e : handler_table()) {
    protocol::api_versions_response::api_version v;
    v.api_key = static_cast<int16_t>(e.key);
    v.min_version = e.min_version;
    v.max_version = e.max_version;
    r.api_keys.push_back(v);
  }
  std::sort(r.api_keys.begin(), r.api_keys.end(), [](const auto& a, const auto& b) { return a.api_key < b.api_key; });
  return r;
}

task<protocol::api_versions_response> api_versions(broker_services& svc, request_context& rc,
                                                   protocol::api_versions_request& req) {
  // KIP-511: v3+ clients name their software; Kafka rejects names outside this pattern.
  if (rc.header.api_version >= 3) {
    static const std::regex valid("[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?");
    if (!std::regex_match(req.client_software_name, valid) || !std::regex_match(req.client_software_version, valid)) {
      protocol::api_versions_response r;
      r.error_code = error_code::invalid_request;
      co_return r;
    }
    rc.session.client_software_name = req.client_software_name;
    rc.session.client_software_version = req.client_software_version;
  }
  // KIP-1242 (v5): a client that names the cluster and node it meant to reach learns that it reached another one
  // (stale bootstrap or a reused address) and bootstraps again. Both or neither: one alone is INVALID_REQUEST, as
  // Kafka 4.4 answers.
  if (rc.header.api_version >= 5 && (req.cluster_id.has_value() || req.node_id >= 0)) {
    protocol::api_versions_response r;
    if (!req.cluster_id.has_value() || req.node_id < 0) {
      r.error_code = error_code::invalid_request;
      co_return r;
    }
    if (*req.cluster_id != svc.cluster_id || req.node_id != svc.config.broker_id) {
      r.error_code = error_code::rebootstrap_required;
      co_return r;
    }
  }
  co_return api_versions_list(error_code::none);
}

}  // namespace sluice::broker::handlers
