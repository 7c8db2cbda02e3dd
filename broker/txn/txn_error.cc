#include "broker/txn/txn_error.h"

#include <string>

namespace sluice::txn {

std::string_view to_string(txn_error e) {
  switch (e) {
    case txn_error::unknown_server_error: return "UNKNOWN_SERVER_ERROR";
    case txn_error::none: return "NONE";
    case txn_error::unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case txn_error::invalid_fetch_size: return "INVALID_FETCH_SIZE";
    case txn_error::not_leader_or_follower: return "NOT_LEADER_OR_FOLLOWER";
    case txn_error::request_timed_out: return "REQUEST_TIMED_OUT";
    case txn_error::message_too_large: return "MESSAGE_TOO_LARGE";
    case txn_error::coordinator_load_in_progress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case txn_error::coordinator_not_available: return "COORDINATOR_NOT_AVAILABLE";
    case txn_error::not_coordinator: return "NOT_COORDINATOR";
    case txn_error::record_list_too_large: return "RECORD_LIST_TOO_LARGE";
    case txn_error::not_enough_replicas: return "NOT_ENOUGH_REPLICAS";
    case txn_error::not_enough_replicas_after_append: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case txn_error::invalid_request: return "INVALID_REQUEST";
    case txn_error::invalid_producer_epoch: return "INVALID_PRODUCER_EPOCH";
    case txn_error::invalid_txn_state: return "INVALID_TXN_STATE";
    case txn_error::invalid_producer_id_mapping: return "INVALID_PRODUCER_ID_MAPPING";
    case txn_error::invalid_transaction_timeout: return "INVALID_TRANSACTION_TIMEOUT";
    case txn_error::concurrent_transactions: return "CONCURRENT_TRANSACTIONS";
    case txn_error::transaction_coordinator_fenced: return "TRANSACTION_COORDINATOR_FENCED";
    case txn_error::kafka_storage_error: return "KAFKA_STORAGE_ERROR";
    case txn_error::producer_fenced: return "PRODUCER_FENCED";
    case txn_error::transactional_id_not_found: return "TRANSACTIONAL_ID_NOT_FOUND";
    case txn_error::transaction_abortable: return "TRANSACTION_ABORTABLE";
  }
  return "UNKNOWN";
}

txn_error map_append_error(txn_error e) {
  switch (e) {
    case txn_error::unknown_topic_or_partition:
    case txn_error::not_enough_replicas:
    case txn_error::not_enough_replicas_after_append:
    case txn_error::request_timed_out:
      return txn_error::coordinator_not_available;
    case txn_error::not_leader_or_follower:
    case txn_error::kafka_storage_error:
      return txn_error::not_coordinator;
    case txn_error::message_too_large:
    case txn_error::record_list_too_large:
      return txn_error::unknown_server_error;
    default:
      return e;
  }
}

namespace {

class txn_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "txn"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<txn_error>(static_cast<int16_t>(value))));
  }
};

}  // namespace

const std::error_category& txn_category() noexcept {
  static const txn_error_category instance;
  return instance;
}

}  // namespace sluice::txn
