// AlterConfigs (key 33: the full set of a topic's overrides, KIP-133) and IncrementalAlterConfigs
// (key 44: SET / DELETE / APPEND / SUBTRACT per key, KIP-339). Topic resources only: broker configs are
// static here (server.properties and --override), so broker resources get INVALID_REQUEST.
#include <set>
#include <sstream>

#include "broker/handlers/handlers.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {
constexpr int8_t kTopicResource = 2;
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
  // Kafka answers a null message with NONE (ApiError.NONE).
  if (code != error_code::none) r.error_message = std::move(message);
  else r.error_message.reset();
  return r;
}

}  // namespace

task<protocol::alter_configs_response> alter_configs(broker_services& svc, request_context&,
                                                     protocol::alter_configs_request& req) {
  using result = protocol::alter_configs_response::alter_configs_resource_response;
  protocol::alter_configs_response resp;
  for (const auto& r : req.resources) {
    if (r.resource_type != kTopicResource) {
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, error_code::invalid_request,
                                                      "Only topic configs can be altered; broker configs are static"));
      continue;
    }
    // Kafka's ConfigAdminManager refuses null values before anything else: INVALID_REQUEST.
    // (A flag, not the text: a config named "" leaves the text empty.)
    std::string nulls;
    bool any_null = false;
    for (const auto& c : r.configs) {
      if (c.value.has_value()) continue;
      nulls += (any_null ? ", " : "") + c.name;
      any_null = true;
    }
    if (any_null) {
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, error_code::invalid_request,
                                                      "Null value not supported for : " + nulls));
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
    broker_services& svc, request_context&, protocol::incremental_alter_configs_request& req) {
  using result = protocol::incremental_alter_configs_response::alter_configs_resource_response;
  protocol::incremental_alter_configs_response resp;
  for (const auto& r : req.resources) {
    auto fail = [&](error_code code, std::string message) {
      resp.responses.push_back(resource_error<result>(r.resource_type, r.resource_name, code, std::move(message)));
    };
    // Kafka's ConfigAdminManager: a null value for any operation but DELETE is INVALID_REQUEST, checked
    // before the resource itself.
    std::string nulls;
    bool any_null = false;
    for (const auto& c : r.configs) {
      if (c.config_operation == kDelete || c.value.has_value()) continue;
      nulls += (any_null ? ", " : "") + c.name;
      any_null = true;
    }
    if (any_null) {
      fail(error_code::invalid_request, "Null value not supported for : " + nulls);
      continue;
    }
    if (r.resource_type != kTopicResource) {
      fail(error_code::invalid_request, "Only topic configs can be altered; broker configs are static");
      continue;
    }
    auto t = svc.topics.find(r.resource_name);
    if (!t) {
      fail(error_code::unknown_topic_or_partition, "Topic " + r.resource_name + " does not exist.");
      continue;
    }
    std::set<std::string> seen;
    std::map<std::string, std::string> overrides = t->configs;
    std::optional<std::pair<error_code, std::string>> problem;
    for (const auto& c : r.configs) {
      if (!seen.insert(c.name).second) {
        problem = {error_code::invalid_request, "Error due to duplicate config keys"};
        break;
      }
      const auto* key = find_topic_config_key(c.name);
      if (!key) {
        problem = {error_code::invalid_config, "Unknown topic config name: " + c.name};
        break;
      }
      if ((c.config_operation == kAppend || c.config_operation == kSubtract) && !topic_config_is_list(c.name)) {
        problem = {error_code::invalid_config, "Config value append is not allowed for config key: " + c.name};
        break;
      }
      const std::string value = c.value.value_or("");
      if (c.config_operation == kSet) {
        overrides[c.name] = value;
      } else if (c.config_operation == kDelete) {
        overrides.erase(c.name);
      } else if (c.config_operation == kAppend || c.config_operation == kSubtract) {
        auto current = split_list(overrides.count(c.name) ? overrides[c.name] : topic_config_default(svc.config, *key));
        for (const auto& item : split_list(value)) {
          auto it = std::find(current.begin(), current.end(), item);
          if (c.config_operation == kAppend && it == current.end()) current.push_back(item);
          if (c.config_operation == kSubtract && it != current.end()) current.erase(it);
        }
        overrides[c.name] = join_list(current);
      } else {
        problem = {error_code::invalid_request, "Unknown config operation " + std::to_string(c.config_operation)};
        break;
      }
    }
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
