// ListConfigResources (key 74; KIP-1142, v0 was ListClientMetricsResources of KIP-714): the names of the resources
// that can have configs, by type: v0 lists client-metrics subscriptions only; v1 the types asked for (an empty list:
// every type). TOPIC (2): every topic; BROKER (4) and BROKER_LOGGER (8): the live brokers' ids; GROUP (32): the
// groups with dynamic configs, none here (Sluice has no group configs); CLIENT_METRICS (16): none (Sluice has no
// client telemetry, KIP-714). Any other type: UNSUPPORTED_VERSION. Topics the principal may not describe-configs
// are left out; brokers without DescribeConfigs on the cluster make the answer CLUSTER_AUTHORIZATION_FAILED.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "broker/handlers/authorization.h"
#include "broker/handlers/cluster_view.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::list_config_resources_response;

namespace {
constexpr int8_t kTopic = 2, kBroker = 4, kBrokerLogger = 8, kClientMetrics = 16, kGroup = 32;
}  // namespace

task<response> list_config_resources(broker_services& svc, request_context& rc,
                                     protocol::list_config_resources_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  std::set<int8_t> types;
  if (version == 0) {
    types = {kClientMetrics};
  } else if (req.resource_types.empty()) {
    types = {kTopic, kBroker, kBrokerLogger, kClientMetrics, kGroup};
  } else {
    for (int8_t t : req.resource_types) {
      if (t != kTopic && t != kBroker && t != kBrokerLogger && t != kClientMetrics && t != kGroup) {
        resp.error_code = error_code::unsupported_version;  // as Kafka 4.4 answers an unknown type
        co_return resp;
      }
      types.insert(t);
    }
  }
  auto add = [&](std::string name, int8_t type) {
    response::config_resource r;
    r.resource_name = std::move(name);
    r.resource_type = type;
    resp.config_resources.push_back(std::move(r));
  };
  if (types.contains(kTopic)) {
    std::vector<std::string> names;
    if (svc.topics.cluster_mode()) {
      if (auto c = svc.topics.cluster())
        for (const auto& [name, a] : c->topics) names.push_back(name);
    } else {
      for (const auto& t : svc.topics.all()) names.push_back(t->name);
    }
    std::sort(names.begin(), names.end());
    for (auto& n : names)
      if (authorized(svc, rc, acl_operation::describe_configs, resource_type::topic, n)) add(std::move(n), kTopic);
  }
  if (types.contains(kBroker) || types.contains(kBrokerLogger)) {
    if (!cluster_authorized(svc, rc, acl_operation::describe_configs)) {
      resp.error_code = error_code::cluster_authorization_failed;
      resp.config_resources.clear();
      co_return resp;
    }
    std::vector<int32_t> ids;
    for (const auto& ep : live_brokers(svc, rc.session.listener_name)) ids.push_back(ep.id);
    std::sort(ids.begin(), ids.end());
    for (int8_t type : {kBroker, kBrokerLogger})
      if (types.contains(type))
        for (int32_t id : ids) add(std::to_string(id), type);
  }
  // GROUP: Kafka lists the groups that have dynamic group configs (KIP-848's group.*); Sluice has none, so none.
  co_return resp;
}

}  // namespace sluice::broker::handlers
