#pragma once
// Which __consumer_offsets partition coordinates a group.
#include <cstdint>
#include <string_view>

namespace sluice::groups {

/// Java's String.hashCode of `s` given as UTF-8: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units,
/// in 32-bit two's complement arithmetic. Invalid UTF-8 bytes count as U+FFFD, as Java's decoder does.
int32_t java_hashcode(std::string_view utf8);

/// Kafka's GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions,
/// where Utils.abs(n) is n & 0x7fffffff. `num_partitions` must be > 0.
int32_t partition_for_group(std::string_view group_id, int32_t num_partitions);

}  // namespace sluice::groups
