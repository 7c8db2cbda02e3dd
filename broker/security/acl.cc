#include "broker/security/acl.h"

#include <boost/json.hpp>
#include <system_error>

namespace sluice::broker::security {

namespace {

struct named_type {
  resource_type value;
  std::string_view name;
};
constexpr named_type kTypes[] = {
    {resource_type::topic, "Topic"},
    {resource_type::group, "Group"},
    {resource_type::cluster, "Cluster"},
    {resource_type::transactional_id, "TransactionalId"},
    {resource_type::delegation_token, "DelegationToken"},
    {resource_type::user, "User"},
};

struct named_operation {
  acl_operation value;
  std::string_view name;
};
constexpr named_operation kOperations[] = {
    {acl_operation::all, "All"},
    {acl_operation::read, "Read"},
    {acl_operation::write, "Write"},
    {acl_operation::create, "Create"},
    {acl_operation::remove, "Delete"},
    {acl_operation::alter, "Alter"},
    {acl_operation::describe, "Describe"},
    {acl_operation::cluster_action, "ClusterAction"},
    {acl_operation::describe_configs, "DescribeConfigs"},
    {acl_operation::alter_configs, "AlterConfigs"},
    {acl_operation::idempotent_write, "IdempotentWrite"},
    {acl_operation::create_tokens, "CreateTokens"},
    {acl_operation::describe_tokens, "DescribeTokens"},
};

error bad_node(const coordination::acl_node_key& key, const std::string& why) {
  return error{std::make_error_code(std::errc::invalid_argument),
               "ACL node " + key.pattern_type + "/" + key.resource_type + "/" + key.name + ": " + why};
}

}  // namespace

std::string_view name_of(resource_type t) {
  for (const auto& n : kTypes)
    if (n.value == t) return n.name;
  return t == resource_type::any ? "Any" : "";
}

std::string_view name_of(acl_operation o) {
  for (const auto& n : kOperations)
    if (n.value == o) return n.name;
  return o == acl_operation::any ? "Any" : "";
}

std::string_view name_of(acl_permission p) {
  switch (p) {
    case acl_permission::allow: return "Allow";
    case acl_permission::deny: return "Deny";
    case acl_permission::any: return "Any";
    default: return "";
  }
}

std::string_view name_of(pattern_type p) {
  switch (p) {
    case pattern_type::literal: return "LITERAL";
    case pattern_type::prefixed: return "PREFIXED";
    case pattern_type::match: return "MATCH";
    case pattern_type::any: return "ANY";
    default: return "";
  }
}

std::optional<resource_type> resource_type_named(std::string_view zk_name) {
  for (const auto& n : kTypes)
    if (n.name == zk_name) return n.value;
  return std::nullopt;
}

std::optional<acl_operation> operation_named(std::string_view zk_name) {
  for (const auto& n : kOperations)
    if (n.name == zk_name) return n.value;
  return std::nullopt;
}

bool acl_filter::matches(const acl_binding& b) const {
  // The resource pattern (Kafka's ResourcePatternFilter.matches).
  if (type != resource_type::any && type != b.type) return false;
  if (pattern != pattern_type::any && pattern != pattern_type::match && pattern != b.pattern) return false;
  if (name) {
    if (pattern == pattern_type::any || pattern == b.pattern) {
      if (*name != b.name) return false;
    } else if (b.pattern == pattern_type::literal) {
      if (*name != b.name && b.name != "*") return false;
    } else if (b.pattern == pattern_type::prefixed) {
      if (!name->starts_with(b.name)) return false;
    } else {
      return false;
    }
  }
  // The entry (AccessControlEntryFilter.matches).
  if (principal && *principal != b.principal) return false;
  if (host && *host != b.host) return false;
  if (operation != acl_operation::any && operation != b.operation) return false;
  if (permission != acl_permission::any && permission != b.permission) return false;
  return true;
}

std::string invalid_binding_reason(const acl_binding& b) {
  if (name_of(b.type).empty() || b.type == resource_type::any) return "Invalid resourceType " + std::to_string(int(b.type));
  if (b.pattern != pattern_type::literal && b.pattern != pattern_type::prefixed)
    return "Invalid patternType " + std::string(name_of(b.pattern).empty() ? "UNKNOWN" : name_of(b.pattern));
  if (b.operation == acl_operation::any || name_of(b.operation).empty())
    return "Invalid operation " + std::string(b.operation == acl_operation::any ? "ANY" : "UNKNOWN");
  if (b.permission != acl_permission::allow && b.permission != acl_permission::deny)
    return "Invalid permissionType " + std::string(b.permission == acl_permission::any ? "ANY" : "UNKNOWN");
  if (b.name.empty()) return "Invalid empty resource name specified";
  if (b.type == resource_type::cluster && b.name != cluster_resource_name)
    return "The only valid name for the CLUSTER resource is kafka-cluster";
  const size_t colon = b.principal.find(':');
  if (colon == std::string::npos)
    return "Could not parse principal from `" + b.principal +
           "` (no colon is present separating the principal type from the principal name)";
  if (b.host.empty()) return "Invalid host: the host must be an IP address or *";
  return {};
}

bool has_unknown_element(const acl_binding& b) {
  return (name_of(b.type).empty() && b.type != resource_type::any) || name_of(b.pattern).empty() ||
         (name_of(b.operation).empty() && b.operation != acl_operation::any) || name_of(b.permission).empty();
}

std::string invalid_filter_reason(const acl_filter& f) {
  if (f.type == resource_type::unknown || f.pattern == pattern_type::unknown || f.operation == acl_operation::unknown ||
      f.permission == acl_permission::unknown)
    return "Filter contain UNKNOWN elements";
  if (name_of(f.type).empty() || name_of(f.pattern).empty() || name_of(f.operation).empty() ||
      name_of(f.permission).empty())
    return "Filter contains values out of range";
  return {};
}

coordination::acl_node_key node_key_of(const acl_binding& b) {
  return {std::string(name_of(b.pattern)), std::string(name_of(b.type)), b.name};
}

std::string encode_acl_node(const std::vector<acl_binding>& entries) {
  boost::json::array acls;
  for (const auto& e : entries)
    acls.push_back(boost::json::object{{"principal", e.principal},
                                       {"permissionType", std::string(name_of(e.permission))},
                                       {"operation", std::string(name_of(e.operation))},
                                       {"host", e.host}});
  return boost::json::serialize(boost::json::object{{"version", 1}, {"acls", std::move(acls)}});
}

result<std::vector<acl_binding>> decode_acl_node(const coordination::acl_node_key& key, const std::string& data) {
  const auto type = resource_type_named(key.resource_type);
  if (!type) return bad_node(key, "unknown resource type");
  pattern_type pattern = pattern_type::literal;
  if (key.pattern_type == "PREFIXED") pattern = pattern_type::prefixed;
  else if (key.pattern_type != "LITERAL") return bad_node(key, "unknown pattern type");
  boost::system::error_code ec;
  auto v = boost::json::parse(data, ec);
  if (ec || !v.is_object()) return bad_node(key, "not a JSON object");
  const auto* acls = v.as_object().if_contains("acls");
  if (acls == nullptr || !acls->is_array()) return bad_node(key, "no acls array");
  std::vector<acl_binding> out;
  for (const auto& item : acls->as_array()) {
    if (!item.is_object()) return bad_node(key, "an ACL is not an object");
    const auto& o = item.as_object();
    auto text = [&](const char* field) -> std::optional<std::string> {
      const auto* f = o.if_contains(field);
      if (f == nullptr || !f->is_string()) return std::nullopt;
      return std::string(f->as_string());
    };
    auto principal = text("principal"), permission = text("permissionType"), operation = text("operation"),
         host = text("host");
    if (!principal || !permission || !operation || !host) return bad_node(key, "an ACL lacks a field");
    acl_binding b;
    b.type = *type;
    b.name = key.name;
    b.pattern = pattern;
    b.principal = *principal;
    b.host = *host;
    auto op = operation_named(*operation);
    if (!op) return bad_node(key, "unknown operation " + *operation);
    b.operation = *op;
    if (*permission == "Allow") b.permission = acl_permission::allow;
    else if (*permission == "Deny") b.permission = acl_permission::deny;
    else return bad_node(key, "unknown permissionType " + *permission);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace sluice::broker::security
