// DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), KIP-554: the SCRAM users of
// broker/security/credential_store.h, validated and answered as Kafka's broker does.
#include <algorithm>
#include <map>
#include <set>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/security/credential_store.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using security::scram_mechanism;

task<protocol::describe_user_scram_credentials_response> describe_user_scram_credentials(
    broker_services& svc, request_context& rc, protocol::describe_user_scram_credentials_request& req) {
  protocol::describe_user_scram_credentials_response resp;
  if (!cluster_authorized(svc, rc, acl_operation::describe)) {  // Kafka: Describe on the cluster
    resp.error_code = error_code::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    co_return resp;
  }
  auto all = svc.credentials.describe();
  if (!all) {
    resp.error_code = error_code::unknown_server_error;
    resp.error_message = all.err().message;
    co_return resp;
  }
  auto describe = [](const std::string& user, const std::map<scram_mechanism, int32_t>& mechanisms) {
    protocol::describe_user_scram_credentials_response::describe_user_scram_credentials_result r;
    r.user = user;
    r.error_code = error_code::none;
    for (const auto& [m, iterations] : mechanisms) {
      protocol::describe_user_scram_credentials_response::credential_info info;
      info.mechanism = static_cast<int8_t>(m);
      info.iterations = iterations;
      r.credential_infos.push_back(info);
    }
    return r;
  };
  resp.error_code = error_code::none;
  if (!req.users || req.users->empty()) {
    for (const auto& [user, mechanisms] : *all) resp.results.push_back(describe(user, mechanisms));
    co_return resp;
  }
  std::map<std::string, int> seen;
  for (const auto& u : *req.users) ++seen[u.name];
  std::set<std::string> answered;
  for (const auto& u : *req.users) {
    if (!answered.insert(u.name).second) continue;  // one result per user
    protocol::describe_user_scram_credentials_response::describe_user_scram_credentials_result r;
    r.user = u.name;
    if (seen[u.name] > 1) {
      r.error_code = error_code::duplicate_resource;
      r.error_message = "Cannot describe SCRAM credentials for the same user twice in a single request: " + u.name;
    } else if (auto it = all->find(u.name); it == all->end()) {
      r.error_code = error_code::resource_not_found;
      r.error_message = "Attempt to describe a user credential that does not exist: " + u.name;
    } else {
      r = describe(u.name, it->second);
    }
    resp.results.push_back(std::move(r));
  }
  co_return resp;
}

task<protocol::alter_user_scram_credentials_response> alter_user_scram_credentials(
    broker_services& svc, request_context& rc, protocol::alter_user_scram_credentials_request& req) {
  protocol::alter_user_scram_credentials_response resp;
  using result_t = protocol::alter_user_scram_credentials_response::alter_user_scram_credentials_result;
  // Kafka answers once per user, in the order users first appear (deletions, then upsertions); a user named by
  // two alterations of the same mechanism is a duplicate, and nothing of that user changes.
  std::vector<std::string> order;
  std::map<std::string, std::pair<error_code, std::string>> failed;
  // Kafka 4.4 (KRaft) refuses a user named twice in one request, whatever the mechanisms.
  std::map<std::string, int> count;
  auto note = [&](const std::string& user) {
    if (std::find(order.begin(), order.end(), user) == order.end()) order.push_back(user);
  };
  auto fail = [&](const std::string& user, error_code e, std::string m) {
    failed.try_emplace(user, e, std::move(m));
  };
  for (const auto& d : req.deletions) note(d.name), ++count[d.name];
  for (const auto& u : req.upsertions) note(u.name), ++count[u.name];
  if (!cluster_authorized(svc, rc, acl_operation::alter))  // Kafka: Alter on the cluster, every user refused
    for (const auto& user : order) fail(user, error_code::cluster_authorization_failed, "Cluster authorization failed.");
  auto all = svc.credentials.describe();
  for (const auto& [user, n] : count)
    if (n > 1) fail(user, error_code::duplicate_resource, "A user credential cannot be altered twice in the same request");
  for (const auto& d : req.deletions) {
    const auto m = security::scram_mechanism_from_number(d.mechanism);
    if (d.name.empty()) fail(d.name, error_code::unacceptable_credential, "Username must not be empty");
    else if (m == scram_mechanism::unknown) fail(d.name, error_code::unsupported_sasl_mechanism, "Unknown SCRAM mechanism");
    else if (all && (!all->contains(d.name) || !all->at(d.name).contains(m)))
      fail(d.name, error_code::resource_not_found, "Attempt to delete a user credential that does not exist");
  }
  for (const auto& u : req.upsertions) {
    const auto m = security::scram_mechanism_from_number(u.mechanism);
    if (u.name.empty()) fail(u.name, error_code::unacceptable_credential, "Username must not be empty");
    else if (m == scram_mechanism::unknown) fail(u.name, error_code::unsupported_sasl_mechanism, "Unknown SCRAM mechanism");
    else if (u.iterations < security::scram_min_iterations)
      fail(u.name, error_code::unacceptable_credential, "Too few iterations");
    else if (u.iterations > security::scram_max_iterations)
      fail(u.name, error_code::unacceptable_credential, "Too many iterations");
    else if (u.salted_password.empty() || u.salt.empty())
      fail(u.name, error_code::unacceptable_credential, "Salt and salted password must not be empty");
  }
  for (const auto& user : order) {
    result_t r;
    r.user = user;
    if (auto f = failed.find(user); f != failed.end()) {
      r.error_code = f->second.first;
      r.error_message = f->second.second;
      resp.results.push_back(std::move(r));
      continue;
    }
    r.error_code = error_code::none;
    for (const auto& d : req.deletions) {
      if (d.name != user) continue;
      if (auto w = svc.credentials.alter(user, security::scram_mechanism_from_number(d.mechanism), std::nullopt); !w) {
        r.error_code = error_code::unknown_server_error;
        r.error_message = w.err().message;
      }
    }
    for (const auto& u : req.upsertions) {
      if (u.name != user || r.error_code != error_code::none) continue;
      const auto m = security::scram_mechanism_from_number(u.mechanism);
      auto credential = security::scram_credential_from_salted(m, u.salt, u.salted_password, u.iterations);
      if (auto w = svc.credentials.alter(user, m, credential); !w) {
        r.error_code = error_code::unknown_server_error;
        r.error_message = w.err().message;
      }
    }
    resp.results.push_back(std::move(r));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
