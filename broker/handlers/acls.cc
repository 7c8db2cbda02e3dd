// DescribeAcls (key 29), CreateAcls (30), DeleteAcls (31): the ACLs of broker/security/authorizer.h (KIP-140,
// prefixed patterns KIP-290), answered as Kafka's AclApis does. Describing needs Describe on the cluster, creating
// and deleting Alter on the cluster; without an authorizer every answer is SECURITY_DISABLED.
#include <map>
#include <tuple>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using security::acl_binding;
using security::acl_filter;

namespace {

constexpr const char* kNoAuthorizer = "No Authorizer is configured.";

template <typename Filter>
acl_filter filter_of(const Filter& f) {
  acl_filter out;
  out.type = static_cast<security::resource_type>(f.resource_type_filter);
  out.name = f.resource_name_filter;
  out.pattern = static_cast<security::pattern_type>(f.pattern_type_filter);
  out.principal = f.principal_filter;
  out.host = f.host_filter;
  out.operation = static_cast<security::acl_operation>(f.operation);
  out.permission = static_cast<security::acl_permission>(f.permission_type);
  return out;
}

/// Why CreateAcls/DeleteAcls are refused as a whole, every entry answering it: no authorizer, or no Alter on the
/// cluster.
std::optional<std::pair<error_code, std::string>> alter_refusal(broker_services& svc, request_context& rc) {
  if (svc.authorizer == nullptr) return std::make_pair(error_code::security_disabled, std::string(kNoAuthorizer));
  if (!cluster_authorized(svc, rc, acl_operation::alter))
    return std::make_pair(error_code::cluster_authorization_failed, std::string("Cluster authorization failed."));
  return std::nullopt;
}

template <typename Entry>
std::vector<Entry> refused_entries(size_t count, const std::pair<error_code, std::string>& why) {
  std::vector<Entry> out(count);
  for (auto& e : out) {
    e.error_code = why.first;
    e.error_message = why.second;
  }
  return out;
}

}  // namespace

task<protocol::describe_acls_response> describe_acls(broker_services& svc, request_context& rc,
                                                     protocol::describe_acls_request& req) {
  protocol::describe_acls_response resp;
  resp.error_code = error_code::none;
  const acl_filter filter = filter_of(req);
  if (auto why = security::invalid_filter_reason(filter); !why.empty()) {
    rc.close_connection = true;  // Kafka's DescribeAclsRequest refuses to parse it
    rc.close_reason = why;
    co_return resp;
  }
  if (svc.authorizer == nullptr) {
    resp.error_code = error_code::security_disabled;
    resp.error_message = kNoAuthorizer;
    co_return resp;
  }
  if (!cluster_authorized(svc, rc, acl_operation::describe)) {
    resp.error_code = error_code::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    co_return resp;
  }
  // One resource per pattern, its ACLs in the order they were created.
  std::map<std::tuple<int8_t, std::string, int8_t>, size_t> index;
  for (const auto& b : svc.authorizer->describe(filter)) {
    const auto key = std::make_tuple(static_cast<int8_t>(b.type), b.name, static_cast<int8_t>(b.pattern));
    auto [it, added] = index.try_emplace(key, resp.resources.size());
    if (added) {
      protocol::describe_acls_response::describe_acls_resource r;
      r.resource_type = static_cast<int8_t>(b.type);
      r.resource_name = b.name;
      r.pattern_type = static_cast<int8_t>(b.pattern);
      resp.resources.push_back(std::move(r));
    }
    protocol::describe_acls_response::acl_description d;
    d.principal = b.principal;
    d.host = b.host;
    d.operation = static_cast<int8_t>(b.operation);
    d.permission_type = static_cast<int8_t>(b.permission);
    resp.resources[it->second].acls.push_back(std::move(d));
  }
  co_return resp;
}

task<protocol::create_acls_response> create_acls(broker_services& svc, request_context& rc,
                                                 protocol::create_acls_request& req) {
  protocol::create_acls_response resp;
  std::vector<acl_binding> wanted;
  for (const auto& c : req.creations) {
    acl_binding b;
    b.type = static_cast<security::resource_type>(c.resource_type);
    b.name = c.resource_name;
    b.pattern = static_cast<security::pattern_type>(c.resource_pattern_type);
    b.principal = c.principal;
    b.host = c.host;
    b.operation = static_cast<security::acl_operation>(c.operation);
    b.permission = static_cast<security::acl_permission>(c.permission_type);
    if (security::has_unknown_element(b)) {
      rc.close_connection = true;  // Kafka's CreateAclsRequest refuses to parse it
      rc.close_reason = "an ACL creation with UNKNOWN elements";
      co_return resp;
    }
    wanted.push_back(std::move(b));
  }
  if (auto why = alter_refusal(svc, rc)) {
    resp.results = refused_entries<protocol::create_acls_response::acl_creation_result>(req.creations.size(), *why);
    co_return resp;
  }
  std::vector<acl_binding> valid;
  std::vector<std::string> reasons;
  for (auto& b : wanted) {
    auto why = security::invalid_binding_reason(b);
    if (why.empty()) valid.push_back(std::move(b));
    reasons.push_back(std::move(why));
  }
  result<void> written = valid.empty() ? result<void>{} : svc.authorizer->create(valid);
  for (const auto& why : reasons) {
    protocol::create_acls_response::acl_creation_result r;
    if (!why.empty()) {
      r.error_code = error_code::invalid_request;
      r.error_message = why;
    } else if (!written) {
      r.error_code = error_code::unknown_server_error;
      r.error_message = written.err().message;
    } else {
      r.error_code = error_code::none;
    }
    resp.results.push_back(std::move(r));
  }
  co_return resp;
}

task<protocol::delete_acls_response> delete_acls(broker_services& svc, request_context& rc,
                                                 protocol::delete_acls_request& req) {
  protocol::delete_acls_response resp;
  for (const auto& f : req.filters)
    if (auto why = security::invalid_filter_reason(filter_of(f)); !why.empty()) {
      rc.close_connection = true;  // Kafka's DeleteAclsRequest refuses to parse it
      rc.close_reason = why;
      co_return resp;
    }
  if (auto why = alter_refusal(svc, rc)) {
    resp.filter_results =
        refused_entries<protocol::delete_acls_response::delete_acls_filter_result>(req.filters.size(), *why);
    co_return resp;
  }
  for (const auto& f : req.filters) {
    protocol::delete_acls_response::delete_acls_filter_result r;
    r.error_code = error_code::none;
    const acl_filter filter = filter_of(f);
    if (auto removed = svc.authorizer->remove(filter); !removed) {
      r.error_code = error_code::unknown_server_error;
      r.error_message = removed.err().message;
    } else {
      for (const auto& b : *removed) {
        protocol::delete_acls_response::delete_acls_matching_acl m;
        m.error_code = error_code::none;
        m.resource_type = static_cast<int8_t>(b.type);
        m.resource_name = b.name;
        m.pattern_type = static_cast<int8_t>(b.pattern);
        m.principal = b.principal;
        m.host = b.host;
        m.operation = static_cast<int8_t>(b.operation);
        m.permission_type = static_cast<int8_t>(b.permission);
        r.matching_acls.push_back(std::move(m));
      }
    }
    resp.filter_results.push_back(std::move(r));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
