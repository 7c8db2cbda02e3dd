#pragma once
// The handlers' side of the ACL authorizer (KIP-11): each handler asks, per resource of its request, what Kafka's
// KafkaApis asks, and answers the error Kafka answers (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
// Without authorizer.class.name every question is answered yes.
#include <string>

#include <algorithm>

#include "broker/broker_services.h"
#include "broker/quota_manager.h"
#include "broker/request_context.h"
#include "broker/security/authorizer.h"

namespace sluice::broker::handlers {

using security::acl_operation;
using security::resource_type;

/// May the session's principal, from its host, perform `op` on the resource?
inline bool authorized(const broker_services& svc, const request_context& rc, acl_operation op, resource_type type,
                       const std::string& name) {
  return svc.authorizer == nullptr ||
         svc.authorizer->authorize(rc.session.principal, rc.session.client_host, op, type, name);
}

/// `op` on the cluster resource.
inline bool cluster_authorized(const broker_services& svc, const request_context& rc, acl_operation op) {
  return authorized(svc, rc, op, resource_type::cluster, security::cluster_resource_name);
}

/// KIP-430 authorized operations of a group without an authorizer (every operation a group has): READ (3), DELETE (6),
/// DESCRIBE (8), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11), as bits; Kafka 4.4 answers 3400. DescribeGroups and
/// ConsumerGroupDescribe.
inline constexpr int32_t group_operations = 1 << 3 | 1 << 6 | 1 << 8 | 1 << 10 | 1 << 11;

/// Kafka's authorized-operations bit field (KIP-430) of the resource for the session; `all_supported` (the
/// operations of the type) without an authorizer, as Kafka answers then.
inline int32_t authorized_operations(const broker_services& svc, const request_context& rc, resource_type type,
                                     const std::string& name, int32_t all_supported) {
  if (svc.authorizer == nullptr) return all_supported;
  return svc.authorizer->authorized_operations(rc.session.principal, rc.session.client_host, type, name);
}

/// Quotas (broker/quota_manager.h): counts `bytes` against the session's user and client id; when over the quota,
/// the response carries the throttle time and the connection waits as long before its next request (KIP-219).
inline void throttle_for_quota(broker_services& svc, request_context& rc, quota_manager::kind k, int64_t bytes) {
  if (svc.quotas == nullptr) return;
  const std::string& p = rc.session.principal;
  const std::string user = p.starts_with("User:") ? p.substr(5) : p;
  const int32_t t = svc.quotas->record(k, user, rc.session.client_id, bytes, svc.clock.monotonic_ms());
  if (t <= 0) return;
  rc.throttle_time_ms = std::max(rc.throttle_time_ms, t);
  rc.mute_ms = std::max(rc.mute_ms, t);
}

/// request_percentage quotas (KIP-124): counts the time spent on this request so far, less its purgatory waits,
/// against the session's user and client id; called when the response is built, so a throttle goes into it.
inline void throttle_for_request_time(broker_services& svc, request_context& rc) {
  if (svc.quotas == nullptr || rc.request_quota_exempt) return;
  const std::string& p = rc.session.principal;
  const std::string user = p.starts_with("User:") ? p.substr(5) : p;
  const int64_t spent = std::max<int64_t>(0, svc.clock.monotonic_us() - rc.start_us - rc.waited_us);
  const int32_t t = svc.quotas->record_request_time(user, rc.session.client_id, spent, svc.clock.monotonic_ms());
  if (t <= 0) return;
  rc.throttle_time_ms = std::max(rc.throttle_time_ms, t);
  rc.mute_ms = std::max(rc.mute_ms, t);
}

}  // namespace sluice::broker::handlers
