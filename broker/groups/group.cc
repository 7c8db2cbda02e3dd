#include "broker/groups/group.h"

#include <algorithm>

#include "broker/groups/record_codec.h"

namespace sluice::groups {

std::string_view to_string(group_state s) {
  switch (s) {
    case group_state::empty: return "Empty";
    case group_state::preparing_rebalance: return "PreparingRebalance";
    case group_state::completing_rebalance: return "CompletingRebalance";
    case group_state::stable: return "Stable";
    case group_state::dead: return "Dead";
  }
  return "Dead";
}

bytes member::metadata_for(std::string_view protocol) const {
  for (const auto& p : protocols) {
    if (p.name == protocol) return p.metadata;
  }
  return {};
}

std::string member::vote(const std::set<std::string>& candidates) const {
  for (const auto& p : protocols) {
    if (candidates.count(p.name)) return p.name;
  }
  return {};
}

bool member::matches(const std::vector<protocol_metadata>& other) const { return protocols == other; }

member* group::find(std::string_view member_id) {
  for (auto& m : members) {
    if (m.member_id == member_id) return &m;
  }
  return nullptr;
}

const member* group::find(std::string_view member_id) const {
  for (const auto& m : members) {
    if (m.member_id == member_id) return &m;
  }
  return nullptr;
}

std::optional<std::string> group::static_member_id(const std::string& instance_id) const {
  auto it = static_members.find(instance_id);
  if (it == static_members.end()) return std::nullopt;
  return it->second;
}

std::optional<group_error> group::validate_member(std::string_view member_id,
                                                  const std::optional<std::string>& instance_id) const {
  if (instance_id) {
    auto current = static_member_id(*instance_id);
    if (!current) return group_error::unknown_member_id;
    if (*current != member_id) return group_error::fenced_instance_id;
    return std::nullopt;
  }
  if (!has(member_id)) return group_error::unknown_member_id;
  return std::nullopt;
}

void group::add(member m, join_group_callback cb) {
  if (members.empty()) protocol_type = m.protocol_type;
  if (!leader_id) leader_id = m.member_id;
  for (const auto& p : m.protocols) supported_protocols[p.name] += 1;
  if (m.group_instance_id) static_members[*m.group_instance_id] = m.member_id;
  m.awaiting_join = std::move(cb);
  if (m.awaiting_join) ++num_awaiting_join;
  members.push_back(std::move(m));
}

void group::remove(std::string_view member_id) {
  pending_members.erase(std::string(member_id));
  pending_sync_members.erase(std::string(member_id));
  auto it = std::find_if(members.begin(), members.end(),
                         [&](const member& m) { return m.member_id == member_id; });
  if (it != members.end()) {
    for (const auto& p : it->protocols) {
      if (--supported_protocols[p.name] <= 0) supported_protocols.erase(p.name);
    }
    if (it->is_awaiting_join()) --num_awaiting_join;
    if (it->group_instance_id) {
      auto s = static_members.find(*it->group_instance_id);
      if (s != static_members.end() && s->second == member_id) static_members.erase(s);
    }
    members.erase(it);
  }
  if (is_leader(member_id)) {
    leader_id = members.empty() ? std::nullopt : std::optional<std::string>(members.front().member_id);
  }
}

join_group_callback group::update_member(member& m, std::vector<protocol_metadata> protocols,
                                         int32_t rebalance_timeout_ms, int32_t session_timeout_ms,
                                         join_group_callback cb) {
  for (const auto& p : m.protocols) {
    if (--supported_protocols[p.name] <= 0) supported_protocols.erase(p.name);
  }
  m.protocols = std::move(protocols);
  for (const auto& p : m.protocols) supported_protocols[p.name] += 1;
  m.rebalance_timeout_ms = rebalance_timeout_ms;
  m.session_timeout_ms = session_timeout_ms;
  if (cb && !m.is_awaiting_join()) {
    ++num_awaiting_join;
  } else if (!cb && m.is_awaiting_join()) {
    --num_awaiting_join;
  }
  auto previous = std::move(m.awaiting_join);
  m.awaiting_join = std::move(cb);
  return previous;
}

bool group::invoke_join_callback(member& m, join_group_result r, std::vector<std::function<void()>>& out) {
  if (!m.is_awaiting_join()) return false;
  auto cb = std::move(m.awaiting_join);
  m.awaiting_join = nullptr;
  --num_awaiting_join;
  m.is_new = false;
  out.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  return true;
}

bool group::invoke_sync_callback(member& m, sync_group_result r, std::vector<std::function<void()>>& out) {
  if (!m.is_awaiting_sync()) return false;
  auto cb = std::move(m.awaiting_sync);
  m.awaiting_sync = nullptr;
  out.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  return true;
}

bool group::supports_protocols(const std::string& type,
                               const std::vector<protocol_metadata>& protocols) const {
  if (is(group_state::empty)) return !type.empty() && !protocols.empty();
  if (!protocol_type || *protocol_type != type) return false;
  for (const auto& p : protocols) {
    auto it = supported_protocols.find(p.name);
    if (it != supported_protocols.end() && it->second == static_cast<int>(members.size())) return true;
  }
  return false;
}

std::string group::select_protocol() const {
  std::set<std::string> candidates;
  for (const auto& [name, count] : supported_protocols) {
    if (count == static_cast<int>(members.size())) candidates.insert(name);
  }
  std::vector<std::pair<std::string, int>> votes;  // in order of first vote
  for (const auto& m : members) {
    std::string v = m.vote(candidates);
    auto it = std::find_if(votes.begin(), votes.end(), [&](const auto& e) { return e.first == v; });
    if (it == votes.end()) {
      votes.emplace_back(v, 1);
    } else {
      ++it->second;
    }
  }
  std::string best;
  int best_votes = -1;
  for (const auto& [name, n] : votes) {
    if (n > best_votes) {
      best = name;
      best_votes = n;
    }
  }
  return best;
}

int32_t group::rebalance_timeout_ms() const {
  int32_t t = 0;
  for (const auto& m : members) t = std::max(t, m.rebalance_timeout_ms);
  return t;
}

std::vector<std::string> group::not_yet_rejoined() const {
  std::vector<std::string> out;
  for (const auto& m : members) {
    if (!m.is_awaiting_join()) out.push_back(m.member_id);
  }
  return out;
}

void group::init_next_generation(int64_t now_ms) {
  generation_id += 1;
  if (!members.empty()) {
    protocol_name = select_protocol();
    transition_to(group_state::completing_rebalance, now_ms);
  } else {
    protocol_name.reset();
    transition_to(group_state::empty, now_ms);
  }
  compute_subscribed_topics();
  pending_sync_members.clear();
  sync_deadline.reset();
}

void group::compute_subscribed_topics() {
  if (protocol_type != "consumer") {
    subscribed_topics.reset();
    return;
  }
  if (members.empty()) {
    subscribed_topics = std::set<std::string>{};
    return;
  }
  if (!protocol_name) {
    subscribed_topics.reset();
    return;
  }
  std::set<std::string> topics;
  for (const auto& m : members) {
    auto t = decode_subscription_topics(m.metadata_for(*protocol_name));
    if (!t) {
      subscribed_topics.reset();
      return;
    }
    topics.insert(t->begin(), t->end());
  }
  subscribed_topics = std::move(topics);
}

bool group::is_subscribed_to(const std::string& topic) const {
  return !subscribed_topics || subscribed_topics->count(topic) != 0;
}

std::vector<join_group_member> group::current_member_metadata() const {
  std::vector<join_group_member> out;
  for (const auto& m : members) {
    out.push_back({m.member_id, m.group_instance_id, m.metadata_for(protocol_name.value_or(""))});
  }
  return out;
}

}  // namespace sluice::groups
