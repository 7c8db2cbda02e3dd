// DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), KIP-546: the quotas of users and client ids in
// their entity configs (/config/users/<user>, /config/clients/<client-id>, "<default>" for the default entity),
// enforced by broker/quota_manager.h. Describing needs DescribeConfigs on the cluster, altering AlterConfigs.
// Combined user+client-id entities and ip entities are refused with INVALID_REQUEST (not supported here).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "base/logging.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/quota_manager.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {

/// "user" -> "users", "client-id" -> "clients"; "" for any other entity type.
std::string store_type_of(const std::string& entity_type) {
  if (entity_type == "user") return "users";
  if (entity_type == "client-id") return "clients";
  return {};
}

bool is_quota_key(const std::string& key) {
  return std::find(std::begin(quota_keys), std::end(quota_keys), key) != std::end(quota_keys);
}

/// Integral keys (Kafka's LONG quota configs); request_percentage and controller_mutation_rate are doubles.
bool integral_key(const std::string& key) { return key == "producer_byte_rate" || key == "consumer_byte_rate"; }

std::string format_value(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ptr);
}

}  // namespace

task<protocol::describe_client_quotas_response> describe_client_quotas(
    broker_services& svc, request_context& rc, protocol::describe_client_quotas_request& req) {
  using response = protocol::describe_client_quotas_response;
  response resp;
  resp.error_code = error_code::none;
  auto fail = [&](error_code code, std::string message) {
    resp.error_code = code;
    resp.error_message = std::move(message);
    resp.entries.reset();
  };
  if (!cluster_authorized(svc, rc, acl_operation::describe_configs)) {
    fail(error_code::cluster_authorization_failed, "Cluster authorization failed.");
    co_return resp;
  }
  if (svc.quotas == nullptr) {
    fail(error_code::unknown_server_error, "client quotas are not available on this broker");
    co_return resp;
  }
  std::vector<std::string> seen;
  for (const auto& c : req.components) {
    if (std::find(seen.begin(), seen.end(), c.entity_type) != seen.end()) {
      fail(error_code::invalid_request, "Duplicate " + c.entity_type + " filter component entity type");
      co_return resp;
    }
    seen.push_back(c.entity_type);
    if (c.match_type < 0 || c.match_type > 2) {
      fail(error_code::invalid_request, "Unknown match type " + std::to_string(c.match_type));
      co_return resp;
    }
    if ((c.match_type == 0) != c.match.has_value()) {
      fail(error_code::invalid_request, c.match_type == 0 ? "Exact match of " + c.entity_type + " needs a name"
                                                          : "Only an exact match of " + c.entity_type + " takes a name");
      co_return resp;
    }
  }
  resp.entries.emplace();
  // Every entity here has one type; a filter over two types matches none, and strict needs exactly its types.
  const bool multi = req.components.size() > 1;
  if (multi || (req.strict && req.components.empty())) co_return resp;
  for (const char* entity_type : {"user", "client-id"}) {
    const protocol::describe_client_quotas_request::component_data* component = nullptr;
    if (!req.components.empty()) {
      if (req.components[0].entity_type != entity_type) continue;
      component = &req.components[0];
    }
    auto entities = svc.quotas->entity_configs(store_type_of(entity_type));
    if (!entities) {
      fail(error_code::unknown_server_error, entities.err().message);
      co_return resp;
    }
    for (const auto& [name, configs] : *entities) {
      const bool is_default = name == default_quota_entity;
      if (component) {
        if (component->match_type == 0 && (is_default || name != *component->match)) continue;
        if (component->match_type == 1 && !is_default) continue;
        if (component->match_type == 2 && is_default) continue;
      }
      response::entry_data e;
      for (const auto& [key, value] : configs) {
        if (!is_quota_key(key)) continue;  // SCRAM credentials share the users' configs
        double d = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), d);
        if (ec != std::errc()) continue;
        e.values.push_back({key, d, {}});
      }
      if (e.values.empty()) continue;
      response::entity_data ent;
      ent.entity_type = entity_type;
      ent.entity_name = is_default ? std::nullopt : std::optional<std::string>(name);  // null: the default entity
      e.entity.push_back(std::move(ent));
      resp.entries->push_back(std::move(e));
    }
  }
  co_return resp;
}

task<protocol::alter_client_quotas_response> alter_client_quotas(broker_services& svc, request_context& rc,
                                                                 protocol::alter_client_quotas_request& req) {
  using response = protocol::alter_client_quotas_response;
  response resp;
  const bool allowed = cluster_authorized(svc, rc, acl_operation::alter_configs);
  bool changed = false;
  for (const auto& entry : req.entries) {
    response::entry_data out;
    out.error_code = error_code::none;
    out.error_message = std::nullopt;  // Kafka: null unless there is an error
    for (const auto& e : entry.entity) out.entity.push_back({e.entity_type, e.entity_name, {}});
    auto fail = [&](error_code code, std::string message) {
      out.error_code = code;
      out.error_message = std::move(message);
    };
    std::string store_type;
    std::string name;
    if (!allowed) {
      fail(error_code::cluster_authorization_failed, "Cluster authorization failed.");
    } else if (svc.quotas == nullptr) {
      fail(error_code::unknown_server_error, "client quotas are not available on this broker");
    } else if (entry.entity.empty()) {
      fail(error_code::invalid_request, "Invalid empty client quota entity");
    } else if (entry.entity.size() > 1) {
      fail(error_code::invalid_request,
           "Quotas of a combined entity (" + entry.entity[0].entity_type + " and " + entry.entity[1].entity_type +
               ") are not supported by this broker: set user or client-id quotas");
    } else if ((store_type = store_type_of(entry.entity[0].entity_type)).empty()) {
      fail(error_code::invalid_request, "Unhandled client quota entity type: " + entry.entity[0].entity_type);
    } else if (entry.entity[0].entity_name && entry.entity[0].entity_name->empty()) {
      fail(error_code::invalid_request, "Invalid empty " + entry.entity[0].entity_type + " name");
    } else {
      name = entry.entity[0].entity_name.value_or(default_quota_entity);
      for (const auto& op : entry.ops) {
        if (!is_quota_key(op.key)) {
          fail(error_code::invalid_request, "Invalid configuration key " + op.key);
          break;
        }
        if (!op.remove && (!(op.value > 0) || (integral_key(op.key) && std::floor(op.value) != op.value))) {
          fail(error_code::invalid_request, "Invalid value " + format_value(op.value) + " for configuration key " +
                                                op.key + (integral_key(op.key) ? ": a positive whole number" : ": a positive number"));
          break;
        }
      }
    }
    if (out.error_code == error_code::none && !req.validate_only && !entry.ops.empty()) {
      auto all = svc.quotas->entity_configs(store_type);
      if (!all) {
        fail(error_code::unknown_server_error, all.err().message);
      } else {
        std::map<std::string, std::string> configs;
        if (auto it = all->find(name); it != all->end()) configs = it->second;
        for (const auto& op : entry.ops) {
          if (op.remove) configs.erase(op.key);
          else configs[op.key] = format_value(op.value);
        }
        if (auto w = svc.quotas->set_entity_configs(store_type, name, std::move(configs)); !w)
          fail(error_code::unknown_server_error, w.err().message);
        else
          changed = true;
      }
    }
    resp.entries.push_back(std::move(out));
  }
  if (changed) {
    if (auto r = svc.quotas->reload(); !r) log::warn("client quotas not reloaded: {}", r.err().message);
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
