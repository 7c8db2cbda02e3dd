// sluice acl list|create|delete (DescribeAcls, CreateAcls, DeleteAcls; KIP-140) and sluice user list|create|delete
// (DescribeUserScramCredentials, AlterUserScramCredentials; KIP-554). The options follow kafka-acls.sh and
// kafka-configs.sh --entity-type users; the enums are Kafka's (org.apache.kafka.common.acl and .resource).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>

#include "cli/commands.h"
#include "cli/failure.h"
#include "base/scram.h"
#include "protocol/messages/alter_user_scram_credentials.h"
#include "protocol/messages/create_acls.h"
#include "protocol/messages/delete_acls.h"
#include "protocol/messages/describe_acls.h"
#include "protocol/messages/describe_user_scram_credentials.h"

namespace sluice::cli {

namespace {

using protocol::error_code;

struct named {
  const char* name;
  int8_t code;
};
// AclOperation, ResourceType, PatternType, AclPermissionType: Kafka's codes.
constexpr named operations[] = {{"Any", 1},          {"All", 2},           {"Read", 3},
                                {"Write", 4},        {"Create", 5},        {"Delete", 6},
                                {"Alter", 7},        {"Describe", 8},      {"ClusterAction", 9},
                                {"DescribeConfigs", 10}, {"AlterConfigs", 11}, {"IdempotentWrite", 12},
                                {"CreateTokens", 13}, {"DescribeTokens", 14}};
constexpr named resource_types[] = {{"Any", 1}, {"Topic", 2}, {"Group", 3}, {"Cluster", 4}, {"TransactionalId", 5},
                                    {"DelegationToken", 6}, {"User", 7}};
constexpr named pattern_types[] = {{"Any", 1}, {"Match", 2}, {"Literal", 3}, {"Prefixed", 4}};
constexpr named permissions[] = {{"Any", 1}, {"Deny", 2}, {"Allow", 3}};

std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

/// By name, case and '-'/'_' ignored ("describe-configs", "DESCRIBE_CONFIGS", "DescribeConfigs").
template <size_t N>
int8_t code_of(const named (&table)[N], const std::string& text, const char* what) {
  std::string want;
  for (char c : lower(text))
    if (c != '-' && c != '_') want.push_back(c);
  std::string names;
  for (const auto& n : table) {
    if (lower(n.name) == want) return n.code;
    names += (names.empty() ? "" : ", ") + std::string(n.name);
  }
  usage_error(fmt::format("unknown {} '{}' ({})", what, text, names));
}
template <size_t N>
std::string name_of(const named (&table)[N], int8_t code) {
  for (const auto& n : table)
    if (n.code == code) return n.name;
  return fmt::format("Unknown({})", code);
}

/// The resources named by --topic/--group/--cluster/--transactional-id (each repeatable).
struct resource {
  int8_t type;
  std::string name;
};

void add_resource_options(po::options_description& o) {
  o.add_options()
      ("topic", po::value<std::vector<std::string>>()->composing(), "a topic (repeatable; * for every topic)")
      ("group", po::value<std::vector<std::string>>()->composing(), "a consumer group (repeatable; * for every group)")
      ("transactional-id", po::value<std::vector<std::string>>()->composing(), "a transactional id (repeatable)")
      ("cluster", po::bool_switch(), "the cluster resource (kafka-cluster)")
      ("resource-pattern-type", po::value<std::string>(),
       "literal or prefixed (create); any, match, literal or prefixed (list, delete; default literal for create, any "
       "otherwise)");
}

std::vector<resource> resources_of(const po::variables_map& vm) {
  std::vector<resource> out;
  auto add = [&](const char* opt, int8_t type) {
    if (vm.count(opt))
      for (const auto& n : vm[opt].as<std::vector<std::string>>()) out.push_back({type, n});
  };
  add("topic", 2);
  add("group", 3);
  add("transactional-id", 5);
  if (vm["cluster"].as<bool>()) out.push_back({4, "kafka-cluster"});
  return out;
}

std::vector<int8_t> operations_of(const po::variables_map& vm) {
  std::vector<int8_t> out;
  if (vm.count("operation"))
    for (const auto& o : vm["operation"].as<std::vector<std::string>>()) out.push_back(code_of(operations, o, "operation"));
  return out;
}

std::string principal_checked(const std::string& p) {
  const auto colon = p.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == p.size())
    usage_error(fmt::format("a principal is TYPE:NAME (User:alice), got '{}'", p));
  return p;
}

boost::json::object acl_json(int8_t rtype, const std::string& rname, int8_t pattern, const std::string& principal,
                             const std::string& host, int8_t op, int8_t perm) {
  return {{"resource_type", name_of(resource_types, rtype)}, {"resource_name", rname},
          {"pattern_type", name_of(pattern_types, pattern)}, {"principal", principal},
          {"host", host},
          {"operation", name_of(operations, op)},
          {"permission", name_of(permissions, perm)}};
}

/// The filters of list and delete: every (resource, principal, operation) combination asked for.
struct acl_filter {
  int8_t type = 1;  // Any
  std::optional<std::string> name;
  int8_t pattern = 1;  // Any
  std::optional<std::string> principal, host;
  int8_t op = 1, perm = 1;
};

std::vector<acl_filter> filters_of(const po::variables_map& vm) {
  const auto res = resources_of(vm);
  const int8_t pattern = vm.count("resource-pattern-type") ? code_of(pattern_types, vm["resource-pattern-type"].as<std::string>(), "pattern type") : 1;
  std::vector<std::optional<std::string>> principals{std::nullopt};
  if (vm.count("principal")) {
    principals.clear();
    for (const auto& p : vm["principal"].as<std::vector<std::string>>()) principals.push_back(principal_checked(p));
  }
  auto ops = operations_of(vm);
  if (ops.empty()) ops.push_back(1);
  const int8_t perm = vm.count("permission") ? code_of(permissions, vm["permission"].as<std::string>(), "permission") : 1;
  std::optional<std::string> host;
  if (vm.count("host")) host = vm["host"].as<std::string>();
  std::vector<acl_filter> out;
  std::vector<std::optional<resource>> rs;
  if (res.empty()) rs.push_back(std::nullopt);
  for (const auto& r : res) rs.push_back(r);
  for (const auto& r : rs)
    for (const auto& p : principals)
      for (int8_t op : ops) {
        acl_filter f;
        if (r) {
          f.type = r->type;
          f.name = r->name;
        }
        f.pattern = pattern;
        f.principal = p;
        f.host = host;
        f.op = op;
        f.perm = perm;
        out.push_back(f);
      }
  return out;
}

/// A filter into DescribeAcls' request or one of DeleteAcls' filters: the two have the same fields.
template <class Request>
void fill_filter(Request& r, const acl_filter& f) {
  r.resource_type_filter = f.type;
  r.resource_name_filter = f.name;
  r.pattern_type_filter = f.pattern;
  r.principal_filter = f.principal;
  r.host_filter = f.host;
  r.operation = f.op;
  r.permission_type = f.perm;
}

/// The ACLs that list and delete print: a JSON array under `key` with --json, else a table.
class acl_listing {
 public:
  void add(int8_t rtype, const std::string& rname, int8_t pattern, const std::string& principal, const std::string& host,
           int8_t op, int8_t perm) {
    json_.push_back(acl_json(rtype, rname, pattern, principal, host, op, perm));
    text_.add({name_of(resource_types, rtype), rname, name_of(pattern_types, pattern), principal, host,
               name_of(operations, op), name_of(permissions, perm)});
  }
  void print(context& ctx, const char* key) const {
    if (ctx.json()) print_json(ctx.out, boost::json::object{{key, json_}});
    else text_.print(ctx.out);
  }

 private:
  boost::json::array json_;
  table text_{{"RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"}};
};

void add_filter_options(po::options_description& o) {
  add_resource_options(o);
  o.add_options()
      ("principal", po::value<std::vector<std::string>>()->composing(), "only ACLs of this principal, User:NAME (repeatable)")
      ("operation", po::value<std::vector<std::string>>()->composing(), "only ACLs of this operation (repeatable)")
      ("permission", po::value<std::string>(), "allow or deny")
      ("host", po::value<std::string>(), "only ACLs of this host");
}

}  // namespace

// ---- acl -----------------------------------------------------------------------------------------------------------

int acl_list(context& ctx, const args_t& args) {
  po::options_description options("Options");
  add_filter_options(options);
  po::variables_map vm;
  if (!parse_args(ctx, args, "acl list", "acl list [--topic T | --group G | --cluster | --transactional-id X]... [--principal P]...",
                  "The ACLs that match (DescribeAcls; with no filter, every ACL). Needs Describe on the cluster.", options,
                  {}, {}, vm))
    return 0;
  const auto filters = filters_of(vm);  // bad option values before any connection
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::describe_acls, 1, 3);
  acl_listing listing;
  for (const auto& f : filters) {
    protocol::describe_acls_request req;
    fill_filter(req, f);
    const auto resp = c.call<protocol::describe_acls_response>(req, v);
    if (resp.error_code != error_code::none) kafka_failure(resp.error_code, resp.error_message, "DescribeAcls");
    for (const auto& r : resp.resources)
      for (const auto& a : r.acls)
        listing.add(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type);
  }
  listing.print(ctx, "acls");
  return 0;
}

int acl_create(context& ctx, const args_t& args) {
  po::options_description options("Options");
  add_resource_options(options);
  options.add_options()
      ("allow-principal", po::value<std::vector<std::string>>()->composing(), "User:NAME to allow (repeatable)")
      ("deny-principal", po::value<std::vector<std::string>>()->composing(), "User:NAME to deny (repeatable)")
      ("operation", po::value<std::vector<std::string>>()->composing(),
       "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All "
       "(repeatable)")
      ("host", po::value<std::string>()->default_value("*"), "the host the principal connects from");
  po::variables_map vm;
  if (!parse_args(ctx, args, "acl create",
                  "acl create (--allow-principal P | --deny-principal P)... --operation OP... (--topic T | --group G | "
                  "--cluster | --transactional-id X)... [--resource-pattern-type literal|prefixed] [--host H]",
                  "Adds ACLs (CreateAcls): every principal x operation x resource given. Needs Alter on the cluster.",
                  options, {}, {}, vm))
    return 0;
  const auto res = resources_of(vm);
  const auto ops = operations_of(vm);
  if (res.empty()) usage_error("acl create: name a resource (--topic, --group, --cluster or --transactional-id)");
  if (ops.empty()) usage_error("acl create: give at least one --operation");
  std::vector<std::pair<std::string, int8_t>> principals;
  for (const auto& [opt, perm] : {std::pair{"allow-principal", int8_t{3}}, std::pair{"deny-principal", int8_t{2}}})
    if (vm.count(opt))
      for (const auto& p : vm[opt].as<std::vector<std::string>>()) principals.emplace_back(principal_checked(p), perm);
  if (principals.empty()) usage_error("acl create: give --allow-principal or --deny-principal");
  const int8_t pattern =
      vm.count("resource-pattern-type") ? code_of(pattern_types, vm["resource-pattern-type"].as<std::string>(), "pattern type") : 3;
  if (pattern != 3 && pattern != 4) usage_error("acl create: --resource-pattern-type is literal or prefixed");
  protocol::create_acls_request req;
  const std::string host = vm["host"].as<std::string>();
  for (const auto& r : res)
    for (const auto& [p, perm] : principals)
      for (int8_t op : ops) {
        protocol::create_acls_request::acl_creation a;
        a.resource_type = r.type;
        a.resource_name = r.name;
        a.resource_pattern_type = pattern;
        a.principal = p;
        a.host = host;
        a.operation = op;
        a.permission_type = perm;
        req.creations.push_back(std::move(a));
      }
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::create_acls, 1, 3);
  const auto resp = c.call<protocol::create_acls_response>(req, v);
  boost::json::array out;
  table t({"RESOURCE-TYPE", "RESOURCE-NAME", "PRINCIPAL", "OPERATION", "PERMISSION", "STATUS"});
  bool failed = false;
  for (size_t i = 0; i < req.creations.size(); ++i) {
    const auto& a = req.creations[i];
    const auto e = i < resp.results.size() ? resp.results[i].error_code : error_code::unknown_server_error;
    const auto msg = i < resp.results.size() ? resp.results[i].error_message : std::nullopt;
    failed |= e != error_code::none;
    auto o = acl_json(a.resource_type, a.resource_name, a.resource_pattern_type, a.principal, a.host, a.operation, a.permission_type);
    o["error"] = e == error_code::none ? boost::json::value(nullptr) : boost::json::value(protocol::error_name(e));
    o["error_message"] = msg && !msg->empty() ? boost::json::value(*msg) : boost::json::value(nullptr);
    out.push_back(std::move(o));
    t.add({name_of(resource_types, a.resource_type), a.resource_name, a.principal, name_of(operations, a.operation),
           name_of(permissions, a.permission_type), e == error_code::none ? "OK" : kafka_error_text(e, msg)});
  }
  if (ctx.json()) print_json(ctx.out, boost::json::object{{"acls", out}});
  else t.print(ctx.out);
  return failed ? static_cast<int>(exit_code::kafka_error) : 0;
}

int acl_delete(context& ctx, const args_t& args) {
  po::options_description options("Options");
  add_filter_options(options);
  po::variables_map vm;
  if (!parse_args(ctx, args, "acl delete", "acl delete (--topic T | --group G | --cluster | --transactional-id X)... [--principal P]... [--operation OP]...",
                  "Removes the ACLs that match (DeleteAcls), and lists them. Needs Alter on the cluster.", options, {}, {}, vm))
    return 0;
  if (resources_of(vm).empty())
    usage_error("acl delete: name a resource (--topic, --group, --cluster or --transactional-id; --topic '*' for the wildcard ACLs)");
  protocol::delete_acls_request req;
  for (const auto& f : filters_of(vm)) {
    protocol::delete_acls_request::delete_acls_filter d;
    fill_filter(d, f);
    req.filters.push_back(std::move(d));
  }
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::delete_acls, 1, 3);
  const auto resp = c.call<protocol::delete_acls_response>(req, v);
  acl_listing listing;
  for (const auto& fr : resp.filter_results) {
    if (fr.error_code != error_code::none) kafka_failure(fr.error_code, fr.error_message, "DeleteAcls");
    for (const auto& m : fr.matching_acls) {
      if (m.error_code != error_code::none) kafka_failure(m.error_code, m.error_message, "DeleteAcls");
      listing.add(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation, m.permission_type);
    }
  }
  listing.print(ctx, "deleted");
  return 0;
}

// ---- user ----------------------------------------------------------------------------------------------------------

int user_list(context& ctx, const args_t& args) {
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_args(ctx, args, "user list", "user list [NAME...]",
                  "SCRAM users with their mechanisms and iteration counts (DescribeUserScramCredentials; no name: every "
                  "user). Needs Describe on the cluster.",
                  options, "user", vm))
    return 0;
  protocol::describe_user_scram_credentials_request req;
  if (vm.count("user")) {
    std::vector<protocol::describe_user_scram_credentials_request::user_name> users;
    for (const auto& n : vm["user"].as<std::vector<std::string>>()) users.push_back({n, {}});
    req.users = std::move(users);
  } else {
    req.users = std::nullopt;
  }
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::describe_user_scram_credentials, 0, 0);
  const auto resp = c.call<protocol::describe_user_scram_credentials_response>(req, v);
  if (resp.error_code != error_code::none) kafka_failure(resp.error_code, resp.error_message, "DescribeUserScramCredentials");
  boost::json::array out;
  table t({"USER", "MECHANISM", "ITERATIONS"});
  bool failed = false;
  for (const auto& r : resp.results) {
    boost::json::array creds;
    if (r.error_code != error_code::none) {
      failed = true;
      t.add({r.user, kafka_error_text(r.error_code, r.error_message), ""});
    }
    for (const auto& ci : r.credential_infos) {
      const auto known = scram::scram_mechanism_name(scram::scram_mechanism_from_number(ci.mechanism));
      const std::string mech = known.empty() ? fmt::format("Unknown({})", ci.mechanism) : std::string(known);
      creds.push_back(boost::json::object{{"mechanism", mech}, {"iterations", ci.iterations}});
      t.add({r.user, mech, std::to_string(ci.iterations)});
    }
    out.push_back(boost::json::object{
        {"user", r.user},
        {"credentials", std::move(creds)},
        {"error", r.error_code == error_code::none ? boost::json::value(nullptr) : boost::json::value(protocol::error_name(r.error_code))}});
  }
  if (ctx.json()) print_json(ctx.out, boost::json::object{{"users", out}});
  else t.print(ctx.out);
  return failed ? static_cast<int>(exit_code::kafka_error) : 0;
}

namespace {

int alter_users(context& ctx, protocol::alter_user_scram_credentials_request& req) {
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::alter_user_scram_credentials, 0, 0);
  const auto resp = c.call<protocol::alter_user_scram_credentials_response>(req, v);
  boost::json::array out;
  table t({"USER", "STATUS"});
  bool failed = false;
  for (const auto& r : resp.results) {
    failed |= r.error_code != error_code::none;
    out.push_back(boost::json::object{
        {"user", r.user},
        {"error", r.error_code == error_code::none ? boost::json::value(nullptr) : boost::json::value(protocol::error_name(r.error_code))},
        {"error_message", r.error_message && !r.error_message->empty() ? boost::json::value(*r.error_message) : boost::json::value(nullptr)}});
    t.add({r.user, r.error_code == error_code::none ? "OK" : kafka_error_text(r.error_code, r.error_message)});
  }
  if (ctx.json()) print_json(ctx.out, boost::json::object{{"users", out}});
  else t.print(ctx.out);
  return failed ? static_cast<int>(exit_code::kafka_error) : 0;
}

}  // namespace

int user_create(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("password", po::value<std::string>(), "the password (visible to other local users in the process list; see --password-file)")
      ("password-file", po::value<std::string>(), "read the password from the first line of this file (- for stdin)")
      ("mechanism", po::value<std::string>()->default_value("SCRAM-SHA-512"), "SCRAM-SHA-256 or SCRAM-SHA-512")
      ("iterations", po::value<int32_t>()->default_value(4096), "PBKDF2 iterations, 4096 to 16384 (Kafka's limits)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "user create", "user create NAME (--password P | --password-file F) [--mechanism M] [--iterations N]",
                  "Creates or updates a SCRAM credential (AlterUserScramCredentials, KIP-554): the salted password is made "
                  "here (PBKDF2 with a random 32-byte salt), the password never leaves this process. Needs Alter on the "
                  "cluster.",
                  options, "user", vm))
    return 0;
  if (!vm.count("user") || vm["user"].as<std::vector<std::string>>().size() != 1) usage_error("user create: give one user name");
  const auto name = vm["user"].as<std::vector<std::string>>().front();
  const auto mech = scram::scram_mechanism_from_name(vm["mechanism"].as<std::string>());
  if (mech == scram::scram_mechanism::unknown) usage_error("user create: --mechanism is SCRAM-SHA-256 or SCRAM-SHA-512");
  std::string password;
  if (vm.count("password") == vm.count("password-file")) usage_error("user create: give one of --password and --password-file");
  if (vm.count("password")) {
    password = vm["password"].as<std::string>();
  } else {
    const auto path = vm["password-file"].as<std::string>();
    if (path == "-") {
      std::getline(std::cin, password);
    } else {
      std::ifstream in(path);
      if (!in) usage_error("user create: cannot read " + path);
      std::getline(in, password);
    }
    if (!password.empty() && password.back() == '\r') password.pop_back();
  }
  if (password.empty()) usage_error("user create: the password is empty");
  protocol::alter_user_scram_credentials_request req;
  protocol::alter_user_scram_credentials_request::scram_credential_upsertion u;
  u.name = name;
  u.mechanism = static_cast<int8_t>(mech);
  u.iterations = vm["iterations"].as<int32_t>();
  // Kafka's bounds for SCRAM-SHA-256/512 (ScramMechanism): checked before the hashing, which is slow for large counts.
  if (u.iterations < scram::scram_min_iterations || u.iterations > scram::scram_max_iterations)
    usage_error(fmt::format("user create: --iterations must be {} to {}", scram::scram_min_iterations, scram::scram_max_iterations));
  u.salt = scram::random_bytes(32);
  u.salted_password = scram::scram_salted_password(mech, password, u.salt, u.iterations);
  req.upsertions.push_back(std::move(u));
  return alter_users(ctx, req);
}

int user_delete(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()("mechanism", po::value<std::string>(), "only this mechanism's credential (default: every one the user has)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "user delete", "user delete NAME... [--mechanism M]",
                  "Deletes SCRAM credentials (AlterUserScramCredentials). Needs Alter on the cluster.", options, "user", vm))
    return 0;
  if (!vm.count("user")) usage_error("user delete: give at least one user name");
  const auto names = vm["user"].as<std::vector<std::string>>();
  protocol::alter_user_scram_credentials_request req;
  if (vm.count("mechanism")) {
    const auto mech = scram::scram_mechanism_from_name(vm["mechanism"].as<std::string>());
    if (mech == scram::scram_mechanism::unknown) usage_error("user delete: --mechanism is SCRAM-SHA-256 or SCRAM-SHA-512");
    for (const auto& n : names) req.deletions.push_back({n, static_cast<int8_t>(mech), {}});
  } else {
    // Every mechanism the user has (DescribeUserScramCredentials first, as kafka-configs --delete-config needs them named).
    protocol::describe_user_scram_credentials_request d;
    std::vector<protocol::describe_user_scram_credentials_request::user_name> users;
    for (const auto& n : names) users.push_back({n, {}});
    d.users = std::move(users);
    auto& c = ctx.kafka().controller();
    const auto resp = c.call<protocol::describe_user_scram_credentials_response>(
        d, c.pick(protocol::api_key::describe_user_scram_credentials, 0, 0));
    if (resp.error_code != error_code::none) kafka_failure(resp.error_code, resp.error_message, "DescribeUserScramCredentials");
    for (const auto& r : resp.results) {
      if (r.error_code != error_code::none) kafka_failure(r.error_code, r.error_message, "user " + r.user);
      for (const auto& ci : r.credential_infos) req.deletions.push_back({r.user, ci.mechanism, {}});
    }
  }
  return alter_users(ctx, req);
}

}  // namespace sluice::cli
