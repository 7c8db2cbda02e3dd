#pragma once
#include <boost/asio.hpp>
#include <cstdint>

#include "broker/broker_services.h"
#include "broker/session.h"
#include "protocol/header.h"

namespace sluice::broker {

/// The request being handled: its header, the session it came on, and what the dispatcher decided for it.
/// The frame buffer the request was decoded from outlives the handler call (record views point into it).
struct request_context {
  protocol::request_header header;
  broker::session& session;
  boost::asio::any_io_executor executor;  // the connection's strand, for timers
  /// Set by the dispatcher from its quota hook before the handler runs; written into every response that
  /// has a ThrottleTimeMs field (KIP-219).
  int32_t throttle_time_ms = 0;
  /// Set by a handler whose client went over its quota: the connection reads nothing more for this many ms
  /// after the response (Kafka mutes the channel, KIP-219).
  int32_t mute_ms = 0;
  bool close_connection = false;  // set by a handler: close the connection instead of answering
  /// Why (logged); empty for the test hooks of broker/fault_injection.h. Kafka closes the connection of a request
  /// its parser refuses (e.g. ACL filters with UNKNOWN elements).
  std::string close_reason;
  /// Set by a handler: send the response, then close the connection (failed SASL authentication, KIP-152).
  bool close_after_response = false;
};

}  // namespace sluice::broker
