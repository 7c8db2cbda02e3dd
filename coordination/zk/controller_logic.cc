#include "coordination/zk/controller_logic.h"

#include <algorithm>

namespace sluice::coordination::zk {
namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

partition_state bumped(const partition_state& current, int32_t leader, std::vector<int32_t> isr,
                       int32_t controller_epoch) {
  partition_state s = current;
  s.leader = leader;
  s.isr = std::move(isr);
  s.leader_epoch = current.leader_epoch + 1;
  s.controller_epoch = controller_epoch;
  return s;
}

}  // namespace

std::optional<partition_state> initial_state(const std::vector<int32_t>& replicas, const cluster_liveness& live,
                                             int32_t controller_epoch) {
  partition_state s;
  for (int32_t b : replicas)
    if (live.eligible(b) && !contains(s.isr, b)) s.isr.push_back(b);
  if (s.isr.empty()) return std::nullopt;
  s.leader = s.isr.front();
  s.leader_epoch = 0;
  s.controller_epoch = controller_epoch;
  s.version = -1;
  return s;
}

std::optional<partition_state> next_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                          const cluster_liveness& live, bool unclean, int32_t controller_epoch) {
  const auto& isr = current.isr;
  const bool leader_live = current.leader >= 0 && live.live.contains(current.leader);

  if (!leader_live || live.shutting_down.contains(current.leader)) {
    // Elect from the ISR in assignment order (Kafka: offline and controlled-shutdown election strategies).
    for (int32_t b : replicas) {
      if (b == current.leader || !live.eligible(b) || !contains(isr, b)) continue;
      std::vector<int32_t> next_isr;
      for (int32_t m : isr)
        if (live.eligible(m)) next_isr.push_back(m);
      return bumped(current, b, std::move(next_isr), controller_epoch);
    }
    if (leader_live) {
      // Shutting-down leader with no other eligible ISR member: it keeps leading; only dead members go.
    } else {
      if (unclean) {
        for (int32_t b : replicas)
          if (live.eligible(b)) return bumped(current, b, {b}, controller_epoch);
      }
      // Offline: leader -1; the ISR loses dead members but keeps its last one.
      std::vector<int32_t> next_isr;
      for (int32_t m : isr)
        if (live.live.contains(m)) next_isr.push_back(m);
      if (next_isr.empty() && !isr.empty()) next_isr.push_back(isr.back());
      if (current.leader == -1 && next_isr == isr) return std::nullopt;
      return bumped(current, -1, std::move(next_isr), controller_epoch);
    }
  }

  // The leader stays: dead members leave the ISR; shutting-down followers too while another member remains.
  std::vector<int32_t> next_isr;
  for (int32_t m : isr)
    if (m == current.leader || live.live.contains(m)) next_isr.push_back(m);
  if (!live.shutting_down.contains(current.leader)) {
    std::vector<int32_t> without;
    for (int32_t m : next_isr)
      if (!live.shutting_down.contains(m)) without.push_back(m);
    if (!without.empty()) next_isr = std::move(without);
  }
  if (next_isr == isr) return std::nullopt;
  return bumped(current, current.leader, std::move(next_isr), controller_epoch);
}

std::optional<partition_state> preferred_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                               const cluster_liveness& live, int32_t controller_epoch) {
  if (replicas.empty() || current.version < 0) return std::nullopt;
  int32_t preferred = replicas.front();
  if (current.leader == preferred || !live.eligible(preferred) || !contains(current.isr, preferred))
    return std::nullopt;
  return bumped(current, preferred, current.isr, controller_epoch);
}

replica_plan plan_reassignment(const std::vector<int32_t>& original, const std::vector<int32_t>& target) {
  replica_plan plan;
  plan.replicas = target;
  for (int32_t b : original)
    if (!contains(target, b)) {
      plan.replicas.push_back(b);
      plan.removing.push_back(b);
    }
  for (int32_t b : target)
    if (!contains(original, b)) plan.adding.push_back(b);
  return plan;
}

partition_state state_for_replicas(const std::vector<int32_t>& replicas, const partition_state& current,
                                   const cluster_liveness& live, int32_t controller_epoch) {
  std::vector<int32_t> isr;
  for (int32_t m : current.isr)
    if (contains(replicas, m)) isr.push_back(m);
  int32_t leader = current.leader;
  if (leader < 0 || !contains(replicas, leader) || !live.eligible(leader)) {
    leader = -1;
    for (int32_t b : replicas)
      if (live.eligible(b) && contains(isr, b)) {
        leader = b;
        break;
      }
  }
  return bumped(current, leader, std::move(isr), controller_epoch);
}

std::optional<partition_state> unclean_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                             const cluster_liveness& live, int32_t controller_epoch) {
  for (int32_t b : replicas)
    if (live.eligible(b) && contains(current.isr, b)) {
      std::vector<int32_t> isr;
      for (int32_t m : current.isr)
        if (live.eligible(m)) isr.push_back(m);
      return bumped(current, b, std::move(isr), controller_epoch);
    }
  for (int32_t b : replicas)
    if (live.eligible(b)) return bumped(current, b, {b}, controller_epoch);
  return std::nullopt;
}

std::set<int32_t> imbalanced_brokers(const std::map<std::string, std::vector<std::vector<int32_t>>, std::less<>>& assignments,
                                     const std::map<std::string, std::vector<partition_state>, std::less<>>& states,
                                     int32_t percentage) {
  std::map<int32_t, std::pair<int, int>> counts;  // preferred broker -> (partitions, not led by it)
  for (const auto& [topic, replicas] : assignments) {
    auto st = states.find(topic);
    if (st == states.end()) continue;
    for (size_t p = 0; p < replicas.size() && p < st->second.size(); ++p) {
      if (replicas[p].empty() || st->second[p].version < 0) continue;
      auto& c = counts[replicas[p].front()];
      c.first++;
      if (st->second[p].leader != replicas[p].front()) c.second++;
    }
  }
  std::set<int32_t> out;
  for (const auto& [broker, c] : counts)
    if (c.first > 0 && static_cast<double>(c.second) / c.first > percentage / 100.0) out.insert(broker);
  return out;
}

}  // namespace sluice::coordination::zk
