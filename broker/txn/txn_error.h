#pragma once
// Kafka error codes the transaction coordinator produces or passes through. Numeric values are the protocol's
// (Kafka's Errors table); broker/error_map turns them into protocol::error_code (the same number).
#include <cstdint>
#include <string_view>
#include <system_error>

namespace sluice::txn {

enum class txn_error : int16_t {
  unknown_server_error = -1,
  none = 0,
  unknown_topic_or_partition = 3,
  invalid_fetch_size = 4,
  not_leader_or_follower = 6,
  request_timed_out = 7,
  message_too_large = 10,
  coordinator_load_in_progress = 14,
  coordinator_not_available = 15,
  not_coordinator = 16,
  record_list_too_large = 18,
  not_enough_replicas = 19,
  not_enough_replicas_after_append = 20,
  invalid_request = 42,
  invalid_producer_epoch = 47,
  invalid_txn_state = 48,
  invalid_producer_id_mapping = 49,
  invalid_transaction_timeout = 50,
  concurrent_transactions = 51,
  transaction_coordinator_fenced = 52,
  kafka_storage_error = 56,
  producer_fenced = 90,
  transactional_id_not_found = 105,
  transaction_abortable = 120,
};

}  // namespace sluice::txn

/// txn_error converts to std::error_code (category "txn"), so error_map reads it like every other layer's code.
template <>
struct std::is_error_code_enum<sluice::txn::txn_error> : std::true_type {};

namespace sluice::txn {

/// The std::error_category of txn_error ("txn"; message = Kafka's upper-case name).
const std::error_category& txn_category() noexcept;

inline std::error_code make_error_code(txn_error e) noexcept { return {static_cast<int>(e), txn_category()}; }

/// Kafka's upper-case name ("CONCURRENT_TRANSACTIONS"), for logs and test messages.
std::string_view to_string(txn_error e);

/// What a client is told when a __transaction_state append failed with `e`, as Kafka's
/// TransactionStateManager.appendTransactionToLog maps it: UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_
/// APPEND), REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR ->
/// NOT_COORDINATOR; MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE -> UNKNOWN_SERVER_ERROR; others unchanged.
txn_error map_append_error(txn_error e);

}  // namespace sluice::txn
