#pragma once
// Kafka error codes the group coordinator produces or passes through. Numeric values are the protocol's
// (Kafka's Errors table); the broker's error_map turns them into protocol::error_code (the same number).
#include <cstdint>
#include <string_view>
#include <system_error>

namespace sluice::groups {

enum class group_error : int16_t {
  unknown_server_error = -1,
  none = 0,
  invalid_fetch_size = 4,
  not_leader_or_follower = 6,
  request_timed_out = 7,
  message_too_large = 10,
  offset_metadata_too_large = 12,
  coordinator_load_in_progress = 14,
  coordinator_not_available = 15,
  not_coordinator = 16,
  record_list_too_large = 18,
  not_enough_replicas = 19,
  not_enough_replicas_after_append = 20,
  illegal_generation = 22,
  inconsistent_group_protocol = 23,
  invalid_group_id = 24,
  unknown_member_id = 25,
  invalid_session_timeout = 26,
  rebalance_in_progress = 27,
  invalid_commit_offset_size = 28,
  unknown_topic_or_partition = 3,
  invalid_producer_epoch = 47,   // a TxnOffsetCommit of a fenced epoch (the log's producer check)
  invalid_txn_state = 48,
  kafka_storage_error = 56,
  non_empty_group = 68,
  group_id_not_found = 69,
  member_id_required = 79,
  group_max_size_reached = 81,
  fenced_instance_id = 82,
  group_subscribed_to_topic = 86,
  unstable_offset_commit = 88,
  unsupported_version = 35,       // OffsetCommit < v9 from a KIP-848 member
  invalid_request = 42,            // KIP-848 ConsumerGroupHeartbeat validation
  fenced_member_epoch = 110,
  unreleased_instance_id = 111,
  unsupported_assignor = 112,
  stale_member_epoch = 113,
  invalid_regular_expression = 128,
};

}  // namespace sluice::groups

/// group_error converts to std::error_code (category "groups"), so error_map reads it like every other
/// layer's code. none is 0: a std::error_code of group_error::none is false.
template <>
struct std::is_error_code_enum<sluice::groups::group_error> : std::true_type {};

namespace sluice::groups {

/// The std::error_category of group_error ("groups"; message = Kafka's upper-case name); in group_error.cc.
const std::error_category& groups_category() noexcept;

inline std::error_code make_error_code(group_error e) noexcept { return {static_cast<int>(e), groups_category()}; }

/// Kafka's upper-case name of the error ("REBALANCE_IN_PROGRESS"), for logs and test messages.
std::string_view to_string(group_error e);

/// What a client is told when a __consumer_offsets append failed with `e`, as Kafka's coordinator maps it.
/// Both: NOT_ENOUGH_REPLICAS(_AFTER_APPEND), UNKNOWN_TOPIC_OR_PARTITION -> COORDINATOR_NOT_AVAILABLE;
/// NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR -> NOT_COORDINATOR. Group metadata (storeGroup, also
/// DeleteGroups): REQUEST_TIMED_OUT -> REBALANCE_IN_PROGRESS, a too large batch -> UNKNOWN_SERVER_ERROR.
/// Offset commits (storeOffsets): a too large batch -> INVALID_COMMIT_OFFSET_SIZE. Others unchanged.
group_error map_group_append_error(group_error e);
group_error map_offset_append_error(group_error e);
/// TxnOffsetCommit (Kafka 4.x GroupCoordinatorService.commitTransactionalOffsets, normalizeException):
/// UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE;
/// NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; a too large batch -> UNKNOWN_SERVER_ERROR;
/// others (INVALID_PRODUCER_EPOCH, ...) unchanged.
group_error map_txn_offset_append_error(group_error e);

}  // namespace sluice::groups
