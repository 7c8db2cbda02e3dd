#pragma once
#include <boost/asio.hpp>
#include <string>

#include "base/clock.h"
#include "broker/config.h"
#include "coordination/cluster_view.h"
#include "protocol/header.h"

namespace sluice::broker {

class topic_registry;
class group_service;
class producer_id_manager;
class fault_injector;
class replica_manager;

/// What every handler may use: configuration, topics, time and an executor for timers.
struct handler_context {
  const broker_config& config;
  topic_registry& topics;
  sluice::clock& clock;
  std::string cluster_id;
  group_service* groups = nullptr;  // consumer group coordinators (broker/group_service.h)
  producer_id_manager* producer_ids = nullptr;  // InitProducerId (broker/producer_id_manager.h)
  fault_injector* faults = nullptr;             // test hooks (broker/fault_injection.h); never null once started
  replica_manager* replicas = nullptr;          // cluster mode: roles, fetchers, ISR (broker/replication/)
  coordination::cluster_view* cluster = nullptr;  // never null once started (embedded or ZooKeeper)
};

/// The request being handled: its header and where it came from. The frame buffer the request was
/// decoded from outlives the handler call (record views point into it).
struct request_context {
  protocol::request_header header;
  std::string peer;  // "address:port" of the client, for logs
  boost::asio::any_io_executor executor;  // the connection's strand, for timers
  bool close_connection = false;  // set by a handler: close the connection instead of answering (test hooks)
};

}  // namespace sluice::broker
