// AlterConfigs (key 33: the full set of a topic's overrides, KIP-133) and IncrementalAlterConfigs
// (key 44: SET / DELETE / APPEND / SUBTRACT per key, KIP-339). Topic resources, and on broker resources the dynamic
// broker configs Sluice has: the replication throttle rates (KIP-73), kept as the store's "brokers" entities
// (ZooKeeper /config/brokers/<id>, /config/brokers/<default> for the resource named ""). Every other broker config
// is static (server.properties and --override): INVALID_REQUEST "Cannot update these configs dynamically".
#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <variant>
#include <set>
#include <sstream>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/quota_manager.h"
#include "broker/topic_config.h"
#include "broker/topic_name.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {
constexpr int8_t kTopicResource = 2, kBrokerResource = 4;

bool dynamic_broker_key(std::string_view name) {
  const auto& keys = quota_manager::dynamic_broker_configs;
  return std::find(std::begin(keys), std::end(keys), name) != std::end(keys);
}
constexpr int8_t kSet = 0, kDelete = 1, kAppend = 2, kSubtract = 3;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

template <typename Result>
Result resource_error(int8_t type, const std::string& name, error_code code, std::string message) {
  Result r;
  r.resource_type = type;
  r.resource_name = name;
  r.error_code = code;
  // Kafka answers a null message with NONE (ApiError.NONE), and with its authorization errors (Kafka 4.4).
  const bool no_message = code == error_code::none || code == error_code::topic_authorization_failed ||
                          code == error_code::cluster_authorization_failed;
  if (!no_message) r.error_message = std::move(message);
  else r.error_message.reset();
  return r;
}

/// Kafka's ConfigAdminManager.preprocess, the same for both APIs and before anything else: a resource named twice
/// (same type and name) is INVALID_REQUEST for each entry; then per resource a key given twice, then null values
/// (`null_ok`: the operations that may carry none, IncrementalAlterConfigs' DELETE), then the resource type.
template <typename Resources, typename NullOk>
std::vector<std::optional<std::pair<error_code, std::string>>> preprocess(const Resources& resources, NullOk null_ok) {
  std::vector<std::optional<std::pair<error_code, std::string>>> out(resources.size());
  std::map<std::pair<int8_t, std::string>, int> count;
  for (const auto& r : resources) ++count[{r.resource_type, r.resource_name}];
  for (size_t i = 0; i < resources.size(); ++i) {
    const auto& r = resources[i];
    if (count[{r.resource_type, r.resource_name}] > 1) {
      out[i] = {error_code::invalid_request, "Each resource must appear at most once."};
      continue;
    }
    std::set<std::string> names;
    bool duplicate = false;
    for (const auto& c : r.configs) duplicate |= !names.insert(c.name).second;
    if (duplicate) {
      out[i] = {error_code::invalid_request, "Error due to duplicate config keys"};
      continue;
    }
    std::string nulls;
    bool any_null = false;  // a flag, not the text: a config named "" leaves the text empty
    for (const auto& c : r.configs) {
      if (c.value.has_value() || null_ok(c)) continue;
      nulls += (any_null ? ", " : "") + c.name;
      any_null = true;
    }
    if (any_null) out[i] = {error_code::invalid_request, "Null value not supported for : " + nulls};
  }
  return out;
}

/// IncrementalAlterConfigs' operations applied in order to `configs` (Kafka's
/// ConfigurationControlManager.incrementalAlterConfigResource): SET, DELETE, and APPEND / SUBTRACT on a LIST key,
/// whose current value is the override or else `list_default(name)` (nullopt: not a LIST key, INVALID_CONFIG).
/// The first problem, nullopt when every operation applied.
template <typename Operations>
std::optional<std::pair<error_code, std::string>> apply_operations(
    std::map<std::string, std::string>& configs, const Operations& operations,
    const std::function<std::optional<std::string>(const std::string&)>& list_default) {
  for (const auto& c : operations) {
    const std::string value = c.value.value_or("");
    if (c.config_operation == kSet) {
      configs[c.name] = value;
    } else if (c.config_operation == kDelete) {
      configs.erase(c.name);
    } else if (c.config_operation == kAppend || c.config_operation == kSubtract) {
      auto fallback = list_default(c.name);
      if (!fallback)
        return std::make_pair(error_code::invalid_config, std::string("Can't ") +
                                                              (c.config_operation == kAppend ? "APPEND" : "SUBTRACT") +
                                                              " to key " + c.name + " because its type is not LIST.");
      auto current = split_list(configs.count(c.name) ? configs[c.name] : *fallback);
      for (const auto& item : split_list(value)) {
        auto it = std::find(current.begin(), current.end(), item);
        if (c.config_operation == kAppend && it == current.end()) current.push_back(item);
        if (c.config_operation == kSubtract && it != current.end()) current.erase(it);
      }
      configs[c.name] = join_list(current);
    } else {
      return std::make_pair(error_code::invalid_request, "Unknown config operation " + std::to_string(c.config_operation));
    }
  }
  return std::nullopt;
}

/// The controller's name check of a topic resource (ControllerConfigurationValidator.validateTopicName): "" is
/// the cluster default resource, which topics do not have; then Topic.validate.
std::optional<std::pair<error_code, std::string>> topic_name_problem(const std::string& name) {
  if (name.empty()) return std::make_pair(error_code::invalid_request, std::string("Default topic resources are not allowed."));
  if (auto reason = invalid_topic_name_reason(name)) return std::make_pair(error_code::invalid_topic_exception, *reason);
  return std::nullopt;
}

}  // namespace

/// A broker resource's entity in the store: "" is the cluster-wide default ("<default>"), else this broker's id
/// (Kafka sends a broker's resource to that broker); the error otherwise.
std::variant<std::string, std::pair<error_code, std::string>> broker_entity(const broker_services& svc, const std::string& name) {
  if (name.empty()) return std::string(default_quota_entity);
  int32_t id = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || ptr != name.data() + name.size())
    return std::make_pair(error_code::invalid_request, "Broker id must be an integer, but it is: " + name);
  if (id != svc.config.broker_id)
    return std::make_pair(error_code::invalid_request, "Unexpected broker id, expected " +
                                                           std::to_string(svc.config.broker_id) +
                                                           " or empty string, but received " + name);
  return name;
}

/// Replaces a broker entity's dynamic configs with `configs` (validate_only: checks only): every key must be a
/// dynamic one (else INVALID_REQUEST naming the others, Kafka's DynamicBrokerConfig.validateConfigs), every value a
/// LONG >= 0 (INVALID_CONFIG). Stored, then the quotas are re-read so the rates apply at once.
std::pair<error_code, std::string> set_broker_configs(broker_services& svc, const std::string& entity,
                                                      const std::map<std::string, std::string>& configs, bool validate_only) {
  std::string refused;
  for (const auto& [k, v] : configs)
    if (!dynamic_broker_key(k)) refused += (refused.empty() ? "" : ", ") + k;
  if (!refused.empty()) return {error_code::invalid_request, "Cannot update these configs dynamically: [" + refused + "]"};
  for (const auto& [k, v] : configs) {
    auto n = parse_config_long(v);
    if (!n) return {error_code::invalid_config, "Invalid value " + v + " for configuration " + k + ": Not a number of type LONG"};
    if (*n < 0) return {error_code::invalid_config, "Invalid value " + v + " for configuration " + k + ": Value must be at least 0"};
  }
  if (validate_only) return {error_code::none, ""};
  if (svc.quotas == nullptr) return {error_code::invalid_request, "Dynamic broker configs are not available here"};
  if (auto w = svc.quotas->set_entity_configs("brokers", entity, configs); !w)
    return {error_code::unknown_server_error, w.err().message};
  if (auto r = svc.quotas->reload(); !r) return {error_code::unknown_server_error, r.err().message};
  return {error_code::none, ""};
}

/// After preprocess: AlterConfigs on the topic, or on the cluster for a broker (Kafka authorizes first); then
/// topics, and brokers' dynamic configs, are altered here (other resource types are not).
std::optional<std::pair<error_code, std::string>> authorization_problem(broker_services& svc, request_context& rc,
                                                                        int8_t type, const std::string& name) {
  if (type == kTopicResource && !authorized(svc, rc, acl_operation::alter_configs, resource_type::topic, name))
    return std::make_pair(error_code::topic_authorization_failed, std::string("Topic authorization failed."));
  if (type != kTopicResource && !cluster_authorized(svc, rc, acl_operation::alter_configs))
    return std::make_pair(error_code::cluster_authorization_failed, std::string("Cluster authorization failed."));
  if (type != kTopicResource && type != kBrokerResource)
    return std::make_pair(error_code::invalid_request,
                          std::string("Only topic and broker configs can be altered"));
  return std::nullopt;
}

task<protocol::alter_configs_response> alter_configs(broker_services& svc, request_context& rc,
                                                     protocol::alter_configs_request& req) {
  using result = protocol::alter_configs_response::alter_configs_resource_response;
  protocol::alter_configs_response resp;
  const auto problems = preprocess(req.resources, [](const auto&) { return false; });
  for (size_t i = 0; i < req.resources.size(); ++i) {
    const auto& r = req.resources[i];
    auto problem = problems[i];
    if (!problem) problem = authorization_problem(svc, rc, r.resource_type, r.resource_name);
    if (!problem && r.resource_type == kBrokerResource) {
      auto entity = broker_entity(svc, r.resource_name);
      if (auto* bad = std::get_if<1>(&entity)) {
        resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, bad->first, bad->second));
        continue;
      }
      std::map<std::string, std::string> configs;  // AlterConfigs replaces the whole set
      for (const auto& c : r.configs) configs[c.name] = *c.value;
      auto [code, message] = set_broker_configs(svc, std::get<0>(entity), configs, req.validate_only);
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, code, std::move(message)));
      continue;
    }
    // The controller (ConfigurationControlManager.validateAlterConfig): the name, the values, then whether the
    // topic exists (topic_registry::set_configs checks the last two in that order).
    if (!problem) problem = topic_name_problem(r.resource_name);
    if (problem) {
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, problem->first, problem->second));
      continue;
    }
    std::map<std::string, std::string> overrides;
    for (const auto& c : r.configs) overrides[c.name] = *c.value;
    auto err = svc.topics.set_configs(r.resource_name, overrides, req.validate_only);
    resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, err.code, err.message));
  }
  co_return resp;
}

task<protocol::incremental_alter_configs_response> incremental_alter_configs(
    broker_services& svc, request_context& rc, protocol::incremental_alter_configs_request& req) {
  using result = protocol::incremental_alter_configs_response::alter_configs_resource_response;
  protocol::incremental_alter_configs_response resp;
  const auto problems = preprocess(req.resources, [](const auto& c) { return c.config_operation == kDelete; });
  for (size_t i = 0; i < req.resources.size(); ++i) {
    const auto& r = req.resources[i];
    auto fail = [&](error_code code, std::string message) {
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, code, std::move(message)));
    };
    if (auto denied = problems[i] ? std::nullopt : authorization_problem(svc, rc, r.resource_type, r.resource_name)) {
      fail(denied->first, std::move(denied->second));
      continue;
    }
    if (problems[i]) {
      fail(problems[i]->first, problems[i]->second);
      continue;
    }
    if (r.resource_type == kBrokerResource) {
      auto entity = broker_entity(svc, r.resource_name);
      if (auto* bad = std::get_if<1>(&entity)) {
        fail(bad->first, bad->second);
        continue;
      }
      auto configs = svc.quotas ? svc.quotas->broker_configs(std::get<0>(entity)) : std::map<std::string, std::string>{};
      // The dynamic broker configs are LONGs: no LIST among them.
      if (auto problem = apply_operations(configs, r.configs, [](const std::string&) { return std::nullopt; })) {
        fail(problem->first, problem->second);
        continue;
      }
      auto [code, message] = set_broker_configs(svc, std::get<0>(entity), configs, req.validate_only);
      fail(code, std::move(message));
      continue;
    }
    // The controller (ConfigurationControlManager.incrementalAlterConfigResource): each operation on the current
    // overrides (none for a topic that does not exist), then the name, the resulting values and whether the
    // topic exists.
    auto t = svc.topics.find(r.resource_name);
    std::map<std::string, std::string> overrides = t ? t->configs : std::map<std::string, std::string>{};
    auto problem = apply_operations(overrides, r.configs, [&](const std::string& name) -> std::optional<std::string> {
      const auto* key = find_topic_config_key(name);
      if (!key || !topic_config_is_list(name)) return std::nullopt;
      return topic_config_default(svc.config, *key);
    });
    if (!problem) problem = topic_name_problem(r.resource_name);
    if (problem) {
      fail(problem->first, problem->second);
      continue;
    }
    auto err = svc.topics.set_configs(r.resource_name, overrides, req.validate_only);
    fail(err.code, err.message);
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
