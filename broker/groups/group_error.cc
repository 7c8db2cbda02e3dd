#include "broker/groups/group_error.h"

#include <string>

namespace sluice::groups {

std::string_view to_string(group_error e) {
  switch (e) {
    case group_error::unknown_server_error: return "UNKNOWN_SERVER_ERROR";
    case group_error::none: return "NONE";
    case group_error::unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case group_error::invalid_fetch_size: return "INVALID_FETCH_SIZE";
    case group_error::not_leader_or_follower: return "NOT_LEADER_OR_FOLLOWER";
    case group_error::request_timed_out: return "REQUEST_TIMED_OUT";
    case group_error::message_too_large: return "MESSAGE_TOO_LARGE";
    case group_error::offset_metadata_too_large: return "OFFSET_METADATA_TOO_LARGE";
    case group_error::coordinator_load_in_progress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case group_error::coordinator_not_available: return "COORDINATOR_NOT_AVAILABLE";
    case group_error::not_coordinator: return "NOT_COORDINATOR";
    case group_error::record_list_too_large: return "RECORD_LIST_TOO_LARGE";
    case group_error::not_enough_replicas: return "NOT_ENOUGH_REPLICAS";
    case group_error::not_enough_replicas_after_append: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case group_error::illegal_generation: return "ILLEGAL_GENERATION";
    case group_error::inconsistent_group_protocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case group_error::invalid_group_id: return "INVALID_GROUP_ID";
    case group_error::unknown_member_id: return "UNKNOWN_MEMBER_ID";
    case group_error::invalid_session_timeout: return "INVALID_SESSION_TIMEOUT";
    case group_error::rebalance_in_progress: return "REBALANCE_IN_PROGRESS";
    case group_error::invalid_commit_offset_size: return "INVALID_COMMIT_OFFSET_SIZE";
    case group_error::invalid_producer_epoch: return "INVALID_PRODUCER_EPOCH";
    case group_error::invalid_txn_state: return "INVALID_TXN_STATE";
    case group_error::kafka_storage_error: return "KAFKA_STORAGE_ERROR";
    case group_error::non_empty_group: return "NON_EMPTY_GROUP";
    case group_error::group_id_not_found: return "GROUP_ID_NOT_FOUND";
    case group_error::member_id_required: return "MEMBER_ID_REQUIRED";
    case group_error::group_max_size_reached: return "GROUP_MAX_SIZE_REACHED";
    case group_error::fenced_instance_id: return "FENCED_INSTANCE_ID";
    case group_error::group_subscribed_to_topic: return "GROUP_SUBSCRIBED_TO_TOPIC";
    case group_error::unstable_offset_commit: return "UNSTABLE_OFFSET_COMMIT";
    case group_error::unsupported_version: return "UNSUPPORTED_VERSION";
    case group_error::invalid_request: return "INVALID_REQUEST";
    case group_error::fenced_member_epoch: return "FENCED_MEMBER_EPOCH";
    case group_error::unreleased_instance_id: return "UNRELEASED_INSTANCE_ID";
    case group_error::unsupported_assignor: return "UNSUPPORTED_ASSIGNOR";
    case group_error::stale_member_epoch: return "STALE_MEMBER_EPOCH";
    case group_error::invalid_regular_expression: return "INVALID_REGULAR_EXPRESSION";
  }
  return "UNKNOWN";
}

namespace {

class groups_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "groups"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<group_error>(static_cast<int16_t>(value))));
  }
};

}  // namespace

namespace {

/// What the three mappings below share (Kafka's coordinators map an append's error before answering):
/// UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND) -> COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER,
/// KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; a write too large -> `too_large`; REQUEST_TIMED_OUT -> `timed_out`.
group_error map_append(group_error e, group_error timed_out, group_error too_large) {
  switch (e) {
    case group_error::unknown_topic_or_partition:
    case group_error::not_enough_replicas:
    case group_error::not_enough_replicas_after_append:
      return group_error::coordinator_not_available;
    case group_error::not_leader_or_follower:
    case group_error::kafka_storage_error:
      return group_error::not_coordinator;
    case group_error::request_timed_out:
      return timed_out;
    case group_error::message_too_large:
    case group_error::record_list_too_large:
    case group_error::invalid_fetch_size:
      return too_large;
    default:
      return e;
  }
}

}  // namespace

// Kafka's GroupMetadataManager.storeGroup error mapping of the append result.
group_error map_group_append_error(group_error e) {
  return map_append(e, group_error::rebalance_in_progress, group_error::unknown_server_error);
}

// Kafka's GroupMetadataManager.storeOffsets error mapping of the append result (a timeout stays REQUEST_TIMED_OUT).
group_error map_offset_append_error(group_error e) {
  return map_append(e, group_error::request_timed_out, group_error::invalid_commit_offset_size);
}

// Kafka 4.x GroupCoordinatorService.normalizeException, as TxnOffsetCommit answers an append failure (a timed-out
// write is a TimeoutException there: COORDINATOR_NOT_AVAILABLE, which the producer retries after a lookup).
group_error map_txn_offset_append_error(group_error e) {
  return map_append(e, group_error::coordinator_not_available, group_error::unknown_server_error);
}

const std::error_category& groups_category() noexcept {
  static const groups_error_category instance;
  return instance;
}

}  // namespace sluice::groups
