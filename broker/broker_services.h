#pragma once
// What request handlers use, built once by `broker::start` (issue #13): references, never null.
#include <string>

#include "base/clock.h"
#include "broker/config.h"
#include "coordination/cluster_view.h"

namespace sluice::broker {

class topic_registry;
class group_service;
class txn_service;
class producer_id_manager;
class fault_injector;
class replica_manager;
class quota_manager;
class fetch_session_cache;
namespace security {
class credential_store;
class authorizer;
}

/// The broker's services as handlers see them. Every member outlives every connection (the broker keeps them
/// until the process exits). Handlers take what they need and nothing reaches them through globals.
struct broker_services {
  const broker_config& config;
  topic_registry& topics;             // topics by name and id, partitions (broker/topic_registry.h)
  coordination::cluster_view& cluster;  // live brokers, controller, leaders (embedded or ZooKeeper)
  group_service& groups;              // consumer group coordinators (broker/group_service.h)
  txn_service& txns;                  // transaction coordinators and markers (broker/txn_service.h)
  producer_id_manager& producer_ids;  // InitProducerId (broker/producer_id_manager.h)
  fault_injector& faults;             // test hooks (broker/fault_injection.h), off unless configured
  sluice::clock& clock;
  security::credential_store& credentials;  // SCRAM users (broker/security/credential_store.h)
  std::string cluster_id;
  /// Cluster mode only: roles, fetchers, ISR changes (broker/replication/). Null on a single node, where the
  /// ISR is always this broker and nothing replicates.
  replica_manager* replicas = nullptr;
  /// The ACL authorizer (broker/security/authorizer.h); null without authorizer.class.name, when every request
  /// is allowed (handlers/authorization.h).
  security::authorizer* authorizer = nullptr;
  /// Client byte-rate quotas (broker/quota_manager.h); null in unit tests (no quotas).
  quota_manager* quotas = nullptr;
  /// Incremental fetch sessions (KIP-227, broker/fetch_session_cache.h); null in unit tests: every fetch is
  /// sessionless (session id 0) and an incremental one gets FETCH_SESSION_ID_NOT_FOUND.
  fetch_session_cache* fetch_sessions = nullptr;
};

}  // namespace sluice::broker
