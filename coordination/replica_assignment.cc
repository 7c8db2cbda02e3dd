#include "coordination/replica_assignment.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace sluice::coordination {
namespace {

int32_t random_below(int32_t n) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return std::uniform_int_distribution<int32_t>(0, n - 1)(rng);
}

// Index of the j-th follower of a partition whose first replica is at `first` (Kafka's replicaIndex).
int32_t replica_index(int32_t first, int32_t shift, int32_t j, int32_t n) {
  int32_t s = 1 + (shift + j) % (n - 1);
  return (first + s) % n;
}

// Brokers ordered so that consecutive ones sit on different racks: racks in name order, each rack's
// brokers in id order, taken one per rack in turn (Kafka's getRackAlternatedBrokerList).
std::vector<int32_t> rack_alternated(const std::vector<broker_rack>& brokers) {
  std::map<std::string, std::vector<int32_t>> by_rack;
  for (const auto& b : brokers) by_rack[*b.rack].push_back(b.id);
  for (auto& [rack, ids] : by_rack) std::sort(ids.begin(), ids.end());
  std::vector<int32_t> out;
  size_t round = 0;
  while (out.size() < brokers.size()) {
    for (auto& [rack, ids] : by_rack)
      if (round < ids.size()) out.push_back(ids[round]);
    ++round;
  }
  return out;
}

}  // namespace

result<std::vector<std::vector<int32_t>>> assign_replicas(std::vector<broker_rack> brokers, int32_t partition_count,
                                                          int32_t replication_factor, int32_t start_partition,
                                                          int32_t start_index, int32_t replica_shift) {
  if (partition_count <= 0)
    return error{assignment_errc::invalid_partitions, "number of partitions must be larger than 0"};
  if (replication_factor <= 0)
    return error{assignment_errc::invalid_replication_factor,
                 "replication factor must be larger than 0"};
  const auto n = static_cast<int32_t>(brokers.size());
  if (replication_factor > n)
    return error{assignment_errc::invalid_replication_factor,
                 "replication factor: " + std::to_string(replication_factor) + " larger than available brokers: " +
                     std::to_string(n)};
  std::sort(brokers.begin(), brokers.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  const bool rack_aware = std::all_of(brokers.begin(), brokers.end(), [](const auto& b) { return b.rack.has_value(); });

  std::vector<int32_t> list;
  std::map<int32_t, std::string> rack_of;
  if (rack_aware) {
    list = rack_alternated(brokers);
    for (const auto& b : brokers) rack_of[b.id] = *b.rack;
  } else {
    for (const auto& b : brokers) list.push_back(b.id);
  }
  std::set<std::string> all_racks;
  for (const auto& [id, rack] : rack_of) all_racks.insert(rack);
  const auto num_racks = static_cast<int32_t>(all_racks.size());

  int32_t start = start_index >= 0 ? start_index % n : random_below(n);
  int32_t shift = replica_shift >= 0 ? replica_shift : random_below(n);
  int32_t partition = std::max(0, start_partition);
  std::vector<std::vector<int32_t>> out;
  out.reserve(static_cast<size_t>(partition_count));
  for (int32_t i = 0; i < partition_count; ++i, ++partition) {
    if (partition > 0 && partition % n == 0) ++shift;
    const int32_t first = (partition + start) % n;
    std::vector<int32_t> replicas{list[static_cast<size_t>(first)]};
    if (!rack_aware) {
      for (int32_t j = 0; j < replication_factor - 1; ++j)
        replicas.push_back(list[static_cast<size_t>(replica_index(first, shift, j, n))]);
    } else {
      std::set<std::string> racks_used{rack_of[replicas[0]]};
      std::set<int32_t> brokers_used{replicas[0]};
      int32_t k = 0;
      for (int32_t j = 0; j < replication_factor - 1; ++j) {
        while (true) {
          int32_t b = list[static_cast<size_t>(replica_index(first, shift * num_racks, k, n))];
          ++k;
          const auto& rack = rack_of[b];
          // Skip a broker whose rack already holds a replica while some rack has none, and a broker that
          // already holds one while some broker has none.
          if ((!racks_used.contains(rack) || static_cast<int32_t>(racks_used.size()) == num_racks) &&
              (!brokers_used.contains(b) || static_cast<int32_t>(brokers_used.size()) == n)) {
            replicas.push_back(b);
            racks_used.insert(rack);
            brokers_used.insert(b);
            break;
          }
        }
      }
    }
    out.push_back(std::move(replicas));
  }
  return out;
}

result<std::vector<std::vector<int32_t>>> assign_added_partitions(std::vector<broker_rack> brokers,
                                                                  const std::vector<std::vector<int32_t>>& existing,
                                                                  int32_t new_total) {
  const auto have = static_cast<int32_t>(existing.size());
  if (existing.empty() || existing[0].empty())
    return error{assignment_errc::invalid_partitions, "the topic has no partition 0"};
  if (new_total <= have)
    return error{assignment_errc::invalid_partitions,
                 "topic currently has " + std::to_string(have) + " partitions, " + std::to_string(new_total) +
                     " would not be an increase"};
  std::sort(brokers.begin(), brokers.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  int32_t start = 0;
  for (size_t i = 0; i < brokers.size(); ++i) {
    if (brokers[i].id >= existing[0][0]) {
      start = static_cast<int32_t>(i);
      break;
    }
  }
  return assign_replicas(std::move(brokers), new_total - have, static_cast<int32_t>(existing[0].size()), have, start,
                         start);
}

std::optional<std::string> manual_assignment_problem(const std::vector<int32_t>& brokers,
                                                     const std::function<bool(int32_t)>& registered) {
  if (brokers.empty()) return "The manual partition assignment includes an empty replica list.";
  auto sorted = brokers;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (!registered(sorted[i]))
      return "The manual partition assignment includes broker " + std::to_string(sorted[i]) +
             ", but no such broker is registered.";
    if (i > 0 && sorted[i] == sorted[i - 1])
      return "The manual partition assignment includes the broker " + std::to_string(sorted[i]) + " more than once.";
  }
  return std::nullopt;
}

std::optional<std::pair<admin_outcome, std::string>> check_reassignment_target(const std::vector<int32_t>& target,
                                                                               const std::function<bool(int32_t)>& registered,
                                                                               size_t original_size, bool allow_rf_change) {
  using outcome = std::pair<admin_outcome, std::string>;
  if (auto problem = manual_assignment_problem(target, registered)) return outcome{admin_outcome::invalid_assignment, *problem};
  if (!allow_rf_change && target.size() != original_size)
    return outcome{admin_outcome::invalid_replication_factor,
                   "The replication factor is changed from " + std::to_string(original_size) + " to " +
                       std::to_string(target.size()) + " but allowReplicationFactorChange is false"};
  return std::nullopt;
}

partition_outcome unknown_reassignment_partition(const std::string& topic, int32_t partition, bool topic_exists) {
  return {topic, partition, admin_outcome::unknown_partition,
          topic_exists ? "Unable to find partition " + topic + ":" + std::to_string(partition) + "."
                       : "Unable to find a topic named " + topic + "."};
}

partition_outcome unknown_election_partition(const std::string& topic, int32_t partition, bool topic_exists) {
  return {topic, partition, admin_outcome::unknown_partition,
          topic_exists ? "No such partition as " + topic + "-" + std::to_string(partition) : "No such topic as " + topic};
}

partition_outcome election_not_needed(const std::string& topic, int32_t partition) {
  return {topic, partition, admin_outcome::election_not_needed, "Leader election not needed for topic partition."};
}

}  // namespace sluice::coordination
