#include "broker/groups/consumer_group.h"

#include <algorithm>

#include <re2/re2.h>

namespace sluice::groups {

std::string_view to_string(member_state s) {
  switch (s) {
    case member_state::stable: return "STABLE";
    case member_state::unrevoked_partitions: return "UNREVOKED_PARTITIONS";
    case member_state::unreleased_partitions: return "UNRELEASED_PARTITIONS";
    case member_state::unknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::string_view consumer_group_state::state_name() const {
  if (members.empty()) return "Empty";
  if (group_epoch > assignment_epoch) return "Assigning";
  for (const auto& [id, m] : members) {
    if (!m.is_reconciled_to(assignment_epoch)) return "Reconciling";
  }
  return "Stable";
}

int32_t consumer_group_state::partition_owner_epoch(const topic_uuid& topic, int32_t partition,
                                                    std::string_view except_member) const {
  for (const auto& [id, m] : members) {
    if (id == except_member) continue;
    for (const partition_map* owned : {&m.assigned, &m.pending_revocation}) {
      auto it = owned->find(topic);
      if (it != owned->end() && it->second.count(partition)) return m.member_epoch;
    }
  }
  return -1;
}

std::string consumer_group_state::assignor(const std::string& default_assignor) const {
  for (const auto& [id, m] : members) {
    if (m.server_assignor) return *m.server_assignor;
  }
  return default_assignor;
}

struct topic_regex::impl {
  explicit impl(const std::string& pattern) : re(pattern, RE2::Quiet) {}
  RE2 re;
};

topic_regex::topic_regex(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
topic_regex::~topic_regex() = default;

std::shared_ptr<const topic_regex> topic_regex::compile(const std::string& pattern, std::string* error) {
  auto i = std::make_unique<impl>(pattern);
  if (!i->re.ok()) {
    if (error) *error = i->re.error();
    return nullptr;
  }
  return std::shared_ptr<const topic_regex>(new topic_regex(std::move(i)));
}

bool topic_regex::matches(const std::string& topic) const { return RE2::FullMatch(topic, impl_->re); }

bool is_subset(const partition_map& subset, const partition_map& of) {
  for (const auto& [topic, parts] : subset) {
    auto it = of.find(topic);
    for (int32_t p : parts) {
      if (it == of.end() || !it->second.count(p)) return false;
    }
  }
  return true;
}

size_t partition_count(const partition_map& m) {
  size_t n = 0;
  for (const auto& [topic, parts] : m) n += parts.size();
  return n;
}

namespace {

/// Whether the member, by what it says it owns, still holds any of `revoking` (no list sent: assume it does).
bool still_owns(const std::optional<partition_map>& owned, const partition_map& revoking) {
  if (!owned) return true;
  for (const auto& [topic, parts] : *owned) {
    auto it = revoking.find(topic);
    if (it == revoking.end()) continue;
    for (int32_t p : parts) {
      if (it->second.count(p)) return true;
    }
  }
  return false;
}

/// The next assignment from `current` toward `target` (Kafka's computeNextAssignment): keep what both hold,
/// revoke the rest first, and only then add target partitions no other member owns.
consumer_member next_assignment(const consumer_member& member, int32_t epoch_if_revoking, int32_t target_epoch,
                                const partition_map& current, const partition_map& target,
                                const std::optional<partition_map>& owned,
                                const std::function<int32_t(const topic_uuid&, int32_t)>& owner_epoch) {
  partition_map keep, revoke, add;
  bool unreleased = false;
  std::set<topic_uuid> topics;
  for (const auto& [t, ps] : current) topics.insert(t);
  for (const auto& [t, ps] : target) topics.insert(t);
  static const std::set<int32_t> none;
  for (const auto& t : topics) {
    auto ti = target.find(t);
    auto ci = current.find(t);
    const auto& want = ti == target.end() ? none : ti->second;
    const auto& have = ci == current.end() ? none : ci->second;
    for (int32_t p : have) (want.count(p) ? keep[t] : revoke[t]).insert(p);
    for (int32_t p : want) {
      if (have.count(p)) continue;
      if (owner_epoch(t, p) != -1) {
        unreleased = true;
      } else {
        add[t].insert(p);
      }
    }
  }
  consumer_member next = member;
  next.pending_revocation.clear();
  // Assignment epochs: kept and revoking partitions keep theirs, added ones get the epoch they come with.
  auto epochs_for = [&](const partition_map& kept, const partition_map& added, int32_t added_epoch) {
    std::map<topic_uuid, std::map<int32_t, int32_t>> out;
    for (const auto& [t, ps] : kept) {
      for (int32_t p : ps) out[t][p] = member.assignment_epoch_of(t, p).value_or(member.member_epoch);
    }
    for (const auto& [t, ps] : added) {
      for (int32_t p : ps) out[t][p] = added_epoch;
    }
    return out;
  };
  if (!revoke.empty() && still_owns(owned, revoke)) {
    next.state = member_state::unrevoked_partitions;
    next.previous_member_epoch = next.member_epoch;  // Kafka's updateMemberEpoch, even when unchanged
    next.member_epoch = epoch_if_revoking;
    partition_map owned_now = keep;
    for (const auto& [t, ps] : revoke) owned_now[t].insert(ps.begin(), ps.end());
    next.partition_epochs = epochs_for(owned_now, {}, 0);
    next.assigned = std::move(keep);
    next.pending_revocation = std::move(revoke);
    return next;
  }
  next.partition_epochs = epochs_for(keep, add, target_epoch);
  for (auto& [t, ps] : add) keep[t].insert(ps.begin(), ps.end());
  next.state = unreleased ? member_state::unreleased_partitions : member_state::stable;
  next.previous_member_epoch = next.member_epoch;
  next.member_epoch = target_epoch;
  next.assigned = std::move(keep);
  return next;
}

}  // namespace

std::optional<consumer_member> reconcile(const consumer_member& member, int32_t target_epoch,
                                         const partition_map& target, const std::optional<partition_map>& owned,
                                         const std::function<int32_t(const topic_uuid&, int32_t)>& owner_epoch) {
  switch (member.state) {
    case member_state::stable:
      if (member.member_epoch == target_epoch) return member;
      return next_assignment(member, member.member_epoch, target_epoch, member.assigned, target, owned, owner_epoch);
    case member_state::unrevoked_partitions:
      if (still_owns(owned, member.pending_revocation)) return member;
      // Revocation done: Kafka moves on as from the next epoch (the revoked partitions are gone).
      return next_assignment(member, member.member_epoch + 1, target_epoch, member.assigned, target, owned,
                             owner_epoch);
    case member_state::unreleased_partitions:
      return next_assignment(member, member.member_epoch, target_epoch, member.assigned, target, owned, owner_epoch);
    case member_state::unknown:
      if (!owned || partition_count(*owned) != 0) return std::nullopt;
      return next_assignment(member, target_epoch, target_epoch, member.assigned, target, owned, owner_epoch);
  }
  return member;
}

bool is_known_assignor(std::string_view name) { return name == uniform_assignor || name == range_assignor; }

namespace {

struct candidate {
  std::string id;
  const assignor_member* member;
  size_t count = 0;
};

}  // namespace

std::map<std::string, partition_map> assign_uniform(const std::vector<assignor_member>& members,
                                                    const std::map<topic_uuid, int32_t>& partitions,
                                                    const std::map<std::string, partition_map>& previous) {
  std::map<std::string, partition_map> out;
  if (members.empty()) return out;
  std::map<std::string, const assignor_member*> by_id;
  for (const auto& m : members) {
    by_id[m.member_id] = &m;
    out[m.member_id];
  }
  // Every partition of a topic someone subscribes to, and who may take it.
  std::set<std::pair<topic_uuid, int32_t>> unassigned;
  for (const auto& [topic, count] : partitions) {
    // &topic = topic: clang before 16 cannot capture a structured binding (the SLUICE_FUZZ build).
    bool wanted = std::any_of(members.begin(), members.end(),
                              [&, &topic = topic](const auto& m) { return m.topics.count(topic); });
    if (!wanted) continue;
    for (int32_t p = 0; p < count; ++p) unassigned.insert({topic, p});
  }
  const size_t total = unassigned.size();
  // Quota for the even case (every member subscribed to the same topics): at most ceil(total / members).
  const size_t ceiling = (total + members.size() - 1) / members.size();
  auto count_of = [&](const std::string& id) { return partition_count(out[id]); };
  // Sticky part: keep previous partitions that are still valid, up to the ceiling.
  for (const auto& [id, prev] : previous) {
    auto m = by_id.find(id);
    if (m == by_id.end()) continue;
    for (const auto& [topic, parts] : prev) {
      if (!m->second->topics.count(topic)) continue;
      for (int32_t p : parts) {
        if (count_of(id) >= ceiling) break;
        if (unassigned.erase({topic, p})) out[id][topic].insert(p);
      }
    }
  }
  // The rest, each to an eligible member with the fewest partitions (ties: member id order).
  for (const auto& [topic, p] : unassigned) {
    const std::string* best = nullptr;
    size_t best_count = 0;
    for (const auto& m : members) {
      if (!m.topics.count(topic)) continue;
      size_t c = count_of(m.member_id);
      if (!best || c < best_count) {
        best = &m.member_id;
        best_count = c;
      }
    }
    if (best) out[*best][topic].insert(p);
  }
  // Balance across different subscriptions: move a partition from a member holding two more than an eligible
  // member, until none can move (bounded by the number of partitions).
  for (size_t round = 0; round < total; ++round) {
    bool moved = false;
    for (const auto& donor : members) {
      auto& held = out[donor.member_id];
      for (auto ti = held.rbegin(); ti != held.rend() && !moved; ++ti) {
        for (const auto& taker : members) {
          if (taker.member_id == donor.member_id || !taker.topics.count(ti->first)) continue;
          if (count_of(taker.member_id) + 2 > count_of(donor.member_id) || ti->second.empty()) continue;
          int32_t p = *ti->second.rbegin();
          topic_uuid topic = ti->first;
          ti->second.erase(p);
          out[taker.member_id][topic].insert(p);
          moved = true;
          break;
        }
      }
      if (moved) break;
    }
    if (!moved) break;
  }
  for (auto& [id, m] : out) {
    for (auto it = m.begin(); it != m.end();) it = it->second.empty() ? m.erase(it) : std::next(it);
  }
  return out;
}

std::map<std::string, partition_map> assign_range(const std::vector<assignor_member>& members,
                                                  const std::map<topic_uuid, int32_t>& partitions) {
  std::map<std::string, partition_map> out;
  std::vector<const assignor_member*> sorted;
  for (const auto& m : members) {
    sorted.push_back(&m);
    out[m.member_id];
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->member_id < b->member_id; });
  for (const auto& [topic, count] : partitions) {
    std::vector<const assignor_member*> subscribed;
    for (auto* m : sorted) {
      if (m->topics.count(topic)) subscribed.push_back(m);
    }
    if (subscribed.empty()) continue;
    const int32_t n = static_cast<int32_t>(subscribed.size());
    int32_t start = 0;
    for (int32_t i = 0; i < n; ++i) {
      int32_t len = count / n + (i < count % n ? 1 : 0);
      for (int32_t p = start; p < start + len; ++p) out[subscribed[static_cast<size_t>(i)]->member_id][topic].insert(p);
      start += len;
    }
  }
  return out;
}

}  // namespace sluice::groups
