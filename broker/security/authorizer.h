#pragma once
// The ACL authorizer (KIP-11; Kafka's AclAuthorizer/StandardAuthorizer rules), enabled by authorizer.class.name.
//
// A request of `principal` from `host` for `operation` on a resource is decided so:
//   1. a super user (super.users, "User:a;User:b") is allowed everything;
//   2. any DENY binding that matches (principal or User:*, host or *, operation or All) denies;
//   3. an ALLOW binding that matches allows; Describe is also allowed by Read, Write, Delete and Alter, and
//      DescribeConfigs by AlterConfigs;
//   4. with no binding at all on the resource (any principal), allow.everyone.if.no.acl.found decides;
//   5. otherwise denied.
// A binding applies to a resource when it is LITERAL with the same name or "*", or PREFIXED with a prefix of
// the name (KIP-290).
//
// The bindings live in the cluster store (ZooKeeper /kafka-acl, /kafka-acl-extended, or the embedded store), so
// every broker of a cluster sees the same; each broker re-reads them every `refresh_ms` on its own thread and
// at once after its own CreateAcls/DeleteAcls.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/periodic_thread.h"
#include "base/result.h"
#include "broker/security/acl.h"
#include "coordination/cluster_store.h"

namespace sluice::broker::security {

struct authorizer_options {
  std::vector<std::string> super_users;  // "User:admin"
  bool allow_everyone_if_no_acl_found = false;
  int32_t refresh_ms = 500;
};

/// Parses super.users: principals separated by ';' (Kafka's format), blanks trimmed.
std::vector<std::string> parse_super_users(const std::string& text);

class authorizer {
 public:
  authorizer(coordination::cluster_store& store, authorizer_options options);
  ~authorizer();
  authorizer(const authorizer&) = delete;
  authorizer& operator=(const authorizer&) = delete;

  /// Reads every binding from the store now. errc io_error/invalid_argument when the store cannot be read or
  /// holds a node Kafka would not have written (the previous bindings stay in force).
  result<void> reload();
  /// Starts the refresh thread (stopped by the destructor).
  void start();
  /// Stops the refresh thread (joins it; idempotent). The broker never destroys this object (broker.h), so
  /// close() calls this before the store closes: a refresh failing then would log after log::shutdown().
  void stop() { refresher_.stop(); }

  /// The decision for one action (the rules above). `host` is the client's IP address.
  bool authorize(const std::string& principal, const std::string& host, acl_operation op, resource_type type,
                 const std::string& name) const;
  /// Whether `principal` may perform `op` on some resource of `type` (Kafka's authorizeByResourceType, as
  /// InitProducerId asks for Write on any topic, KIP-679): a super user, an ALLOW binding of the principal for the
  /// operation not cancelled by a DENY of the same pattern, or no binding of the type at all with
  /// allow.everyone.if.no.acl.found.
  bool authorize_any(const std::string& principal, const std::string& host, acl_operation op, resource_type type) const;
  /// The operations `principal` may perform on the resource as Kafka's authorized-operations bit field
  /// (bit n = AclOperation n; KIP-430), over the operations that apply to `type`.
  int32_t authorized_operations(const std::string& principal, const std::string& host, resource_type type,
                                const std::string& name) const;

  /// The bindings that match `filter` (DescribeAcls).
  std::vector<acl_binding> describe(const acl_filter& filter) const;
  /// Adds bindings (already valid: invalid_binding_reason() empty); those present already are kept once.
  result<void> create(const std::vector<acl_binding>& bindings);
  /// Removes every binding that matches `filter` and returns them (DeleteAcls).
  result<std::vector<acl_binding>> remove(const acl_filter& filter);

 private:
  struct snapshot;
  std::shared_ptr<const snapshot> current() const;
  /// Read-modify-write of one node against the store's current content.
  result<void> rewrite(const coordination::acl_node_key& key,
                       const std::function<void(std::vector<acl_binding>&)>& change);

  coordination::cluster_store& store_;
  authorizer_options options_;
  mutable std::mutex mutex_;
  std::shared_ptr<const snapshot> snapshot_;
  std::mutex write_mutex_;  // one CreateAcls/DeleteAcls at a time on this broker
  periodic_thread refresher_;  // last member: stopped first
};

}  // namespace sluice::broker::security
