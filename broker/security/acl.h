#pragma once
// ACLs (KIP-140; prefixed resource patterns KIP-290): the binding of a principal, host, operation and permission
// to a resource pattern, the filters of DescribeAcls/DeleteAcls, and Kafka's ZooKeeper JSON of an ACL node.
// The numeric values are the protocol's (AclOperation, AclPermissionType, ResourceType, PatternType).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "coordination/cluster_store.h"

namespace sluice::broker::security {

enum class resource_type : int8_t {
  unknown = 0, any = 1, topic = 2, group = 3, cluster = 4, transactional_id = 5, delegation_token = 6, user = 7,
};
enum class pattern_type : int8_t { unknown = 0, any = 1, match = 2, literal = 3, prefixed = 4 };
enum class acl_operation : int8_t {
  unknown = 0, any = 1, all = 2, read = 3, write = 4, create = 5, remove = 6 /* DELETE */, alter = 7, describe = 8,
  cluster_action = 9, describe_configs = 10, alter_configs = 11, idempotent_write = 12, create_tokens = 13,
  describe_tokens = 14,
};
enum class acl_permission : int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

/// Kafka's names: "Topic", "Read", "Allow", "LITERAL" ... (ZooKeeper JSON, kafka-acls output). "" when unknown.
std::string_view name_of(resource_type t);
std::string_view name_of(acl_operation o);
std::string_view name_of(acl_permission p);
std::string_view name_of(pattern_type p);
std::optional<resource_type> resource_type_named(std::string_view zk_name);
std::optional<acl_operation> operation_named(std::string_view zk_name);

/// The name of the cluster resource ("kafka-cluster").
inline constexpr const char* cluster_resource_name = "kafka-cluster";

/// One ACL: the resource pattern (type, name, literal or prefixed) and the entry. principal is "Type:name" with
/// "User:*" matching every user; host an IP address or "*".
struct acl_binding {
  resource_type type = resource_type::unknown;
  std::string name;
  pattern_type pattern = pattern_type::literal;
  std::string principal;
  std::string host = "*";
  acl_operation operation = acl_operation::unknown;
  acl_permission permission = acl_permission::unknown;
  bool operator==(const acl_binding&) const = default;
};

/// A DescribeAcls/DeleteAcls filter. ANY matches every value; nullopt strings match any; pattern MATCH matches
/// the literal and prefixed patterns that would apply to the named resource, and the "*" wildcard.
struct acl_filter {
  resource_type type = resource_type::any;
  std::optional<std::string> name;
  pattern_type pattern = pattern_type::any;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  acl_operation operation = acl_operation::any;
  acl_permission permission = acl_permission::any;
  bool matches(const acl_binding& b) const;
};

/// Why a binding cannot be created (CreateAcls answers INVALID_REQUEST with it), or "" when it can: a concrete
/// type, pattern literal or prefixed, operation and permission neither ANY nor UNKNOWN, a "Type:name" principal,
/// a cluster resource named kafka-cluster.
std::string invalid_binding_reason(const acl_binding& b);

/// Whether a binding names a type, pattern, operation or permission whose code is UNKNOWN or undefined: Kafka's
/// request parser refuses such a CreateAcls and closes the connection.
bool has_unknown_element(const acl_binding& b);

/// Why a filter has UNKNOWN or undefined elements ("" when it has none): Kafka's parser refuses such a
/// DescribeAcls/DeleteAcls and closes the connection.
std::string invalid_filter_reason(const acl_filter& f);

/// The ZooKeeper node of a binding's resource pattern.
coordination::acl_node_key node_key_of(const acl_binding& b);
/// {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}.
std::string encode_acl_node(const std::vector<acl_binding>& entries);
/// The bindings of one node; errc invalid_argument on JSON Kafka would not have written.
result<std::vector<acl_binding>> decode_acl_node(const coordination::acl_node_key& key, const std::string& data);

}  // namespace sluice::broker::security
