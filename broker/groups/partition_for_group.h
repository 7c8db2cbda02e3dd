#pragma once
// Which __consumer_offsets partition coordinates a group.
#include <cstdint>
#include <string_view>

namespace sluice::groups {

/// Java's String.hashCode of `s` given as UTF-8: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units,
/// in 32-bit two's complement arithmetic. Invalid UTF-8 bytes count as U+FFFD, as Java's decoder does.
int32_t java_hashcode(std::string_view utf8);

/// Kafka's partitionFor of the group and transaction coordinators: Utils.abs(key.hashCode) % partitions, where
/// Utils.abs(n) is Math.abs(n), and 0 for Integer.MIN_VALUE (not the sign-bit mask of Utils.toPositive: the two
/// differ for every negative hash; Kafka 4.4 checked by compat/diff). `num_partitions` must be > 0.
int32_t partition_for_group(std::string_view group_id, int32_t num_partitions);

}  // namespace sluice::groups
