#pragma once
// Replica assignment of new topics and partitions, as Kafka's AdminUtils.assignReplicasToBrokers
// (used by CreateTopics and CreatePartitions in cluster mode).
#include <cstdint>
#include <functional>
#include <utility>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "base/result.h"
#include "coordination/cluster_view.h"

namespace sluice::coordination {

/// A live broker as the assignment sees it.
struct broker_rack {
  int32_t id = -1;
  std::optional<std::string> rack;  // broker.rack
};

/// Error codes of assign_replicas, carried in sluice::error::code as std::error_code of the "assignment"
/// category (Kafka: INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS).
enum class assignment_errc : int { invalid_replication_factor = 1, invalid_partitions };

}  // namespace sluice::coordination

template <>
struct std::is_error_code_enum<sluice::coordination::assignment_errc> : std::true_type {};

namespace sluice::coordination {

/// The std::error_category of assignment_errc ("assignment"); defined in coordination/errc.cc.
const std::error_category& assignment_category() noexcept;
inline std::error_code make_error_code(assignment_errc e) noexcept {
  return {static_cast<int>(e), assignment_category()};
}

/// Assigns `partition_count` partitions numbered from `start_partition` to `brokers` (any order; sorted by
/// id here), `replication_factor` replicas each; `result[i]` is the replica list of partition
/// start_partition + i, its first broker the preferred leader.
///
/// Kafka's algorithm: rack-unaware, the first replica of partition p is broker (p + start_index) mod n
/// and the others follow at a shift that grows by one every n partitions, so first replicas (preferred
/// leaders) are spread evenly (3 brokers, 12 partitions: 4/4/4). Rack-aware when every broker has a rack:
/// the broker list alternates racks and each partition's replicas go to distinct racks first.
/// `start_index` and `replica_shift` < 0 pick random values, as Kafka does (fixed in tests).
///
/// Errors: invalid_replication_factor when replication_factor <= 0 or > brokers.size();
/// invalid_partitions when partition_count <= 0.
result<std::vector<std::vector<int32_t>>> assign_replicas(std::vector<broker_rack> brokers, int32_t partition_count,
                                                          int32_t replication_factor, int32_t start_partition = 0,
                                                          int32_t start_index = -1, int32_t replica_shift = -1);

/// CreatePartitions: assignment of the partitions added to a topic whose current assignment is `existing`,
/// up to `new_total` partitions, as Kafka's AdminZkClient.createPartitions: replication factor of
/// partition 0, start index at partition 0's first replica, partition numbers continuing. Errors as above
/// (invalid_partitions when new_total <= existing.size()).
result<std::vector<std::vector<int32_t>>> assign_added_partitions(std::vector<broker_rack> brokers,
                                                                  const std::vector<std::vector<int32_t>>& existing,
                                                                  int32_t new_total);

/// Kafka's ReplicationControlManager.validateManualPartitionAssignment for one replica list (CreateTopics and
/// CreatePartitions with assignments, AlterPartitionReassignments): not empty, then in ascending broker id order
/// each a registered broker and named once. Kafka's message for the first problem, nullopt when the list is fine.
std::optional<std::string> manual_assignment_problem(const std::vector<int32_t>& brokers,
                                                     const std::function<bool(int32_t)>& registered);

/// AlterPartitionReassignments' checks of a target: manual_assignment_problem (invalid_assignment), then KIP-860
/// (with `allow_rf_change` false, as many replicas as `original_size`: invalid_replication_factor). nullopt when
/// the target is fine, else the outcome with Kafka's message.
std::optional<std::pair<admin_outcome, std::string>> check_reassignment_target(const std::vector<int32_t>& target,
                                                                               const std::function<bool(int32_t)>& registered,
                                                                               size_t original_size, bool allow_rf_change);

/// The answers both cluster views give in Kafka's words (ReplicationControlManager): a reassignment's unknown
/// topic or partition, an election's unknown topic or partition (UNKNOWN_TOPIC_OR_PARTITION), and an election
/// the partition does not need.
partition_outcome unknown_reassignment_partition(const std::string& topic, int32_t partition, bool topic_exists);
partition_outcome unknown_election_partition(const std::string& topic, int32_t partition, bool topic_exists);
partition_outcome election_not_needed(const std::string& topic, int32_t partition);

}  // namespace sluice::coordination
