#include "broker/security/authorizer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "base/logging.h"

namespace sluice::broker::security {

struct authorizer::snapshot {
  // (type, name) -> bindings, literal and prefixed apart.
  std::map<std::pair<resource_type, std::string>, std::vector<acl_binding>> literal;
  std::map<std::pair<resource_type, std::string>, std::vector<acl_binding>> prefixed;
};

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// The operations that apply to each resource type (Kafka's authorized-operations sets, KIP-430).
std::vector<acl_operation> operations_of(resource_type t) {
  using o = acl_operation;
  switch (t) {
    case resource_type::topic:
      return {o::read, o::write, o::create, o::remove, o::alter, o::describe, o::describe_configs, o::alter_configs};
    case resource_type::group: return {o::read, o::describe, o::remove, o::describe_configs, o::alter_configs};
    case resource_type::cluster:
      return {o::create, o::cluster_action, o::describe_configs, o::alter_configs, o::idempotent_write, o::alter,
              o::describe};
    case resource_type::transactional_id: return {o::describe, o::write};
    case resource_type::delegation_token: return {o::describe};
    case resource_type::user: return {o::create_tokens, o::describe_tokens};
    default: return {};
  }
}

bool allow_implies(acl_operation granted, acl_operation wanted) {
  if (granted == wanted || granted == acl_operation::all) return true;
  if (wanted == acl_operation::describe)
    return granted == acl_operation::read || granted == acl_operation::write || granted == acl_operation::remove ||
           granted == acl_operation::alter;
  if (wanted == acl_operation::describe_configs) return granted == acl_operation::alter_configs;
  return false;
}

}  // namespace

std::vector<std::string> parse_super_users(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    if (auto p = trim(text.substr(start, end - start)); !p.empty()) out.push_back(std::move(p));
    start = end + 1;
  }
  return out;
}

authorizer::authorizer(coordination::cluster_store& store, authorizer_options options)
    : store_(store), options_(std::move(options)), snapshot_(std::make_shared<snapshot>()) {}

authorizer::~authorizer() { refresher_.stop(); }

void authorizer::start() {
  refresher_.start(std::chrono::milliseconds(options_.refresh_ms), [this] {
    if (auto r = reload(); !r) log::warn("ACLs not refreshed: {}", r.err().message);
  });
}

result<void> authorizer::reload() {
  auto nodes = store_.acl_nodes();
  if (!nodes) return nodes.err();
  auto next = std::make_shared<snapshot>();
  for (const auto& [key, data] : *nodes) {
    auto bindings = decode_acl_node(key, data);
    if (!bindings) return bindings.err();
    if (bindings->empty()) continue;
    auto& into = key.pattern_type == "PREFIXED" ? next->prefixed : next->literal;
    into[{bindings->front().type, key.name}] = std::move(*bindings);
  }
  std::lock_guard lock(mutex_);
  snapshot_ = std::move(next);
  return {};
}

std::shared_ptr<const authorizer::snapshot> authorizer::current() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

bool authorizer::authorize(const std::string& principal, const std::string& host, acl_operation op,
                           resource_type type, const std::string& name) const {
  if (std::find(options_.super_users.begin(), options_.super_users.end(), principal) != options_.super_users.end())
    return true;
  const auto s = current();
  bool any_binding = false, allowed = false;
  auto consider = [&](const std::vector<acl_binding>& bindings) {
    for (const auto& b : bindings) {
      any_binding = true;
      if (b.principal != principal && b.principal != "User:*") continue;
      if (b.host != "*" && b.host != host) continue;
      if (b.permission == acl_permission::deny) {
        if (b.operation == op || b.operation == acl_operation::all) return false;
      } else if (allow_implies(b.operation, op)) {
        allowed = true;
      }
    }
    return true;
  };
  if (auto it = s->literal.find({type, name}); it != s->literal.end() && !consider(it->second)) return false;
  if (name != "*")
    if (auto it = s->literal.find({type, "*"}); it != s->literal.end() && !consider(it->second)) return false;
  for (auto it = s->prefixed.lower_bound({type, std::string()}); it != s->prefixed.end() && it->first.first == type; ++it)
    if (name.starts_with(it->first.second) && !consider(it->second)) return false;
  if (allowed) return true;
  return !any_binding && options_.allow_everyone_if_no_acl_found;
}

bool authorizer::authorize_any(const std::string& principal, const std::string& host, acl_operation op,
                               resource_type type) const {
  if (std::find(options_.super_users.begin(), options_.super_users.end(), principal) != options_.super_users.end())
    return true;
  const auto s = current();
  bool any_binding = false;
  for (const auto* m : {&s->literal, &s->prefixed}) {
    for (const auto& [key, bindings] : *m) {
      if (key.first != type) continue;
      any_binding = true;
      auto applies = [&](const acl_binding& b) {
        return (b.principal == principal || b.principal == "User:*") && (b.host == "*" || b.host == host);
      };
      bool allowed = false, denied = false;
      for (const auto& b : bindings) {
        if (!applies(b)) continue;
        if (b.permission == acl_permission::deny && (b.operation == op || b.operation == acl_operation::all)) denied = true;
        if (b.permission == acl_permission::allow && allow_implies(b.operation, op)) allowed = true;
      }
      if (allowed && !denied) return true;
    }
  }
  return !any_binding && options_.allow_everyone_if_no_acl_found;
}

int32_t authorizer::authorized_operations(const std::string& principal, const std::string& host, resource_type type,
                                          const std::string& name) const {
  int32_t bits = 0;
  for (auto op : operations_of(type))
    if (authorize(principal, host, op, type, name)) bits |= 1 << static_cast<int>(op);
  return bits;
}

std::vector<acl_binding> authorizer::describe(const acl_filter& filter) const {
  const auto s = current();
  std::vector<acl_binding> out;
  for (const auto* m : {&s->literal, &s->prefixed})
    for (const auto& [key, bindings] : *m)
      for (const auto& b : bindings)
        if (filter.matches(b)) out.push_back(b);
  return out;
}

result<void> authorizer::rewrite(const coordination::acl_node_key& key,
                                 const std::function<void(std::vector<acl_binding>&)>& change) {
  auto nodes = store_.acl_nodes();
  if (!nodes) return nodes.err();
  std::vector<acl_binding> entries;
  if (auto it = nodes->find(key); it != nodes->end()) {
    auto decoded = decode_acl_node(key, it->second);
    if (!decoded) return decoded.err();
    entries = std::move(*decoded);
  }
  const auto before = entries;
  change(entries);
  if (entries == before) return {};
  std::optional<std::string> data;
  if (!entries.empty()) data = encode_acl_node(entries);
  return store_.set_acl_node(key, data);
}

result<void> authorizer::create(const std::vector<acl_binding>& bindings) {
  std::lock_guard lock(write_mutex_);
  std::map<coordination::acl_node_key, std::vector<acl_binding>> by_node;
  for (const auto& b : bindings) by_node[node_key_of(b)].push_back(b);
  for (const auto& [key, adds] : by_node) {
    auto r = rewrite(key, [&](std::vector<acl_binding>& entries) {
      for (const auto& b : adds)
        if (std::find(entries.begin(), entries.end(), b) == entries.end()) entries.push_back(b);
    });
    if (!r) return r;
  }
  return reload();
}

result<std::vector<acl_binding>> authorizer::remove(const acl_filter& filter) {
  std::lock_guard lock(write_mutex_);
  if (auto r = reload(); !r) return r.err();
  std::vector<acl_binding> removed;
  std::map<coordination::acl_node_key, bool> touched;
  for (const auto& b : describe(filter)) touched[node_key_of(b)] = true;
  for (const auto& [key, unused] : touched) {
    auto r = rewrite(key, [&](std::vector<acl_binding>& entries) {
      auto keep = std::stable_partition(entries.begin(), entries.end(), [&](const acl_binding& b) { return !filter.matches(b); });
      removed.insert(removed.end(), keep, entries.end());
      entries.erase(keep, entries.end());
    });
    if (!r) return r.err();
  }
  if (auto r = reload(); !r) return r.err();
  return removed;
}

}  // namespace sluice::broker::security
