#pragma once
// The one table of APIs this broker serves: ApiVersions is derived from it (DESIGN.md §2).
#include <boost/asio.hpp>
#include <optional>
#include <span>

#include "broker/request_context.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace sluice::broker {

/// What the connection does after a request: send `frame`, send nothing (acks=0 produce), or close the
/// connection because the request body was malformed.
struct handler_outcome {
  enum class kind { respond, no_response, malformed } what = kind::respond;
  protocol::encoded_frame frame;
};

using handler_fn = boost::asio::awaitable<handler_outcome> (*)(broker_services&, request_context&, protocol::reader&);

/// One served API: its key, the version range advertised in ApiVersions (the served range of its message
/// definition, `protocol::api_traits`: never listed twice), and the entry point that decodes the typed
/// request, runs the handler, writes `request_context::throttle_time_ms` into the response when its schema has
/// ThrottleTimeMs, and encodes it. The dispatcher (broker/dispatcher.h) calls it after the version check.
struct handler_entry {
  protocol::api_key key;
  int16_t min_version;
  int16_t max_version;
  handler_fn handle;
};

std::span<const handler_entry> handler_table();
const handler_entry* find_handler(int16_t api_key);

}  // namespace sluice::broker
