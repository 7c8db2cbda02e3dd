// DescribeConfigs (key 32): every config of a topic (value, source, default, synonyms) as Kafka lists
// them (KIP-133, KIP-226 sources, KIP-569 types), and this broker's static configs, read-only.
#include "broker/handlers/handlers.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_configs_response;

namespace {
constexpr int8_t kTopicResource = 2, kBrokerResource = 4;
constexpr int8_t kDynamicTopicConfig = 1, kStaticBrokerConfig = 4, kDefaultConfig = 5;

bool wanted(const std::optional<std::vector<std::string>>& keys, std::string_view name) {
  if (!keys.has_value()) return true;
  for (const auto& k : *keys)
    if (k == name) return true;
  return false;
}

response::describe_configs_result describe_topic(const broker_services& svc, const topic& t,
                                                 const protocol::describe_configs_request::describe_configs_resource& r,
                                                 bool synonyms, int16_t version) {
  response::describe_configs_result out;
  out.error_code = error_code::none;
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  for (const auto& key : topic_config_keys()) {
    if (!wanted(r.configuration_keys, key.name)) continue;
    response::describe_configs_resource_result c;
    c.name = std::string(key.name);
    const std::string broker_key(key.broker_key);
    const bool broker_set = !broker_key.empty() && svc.config.explicit_keys.contains(broker_key);
    auto override_it = t.configs.find(c.name);
    if (override_it != t.configs.end()) {
      c.value = override_it->second;
      c.config_source = kDynamicTopicConfig;
    } else {
      c.value = topic_config_default(svc.config, key);
      c.config_source = broker_set ? kStaticBrokerConfig : kDefaultConfig;
    }
    c.is_default = c.config_source == kDefaultConfig;
    c.read_only = false;
    c.is_sensitive = false;
    c.config_type = topic_config_type(key.name);
    if (synonyms && version >= 1) {
      auto add = [&c](std::string name, std::string value, int8_t source) {
        response::describe_configs_synonym syn;
        syn.name = std::move(name);
        syn.value = std::move(value);
        syn.source = source;
        c.synonyms.push_back(std::move(syn));
      };
      if (override_it != t.configs.end()) add(c.name, override_it->second, kDynamicTopicConfig);
      if (broker_set) add(broker_key, svc.config.values.at(broker_key), kStaticBrokerConfig);
      add(broker_key.empty() ? c.name : broker_key, std::string(key.default_value), kDefaultConfig);
    }
    out.configs.push_back(std::move(c));
  }
  return out;
}

response::describe_configs_result describe_broker(const broker_services& svc,
                                                  const protocol::describe_configs_request::describe_configs_resource& r) {
  response::describe_configs_result out;
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  if (!r.resource_name.empty() && r.resource_name != std::to_string(svc.config.broker_id)) {
    out.error_code = error_code::invalid_request;
    out.error_message = "Unexpected broker id, expected " + std::to_string(svc.config.broker_id) + " or empty string, but received " + r.resource_name;
    return out;
  }
  out.error_code = error_code::none;
  for (const auto& [name, value] : svc.config.values) {
    if (!wanted(r.configuration_keys, name)) continue;
    response::describe_configs_resource_result c;
    c.name = name;
    c.value = value;
    c.read_only = true;  // no dynamic broker configs: set them in server.properties or --override
    c.config_source = svc.config.explicit_keys.contains(name) ? kStaticBrokerConfig : kDefaultConfig;
    c.is_default = c.config_source == kDefaultConfig;
    c.is_sensitive = false;
    c.config_type = 2;
    out.configs.push_back(std::move(c));
  }
  return out;
}

}  // namespace

task<response> describe_configs(broker_services& svc, request_context& rc, protocol::describe_configs_request& req) {
  response resp;
  for (const auto& r : req.resources) {
    if (r.resource_type == kTopicResource) {
      auto t = svc.topics.find(r.resource_name);
      if (!t) {
        response::describe_configs_result out;
        out.error_code = error_code::unknown_topic_or_partition;
        out.error_message = "Topic " + r.resource_name + " does not exist.";
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name;
        resp.results.push_back(std::move(out));
      } else {
        resp.results.push_back(describe_topic(svc, *t, r, req.include_synonyms, rc.header.api_version));
      }
    } else if (r.resource_type == kBrokerResource) {
      resp.results.push_back(describe_broker(svc, r));
    } else {
      response::describe_configs_result out;
      out.error_code = error_code::invalid_request;
      out.error_message = "Unsupported resource type " + std::to_string(r.resource_type);
      out.resource_type = r.resource_type;
      out.resource_name = r.resource_name;
      resp.results.push_back(std::move(out));
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
