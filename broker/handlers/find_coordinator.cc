// FindCoordinator (key 10): the coordinator of a group is this broker (single node), once the
// __consumer_offsets topic exists; it is created on first need, as Kafka does. v4+ batches keys (KIP-699).
// Transaction coordinators (key type 1) are not supported yet.
#include "broker/group_service.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::find_coordinator_response;

task<response> find_coordinator(handler_context& hc, request_context& rc, protocol::find_coordinator_request& req) {
  const int16_t version = rc.header.api_version;
  std::vector<std::string> keys = version >= 4 ? req.coordinator_keys : std::vector<std::string>{req.key_};
  std::vector<response::coordinator> out;
  for (const auto& key : keys) {
    response::coordinator c;
    c.key = key;
    c.node_id = -1;
    c.port = -1;
    if (req.key_type == 1) {
      c.error_code = error_code::coordinator_not_available;
      c.error_message = "transactions are not supported by this broker";
    } else if (req.key_type != 0) {
      c.error_code = error_code::invalid_request;
      c.error_message = "unknown coordinator key type " + std::to_string(req.key_type);
    } else if (!hc.groups) {
      c.error_code = error_code::coordinator_not_available;
    } else if (auto err = hc.groups->ensure_topic(); !err.ok()) {
      c.error_code = error_code::coordinator_not_available;
      c.error_message = err.message;
    } else if (hc.config.advertised_listeners.empty()) {
      c.error_code = error_code::coordinator_not_available;
    } else {
      const auto& ep = hc.config.advertised_listeners.front();
      c.node_id = hc.config.broker_id;
      c.host = ep.host;
      c.port = ep.port;
      c.error_code = error_code::none;
      c.error_message = std::nullopt;
    }
    out.push_back(std::move(c));
  }
  response resp;
  if (version >= 4) {
    resp.coordinators = std::move(out);
  } else {
    auto& c = out.front();
    resp.error_code = c.error_code;
    resp.error_message = c.error_message;
    resp.node_id = c.node_id;
    resp.host = c.host;
    resp.port = c.port;
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
