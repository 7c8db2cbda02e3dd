#pragma once
// What Metadata and DescribeCluster tell clients about the cluster: its brokers, controller and the
// cluster operations a client may perform. One source, so the two answers always agree.
#include <optional>
#include <string>
#include <vector>

#include "broker/request_context.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

/// A live broker as clients should reach it.
struct broker_endpoint {
  int32_t id = -1;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

/// The live brokers. Single node: this broker, at its first advertised listener. Cluster mode: every
/// registered broker of the cluster snapshot.
inline std::vector<broker_endpoint> live_brokers(const broker_services& svc) {
  std::vector<broker_endpoint> out;
  if (auto c = svc.topics.cluster(); c && svc.topics.cluster_mode()) {
    for (const auto& [id, b] : c->brokers) out.push_back({id, b.host, b.port, b.rack});
    return out;
  }
  if (!svc.config.advertised_listeners.empty()) {
    const auto& ep = svc.config.advertised_listeners.front();
    out.push_back({svc.config.broker_id, ep.host, ep.port, std::nullopt});
  }
  return out;
}

/// The controller's broker id. Single node: this broker; cluster mode: the winner of /controller (-1: none).
inline int32_t controller_id(const broker_services& svc) {
  if (auto c = svc.topics.cluster(); c && svc.topics.cluster_mode()) return c->controller_id;
  return svc.config.broker_id;
}

/// Cluster operations allowed with no authorizer: every operation Kafka supports on the CLUSTER resource
/// (AclEntry.supportedOperations: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
/// ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12), as a bit field (KIP-430).
inline constexpr int32_t cluster_authorized_operations =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

}  // namespace sluice::broker::handlers
