// DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), KIP-546: the quotas of users, client ids, users
// per client id and client addresses in their entity configs (/config/users/<user>, /config/clients/<client-id>,
// /config/users/<user>/clients/<client-id>, /config/ips/<ip>; "<default>" for a default entity), enforced by
// broker/quota_manager.h. Describing needs DescribeConfigs on the cluster, altering AlterConfigs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include <boost/asio/ip/address.hpp>

#include "base/logging.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/quota_manager.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {

bool is_quota_key(const std::string& key) {
  return std::find(std::begin(quota_keys), std::end(quota_keys), key) != std::end(quota_keys);
}

/// Integral keys (Kafka's LONG quota configs); request_percentage, controller_mutation_rate and
/// connection_creation_rate are doubles.
bool integral_key(const std::string& key) { return key == "producer_byte_rate" || key == "consumer_byte_rate"; }

std::string format_value(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ptr);
}

/// One quota entity: its (type, name) parts in Kafka's order (user before client-id), a null name for a
/// default, and where the store keeps its configs.
struct quota_entity {
  std::vector<std::pair<std::string, std::optional<std::string>>> parts;
  std::string store_type;
  std::string store_name;
};

std::optional<std::string> name_or_default(const std::string& stored) {
  if (stored == default_quota_entity) return std::nullopt;
  return stored;
}

/// Every entity that has quota configs, with them.
result<std::vector<std::pair<quota_entity, std::map<std::string, std::string>>>> all_entities(const quota_manager& q) {
  std::vector<std::pair<quota_entity, std::map<std::string, std::string>>> out;
  auto add = [&](const std::string& store_type, auto parts_of) -> result<void> {
    auto entities = q.entity_configs(store_type);
    if (!entities) return entities.err();
    for (auto& [name, configs] : *entities) out.push_back({quota_entity{parts_of(name), store_type, name}, std::move(configs)});
    return {};
  };
  using parts_t = std::vector<std::pair<std::string, std::optional<std::string>>>;
  if (auto r = add("users", [](const std::string& n) { return parts_t{{"user", name_or_default(n)}}; }); !r) return r.err();
  if (auto r = add("clients", [](const std::string& n) { return parts_t{{"client-id", name_or_default(n)}}; }); !r)
    return r.err();
  auto users = q.entity_names("users");
  if (!users) return users.err();
  for (const auto& user : *users) {
    auto r = add("users/" + user + "/clients", [&](const std::string& n) {
      return parts_t{{"user", name_or_default(user)}, {"client-id", name_or_default(n)}};
    });
    if (!r) return r.err();
  }
  if (auto r = add("ips", [](const std::string& n) { return parts_t{{"ip", name_or_default(n)}}; }); !r) return r.err();
  return out;
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
  const auto has_type = [&](const char* t) {
    return std::any_of(req.components.begin(), req.components.end(), [&](const auto& c) { return c.entity_type == t; });
  };
  if (has_type("ip") && (has_type("user") || has_type("client-id"))) {
    fail(error_code::invalid_request,
         "Invalid entity filter component combination, IP filter component should not be used with user or clientId "
         "filter component.");
    co_return resp;
  }
  auto entities = all_entities(*svc.quotas);
  if (!entities) {
    fail(error_code::unknown_server_error, entities.err().message);
    co_return resp;
  }
  resp.entries.emplace();
  for (const auto& [entity, configs] : *entities) {
    // Each component names a type the entity must have, matched by name (0), default (1) or any (2); strict:
    // the entity has no other types.
    bool match = !(req.strict && entity.parts.size() != req.components.size());
    for (const auto& c : req.components) {
      if (!match) break;
      auto part = std::find_if(entity.parts.begin(), entity.parts.end(), [&](const auto& p) { return p.first == c.entity_type; });
      if (part == entity.parts.end()) match = false;
      else if (c.match_type == 0) match = part->second.has_value() && *part->second == *c.match;
      else if (c.match_type == 1) match = !part->second.has_value();
    }
    if (!match) continue;
    response::entry_data e;
    for (const auto& [key, value] : configs) {
      if (!is_quota_key(key) && key != ip_quota_key) continue;  // SCRAM credentials share the users' configs
      double d = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), d);
      if (ec != std::errc()) continue;
      e.values.push_back({key, d, {}});
    }
    if (e.values.empty()) continue;
    for (const auto& [type, name] : entity.parts) {
      response::entity_data ent;
      ent.entity_type = type;
      ent.entity_name = name;  // null: the default entity
      e.entity.push_back(std::move(ent));
    }
    resp.entries->push_back(std::move(e));
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
    // Kafka reads the entity into a map: a type given twice counts once, with its last name.
    for (const auto& e : entry.entity) {
      auto same = std::find_if(out.entity.begin(), out.entity.end(), [&](const auto& o) { return o.entity_type == e.entity_type; });
      if (same != out.entity.end()) same->entity_name = e.entity_name;
      else out.entity.push_back({e.entity_type, e.entity_name, {}});
    }
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
    } else {
      // Kafka's validateEntity: known types once each, names not empty, ip a valid address and alone.
      std::map<std::string, std::optional<std::string>> parts;
      for (const auto& e : out.entity) {
        if (e.entity_type != "user" && e.entity_type != "client-id" && e.entity_type != "ip") {
          fail(error_code::invalid_request, "Unhandled client quota entity type: " + e.entity_type);
          break;
        }
        if (e.entity_type == "ip" && e.entity_name) {
          boost::system::error_code ec;
          boost::asio::ip::make_address(*e.entity_name, ec);
          if (ec) {
            fail(error_code::invalid_request, "Unable to resolve address " + *e.entity_name);
            break;
          }
        }
        if (e.entity_name && e.entity_name->empty()) {
          fail(error_code::invalid_request, "Invalid empty " + e.entity_type + " name");
          break;
        }
        parts[e.entity_type] = e.entity_name;
      }
      const bool is_ip = parts.contains("ip");
      if (out.error_code == error_code::none && is_ip && parts.size() > 1) {
        fail(error_code::invalid_request,
             "Invalid quota entity combination, IP entity should not be combined with User or ClientId");
      }
      if (out.error_code == error_code::none) {
        auto stored = [](const std::optional<std::string>& n) { return n.value_or(default_quota_entity); };
        if (is_ip) {
          store_type = "ips";
          name = stored(parts["ip"]);
        } else if (parts.size() == 2) {
          store_type = "users/" + stored(parts["user"]) + "/clients";
          name = stored(parts["client-id"]);
        } else if (parts.contains("user")) {
          store_type = "users";
          name = stored(parts["user"]);
        } else {
          store_type = "clients";
          name = stored(parts["client-id"]);
        }
        for (const auto& op : entry.ops) {
          if (is_ip ? op.key != ip_quota_key : !is_quota_key(op.key)) {
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
