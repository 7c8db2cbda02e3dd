// DescribeConfigs (key 32): every config of a topic (value, source, synonyms, type) as Kafka 4.4's ConfigHelper
// lists them (KIP-133, KIP-226 sources and synonyms, KIP-569 types and documentation), and this broker's static
// configs, read-only.
#include <charconv>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/quota_manager.h"
#include "broker/topic_config.h"
#include "broker/topic_name.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_configs_response;
using resource = protocol::describe_configs_request::describe_configs_resource;

namespace {
// ConfigResource.Type: the types Kafka 4.4 knows (TOPIC 2, BROKER 4, BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32).
constexpr int8_t kTopicResource = 2, kBrokerResource = 4, kBrokerLoggerResource = 8, kClientMetricsResource = 16,
                 kGroupResource = 32;
constexpr int8_t kDefaultConfig = 5, kDynamicBrokerConfig = 2, kDynamicDefaultBrokerConfig = 3;

/// Kafka: a null or empty key list means every key.
bool wanted(const std::optional<std::vector<std::string>>& keys, std::string_view name) {
  if (!keys.has_value() || keys->empty()) return true;
  for (const auto& k : *keys)
    if (k == name) return true;
  return false;
}

response::describe_configs_result error_result(const resource& r, error_code code, std::string message) {
  response::describe_configs_result out;
  out.error_code = code;
  out.error_message = std::move(message);
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  return out;
}

/// One entry: the first synonym's source is the config's (DEFAULT_CONFIG when there is none); the synonyms go out
/// only when asked for (v1+); `documentation` is null unless asked for (v3+, KIP-569; Sluice has no texts, so it
/// stays null then too).
response::describe_configs_resource_result entry(std::string name, std::optional<std::string> value, bool read_only,
                                                 int8_t type, std::vector<config_synonym> synonyms,
                                                 bool include_synonyms) {
  response::describe_configs_resource_result c;
  c.name = std::move(name);
  c.value = std::move(value);
  c.config_source = synonyms.empty() ? kDefaultConfig : synonyms.front().source;
  c.is_default = c.config_source == kDefaultConfig;  // v0 only
  c.read_only = read_only;
  // PASSWORD keys (ssl.keystore.key, sasl.jaas.config, ...): Kafka never shows their values, nor their synonyms'.
  c.is_sensitive = type == 9;
  if (c.is_sensitive) c.value = std::nullopt;
  c.config_type = type;
  c.documentation = std::nullopt;
  if (include_synonyms)
    for (auto& s : synonyms) {
      response::describe_configs_synonym syn;
      syn.name = std::move(s.name);
      syn.value = c.is_sensitive ? std::nullopt : std::move(s.value);
      syn.source = s.source;
      c.synonyms.push_back(std::move(syn));
    }
  return c;
}

response::describe_configs_result describe_topic(const broker_services& svc, const topic& t, const resource& r,
                                                 bool synonyms) {
  response::describe_configs_result out;
  out.error_code = error_code::none;
  out.error_message = "";  // Kafka leaves the schema's default
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  for (const auto& key : topic_config_keys()) {
    if (!wanted(r.configuration_keys, key.name)) continue;
    auto override_it = t.configs.find(std::string(key.name));
    // Kafka lists an internal key (defineInternal) only when the topic sets it.
    if (key.internal && override_it == t.configs.end()) continue;
    std::string value = override_it != t.configs.end() ? override_it->second : topic_config_default(svc.config, key);
    out.configs.push_back(entry(std::string(key.name), std::move(value), false, topic_config_type(key.name),
                                topic_config_synonyms(svc.config, key, t.configs), synonyms));
  }
  return out;
}

response::describe_configs_result describe_broker(const broker_services& svc, const resource& r, bool synonyms) {
  response::describe_configs_result out;
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  out.error_code = error_code::none;
  out.error_message = "";  // Kafka leaves the schema's default
  // The dynamic broker configs (the replication throttle rates, KIP-73): this broker's own (DYNAMIC_BROKER_CONFIG)
  // over the cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG), both kept as the store's "brokers" entities.
  std::map<std::string, std::string> own, cluster_default;
  if (svc.quotas != nullptr)
    if (auto all = svc.quotas->entity_configs("brokers"); all) {  // one read for both entities
      if (auto it = all->find(default_quota_entity); it != all->end()) cluster_default = it->second;
      if (auto it = all->find(std::to_string(svc.config.broker_id)); it != all->end()) own = it->second;
    }
  auto dynamic_entry = [&](const std::string& name) -> std::optional<response::describe_configs_resource_result> {
    std::vector<config_synonym> chain;
    if (!r.resource_name.empty())
      if (auto it = own.find(name); it != own.end()) chain.push_back({name, it->second, kDynamicBrokerConfig});
    if (auto it = cluster_default.find(name); it != cluster_default.end())
      chain.push_back({name, it->second, kDynamicDefaultBrokerConfig});
    if (chain.empty()) return std::nullopt;
    auto value = chain.front().value;
    return entry(name, std::move(value), false, 5 /* LONG */, std::move(chain), synonyms);
  };
  // Kafka: "" is the cluster-wide dynamic default resource: only the dynamic defaults set there.
  if (r.resource_name.empty()) {
    for (const auto& [name, value] : cluster_default)
      if (wanted(r.configuration_keys, name))
        if (auto e = dynamic_entry(name)) out.configs.push_back(std::move(*e));
    return out;
  }
  for (std::string_view key : quota_manager::dynamic_broker_configs)
    if (const std::string name(key); wanted(r.configuration_keys, name) && !svc.config.values.contains(name))
      if (auto e = dynamic_entry(name)) out.configs.push_back(std::move(*e));
  for (const auto& [name, value] : svc.config.values) {
    if (!wanted(r.configuration_keys, name)) continue;
    const bool set = svc.config.explicit_keys.contains(name);
    std::optional<std::string> shown = value;
    if (!set && value.empty()) shown.reset();  // a key with a null default that nothing set (log.retention.ms)
    // read_only: no dynamic broker configs (K10); set them in server.properties or --override.
    out.configs.push_back(entry(name, std::move(shown), true, broker_config_type(name),
                                broker_config_synonyms(svc.config, name), synonyms));
  }
  return out;
}

/// Java's Integer.parseInt (Kafka's resourceNameToBrokerId): an optional sign, digits, 32 bits; no spaces.
std::optional<int32_t> java_parse_int(std::string_view text) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) return std::nullopt;
  }
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return n;
}

bool known_resource_type(int8_t type) {
  return type == kTopicResource || type == kBrokerResource || type == kBrokerLoggerResource ||
         type == kClientMetricsResource || type == kGroupResource;
}

}  // namespace

task<response> describe_configs(broker_services& svc, request_context& rc, protocol::describe_configs_request& req) {
  response resp;
  const bool synonyms = req.include_synonyms && rc.header.api_version >= 1;
  // Kafka's ConfigHelper authorizes every resource first and throws for a type it does not know: the whole
  // request fails, INVALID_REQUEST for every resource (DescribeConfigsRequest.getErrorResponse).
  for (const auto& r : req.resources)
    if (!known_resource_type(r.resource_type)) {
      for (const auto& each : req.resources)
        resp.results.push_back(error_result(each, error_code::invalid_request,
                                            "Unexpected resource type " + std::to_string(r.resource_type) +
                                                " for resource " + r.resource_name));
      co_return resp;
    }
  for (const auto& r : req.resources) {
    // Kafka: DescribeConfigs on the topic, or on the cluster for a broker.
    if (r.resource_type == kTopicResource &&
        !authorized(svc, rc, acl_operation::describe_configs, resource_type::topic, r.resource_name)) {
      resp.results.push_back(error_result(r, error_code::topic_authorization_failed, "Topic authorization failed."));
      continue;
    }
    if (r.resource_type == kBrokerResource && !cluster_authorized(svc, rc, acl_operation::describe_configs)) {
      resp.results.push_back(error_result(r, error_code::cluster_authorization_failed, "Cluster authorization failed."));
      continue;
    }
    if (r.resource_type == kTopicResource) {
      // Kafka: Topic.validate first (INVALID_TOPIC_EXCEPTION), then the metadata cache.
      if (auto reason = invalid_topic_name_reason(r.resource_name)) {
        resp.results.push_back(error_result(r, error_code::invalid_topic_exception, std::move(*reason)));
        continue;
      }
      auto t = svc.topics.find(r.resource_name);
      if (!t) {
        // Kafka sets no message here: the schema's default "" goes out.
        resp.results.push_back(error_result(r, error_code::unknown_topic_or_partition, ""));
      } else {
        resp.results.push_back(describe_topic(svc, *t, r, synonyms));
      }
    } else if (r.resource_type == kBrokerResource) {
      const std::string& n = r.resource_name;
      if (!n.empty()) {
        auto parsed = java_parse_int(n);
        if (!parsed) {
          resp.results.push_back(
              error_result(r, error_code::invalid_request, "Broker id must be an integer, but it is: " + n));
          continue;
        }
        if (*parsed != svc.config.broker_id) {
          resp.results.push_back(error_result(r, error_code::invalid_request,
                                              "Unexpected broker id, expected " + std::to_string(svc.config.broker_id) +
                                                  " or empty string, but received " + n));
          continue;
        }
      }
      resp.results.push_back(describe_broker(svc, r, synonyms));
    } else {
      // BROKER_LOGGER, CLIENT_METRICS, GROUP: known to Kafka, not served here.
      resp.results.push_back(error_result(r, error_code::invalid_request,
                                          "Unsupported resource type " + std::to_string(r.resource_type)));
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
