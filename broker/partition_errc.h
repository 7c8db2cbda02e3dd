#pragma once
// Errors of the partition layer (broker/partition.h), beside the storage errors its log returns.
#include <system_error>

namespace sluice::broker {

/// Errors of the partition layer, carried in sluice::error::code as std::error_code of the "partition"
/// category; error_map turns them into NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS and UNKNOWN_LEADER_EPOCH.
enum class partition_errc : int { not_leader = 1, not_enough_replicas, unknown_leader_epoch };

}  // namespace sluice::broker

template <>
struct std::is_error_code_enum<sluice::broker::partition_errc> : std::true_type {};

namespace sluice::broker {

/// The std::error_category of partition_errc ("partition"); defined in partition_errc.cc.
const std::error_category& partition_category() noexcept;

inline std::error_code make_error_code(partition_errc e) noexcept {
  return {static_cast<int>(e), partition_category()};
}

}  // namespace sluice::broker
