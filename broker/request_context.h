#pragma once
#include <boost/asio.hpp>
#include <cstdint>

#include "base/clock.h"

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
  /// For request_percentage quotas (KIP-124): when the dispatcher started on the request (clock.monotonic_us),
  /// the time the handler spent parked in purgatory (not counted as work), and whether the request is exempt
  /// (replica fetches, ApiVersions and SASL, as Kafka exempts them).
  int64_t start_us = 0;
  int64_t waited_us = 0;
  bool request_quota_exempt = false;
  bool close_connection = false;  // set by a handler: close the connection instead of answering
  /// Why (logged); empty for the test hooks of broker/fault_injection.h. Kafka closes the connection of a request
  /// its parser refuses (e.g. ACL filters with UNKNOWN elements).
  std::string close_reason{};
  /// Set by a handler: send the response, then close the connection (failed SASL authentication, KIP-152).
  bool close_after_response = false;
};

/// Counts the time from its construction to its end as time parked (request_context::waited_us): wrap a wait
/// for others (a rebalance, replication, new metadata) so request_percentage quotas count only work.
class parked_time {
 public:
  parked_time(request_context& rc, const sluice::clock& clock) : rc_(rc), clock_(clock), start_us_(clock.monotonic_us()) {}
  ~parked_time() { rc_.waited_us += clock_.monotonic_us() - start_us_; }
  parked_time(const parked_time&) = delete;
  parked_time& operator=(const parked_time&) = delete;

 private:
  request_context& rc_;
  const sluice::clock& clock_;
  int64_t start_us_;
};

}  // namespace sluice::broker
