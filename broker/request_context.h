#pragma once
#include <boost/asio.hpp>
#include <string>

#include "base/clock.h"
#include "broker/config.h"
#include "protocol/header.h"

namespace sluice::broker {

class topic_registry;

/// What every handler may use: configuration, topics, time and an executor for timers.
struct handler_context {
  const broker_config& config;
  topic_registry& topics;
  sluice::clock& clock;
  std::string cluster_id;
};

/// The request being handled: its header and where it came from. The frame buffer the request was
/// decoded from outlives the handler call (record views point into it).
struct request_context {
  protocol::request_header header;
  std::string peer;  // "address:port" of the client, for logs
  boost::asio::any_io_executor executor;  // the connection's strand, for timers
};

}  // namespace sluice::broker
