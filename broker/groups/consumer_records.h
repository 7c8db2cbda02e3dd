#pragma once
// The KIP-848 records of __consumer_offsets (Kafka's new group coordinator), built from and read into the
// coordinator's consumer group structs (consumer_group.h). Key versions name the record types:
//   3  ConsumerGroupMetadata           (group epoch)
//   5  ConsumerGroupMemberMetadata     (a member's subscription and client details)
//   6  ConsumerGroupTargetAssignmentMetadata (assignment epoch)
//   7  ConsumerGroupTargetAssignmentMember   (a member's target partitions)
//   8  ConsumerGroupCurrentMemberAssignment  (a member's epochs, state, assigned and pending-revocation partitions)
//   16 ConsumerGroupRegularExpression  (a regex subscription's resolved topics)
// Values are version 0 (flexible). Schemas: protocol/defs/consumer_offsets.def.
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "broker/groups/consumer_group.h"
#include "broker/groups/group_write.h"

namespace sluice::groups {

enum class consumer_record_type : int16_t {
  group_metadata = 3,
  member_metadata = 5,
  target_assignment_metadata = 6,
  target_assignment_member = 7,
  current_member_assignment = 8,
  regular_expression = 16,
};

/// A decoded KIP-848 key: the type, the group, and the member id (types 5, 7, 8) or the regex (16).
struct consumer_record_key {
  consumer_record_type type{};
  std::string group;
  std::string sub;
  bool operator==(const consumer_record_key&) const = default;
};

/// Decodes a key of types 3, 5-8 and 16; none for other versions. Errors: truncated bytes.
result<std::optional<consumer_record_key>> decode_consumer_key(const bytes& key);

// Builders; a member's records carry what its struct holds. No value = tombstone.
group_record group_epoch_record(const std::string& group, int32_t epoch);
group_record group_epoch_tombstone(const std::string& group);
group_record member_subscription_record(const std::string& group, const consumer_member& m);
group_record member_subscription_tombstone(const std::string& group, const std::string& member_id);
group_record target_assignment_epoch_record(const std::string& group, int32_t epoch);
group_record target_assignment_epoch_tombstone(const std::string& group);
group_record target_assignment_record(const std::string& group, const std::string& member_id,
                                      const partition_map& partitions);
group_record target_assignment_tombstone(const std::string& group, const std::string& member_id);
group_record current_assignment_record(const std::string& group, const consumer_member& m);
group_record current_assignment_tombstone(const std::string& group, const std::string& member_id);
group_record regex_record(const std::string& group, const std::string& regex, const resolved_regex& r);
group_record regex_tombstone(const std::string& group, const std::string& regex);

/// The records that end a consumer group (deletion, or conversion back to a classic group), in Kafka's order: its
/// resolved regexes, its assignment epoch, its group epoch. Members' records are removed before (fencing).
std::vector<group_record> consumer_group_tombstones(const std::string& group, const consumer_group_state& cg);

// Readers of values (errors: truncated or malformed bytes, unknown version).
/// Types 3 and 6: the epoch.
result<int32_t> decode_epoch_value(const bytes& value);
/// Type 5 into `m` (member id and assignment fields untouched).
result<void> decode_member_metadata_value(const bytes& value, consumer_member& m);
/// Type 7.
result<partition_map> decode_target_assignment_value(const bytes& value);
/// Type 8 into `m` (epochs, state, assigned and pending-revocation partitions).
result<void> decode_current_assignment_value(const bytes& value, consumer_member& m);
/// Type 16.
result<resolved_regex> decode_regex_value(const bytes& value);

}  // namespace sluice::groups
