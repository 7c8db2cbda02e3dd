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

/// Where broker `b` is reached through `listener` (the listener the request came on, as Kafka answers):
/// nullopt when `b` has no such listener (Kafka leaves such brokers out).
inline std::optional<broker_endpoint> endpoint_on(const coordination::broker_registration& b, const std::string& listener) {
  if (b.endpoints.empty()) {
    if (b.listener_name != listener) return std::nullopt;
    return broker_endpoint{b.id, b.host, b.port, b.rack};
  }
  const auto* e = b.endpoint_of(listener);
  if (e == nullptr) return std::nullopt;
  return broker_endpoint{b.id, e->host, e->port, b.rack};
}

/// This broker's endpoint on `listener` (single node): its advertised endpoint, else nullopt.
inline std::optional<broker_endpoint> self_endpoint(const broker_services& svc, const std::string& listener) {
  const endpoint* ep = advertised_endpoint(svc.config, listener);
  if (ep == nullptr) return std::nullopt;
  return broker_endpoint{svc.config.broker_id, ep->host, ep->port, std::nullopt};
}

/// The live brokers as clients of `listener` reach them. Single node: this broker. Cluster mode: every registered
/// broker of the cluster snapshot that has the listener.
inline std::vector<broker_endpoint> live_brokers(const broker_services& svc, const std::string& listener) {
  std::vector<broker_endpoint> out;
  if (auto c = svc.topics.cluster(); c && svc.topics.cluster_mode()) {
    for (const auto& [id, b] : c->brokers)
      if (auto e = endpoint_on(b, listener)) out.push_back(*e);
    return out;
  }
  if (auto e = self_endpoint(svc, listener)) out.push_back(*e);
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
