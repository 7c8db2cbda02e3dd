#pragma once
// What the group commands (group_commands.cc) and the group consumer (group_consumer.cc) share: the consumer
// protocol's member metadata and assignment bytes (ConsumerProtocolSubscription / ConsumerProtocolAssignment, each
// an int16 version then the struct), the range assignor (Kafka's RangeAssignor), and OffsetFetch / OffsetCommit /
// DescribeGroups against a group's coordinator.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli/connection.h"
#include "protocol/messages/describe_groups.h"

namespace sluice::cli {

/// (topic, partition), ordered by topic then partition.
using topic_partition = std::pair<std::string, int32_t>;
/// topic -> partitions, as the consumer protocol carries an assignment.
using assignment = std::map<std::string, std::vector<int32_t>>;

/// ConsumerProtocolSubscription v3 bytes: `topics`, the partitions owned from the last generation (KIP-429's
/// field, empty for a new member) and that generation (-1 for none).
std::vector<uint8_t> encode_subscription(const std::vector<std::string>& topics, const assignment& owned,
                                         int32_t generation);
/// The subscribed topics of member metadata; nullopt when the bytes are not a consumer subscription. A version
/// above 3 is read as 3 (Kafka's rule: newer versions only append fields).
std::optional<std::vector<std::string>> decode_subscription_topics(std::span<const uint8_t> bytes);

/// ConsumerProtocolAssignment v3 bytes (no user data).
std::vector<uint8_t> encode_assignment(const assignment& a);
/// An assignment's partitions; empty when the bytes are empty or not one (a member that has none yet).
assignment decode_assignment(std::span<const uint8_t> bytes);

/// Kafka's RangeAssignor ("range"): per topic, the members subscribed to it in member id order each get a
/// contiguous range of partitions, the first (partitions % members) one more. `subscriptions`: member id ->
/// topics; `partition_counts`: topic -> partitions (topics missing from it are skipped, as Java's assignor skips
/// topics without metadata). Every member appears in the result, possibly with nothing.
std::map<std::string, assignment> range_assign(const std::map<std::string, std::vector<std::string>>& subscriptions,
                                               const std::map<std::string, int32_t>& partition_counts);

struct committed_offset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
};

/// OffsetFetch (v1-9; v8+ in the groups form) of `group`: every committed offset when `topics` is nullopt, else of
/// those partitions. Partitions without a committed offset (Kafka answers -1) are left out. A group-level or
/// partition-level error throws failure(kafka_error) naming it.
std::map<topic_partition, committed_offset> offset_fetch(connection& coordinator, const std::string& group,
                                                         const std::optional<assignment>& topics = std::nullopt);

/// OffsetCommit (v2-9) of `offsets` (the next offset to read, Kafka's convention) for `group`. A member commits
/// with its generation and member id; an admin commit (reset-offsets) with generation -1 and member id "",
/// which the coordinator takes only while the group is empty. Returns each partition's error code.
std::map<topic_partition, protocol::error_code> offset_commit(connection& coordinator, const std::string& group,
                                                              int32_t generation, const std::string& member_id,
                                                              const std::map<topic_partition, int64_t>& offsets);

/// DescribeGroups (v0-5) of one group. A group-level error throws failure(kafka_error); an unknown group comes back
/// in state "Dead" (Kafka's classic answer), which callers name GROUP_ID_NOT_FOUND.
protocol::describe_groups_response::described_group describe_group(connection& coordinator, const std::string& group);

}  // namespace sluice::cli
