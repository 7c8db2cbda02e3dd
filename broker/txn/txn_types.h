#pragma once
// Plain types of the transaction coordinator (KIP-98; Kafka's TransactionMetadata, TransactionState and the
// coordinator's request/result shapes), without the wire codec: broker/handlers translate between these and the
// generated protocol structs.
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/txn/txn_error.h"

namespace sluice::txn {

using bytes = std::vector<uint8_t>;

/// Kafka's "no producer epoch" (RecordBatch.NO_PRODUCER_EPOCH) and "no producer id".
constexpr int16_t no_producer_epoch = -1;
constexpr int64_t no_producer_id = -1;

/// The transaction states with the numbers Kafka writes as TransactionStatus in __transaction_state.
enum class txn_state : int8_t {
  empty = 0,
  ongoing = 1,
  prepare_commit = 2,
  prepare_abort = 3,
  complete_commit = 4,
  complete_abort = 5,
  dead = 6,
  prepare_epoch_fence = 7,
};

/// Kafka's state names as DescribeTransactions and ListTransactions show them ("Ongoing", "PrepareCommit", ...).
std::string_view to_string(txn_state s);
/// The state named `name` (Kafka's names, exact case), if any.
std::optional<txn_state> txn_state_from_string(std::string_view name);

struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const topic_partition&) const = default;
};

/// Coordinator settings, with Kafka's broker config keys and defaults.
struct txn_config {
  int32_t max_timeout_ms = 900000;                        // transaction.max.timeout.ms
  int64_t transactional_id_expiration_ms = 604800000;    // transactional.id.expiration.ms (7 days)
  int64_t abort_timed_out_check_interval_ms = 10000;     // transaction.abort.timed.out.transaction.cleanup.interval.ms
  int64_t remove_expired_check_interval_ms = 3600000;    // transaction.remove.expired.transaction.cleanup.interval.ms
};

/// One transactional id's state (Kafka's TransactionMetadata). Times are wall-clock ms (they are persisted).
struct transaction_metadata {
  std::string transactional_id;
  int64_t producer_id = no_producer_id;
  int64_t previous_producer_id = no_producer_id;  // KIP-360: the id before the last rotation
  int16_t producer_epoch = no_producer_epoch;
  int16_t last_producer_epoch = no_producer_epoch;  // the epoch before the last bump (a retried bump answers it)
  int32_t timeout_ms = 60000;
  txn_state state = txn_state::empty;
  std::set<topic_partition> partitions;
  int64_t start_timestamp_ms = -1;
  int64_t last_update_timestamp_ms = -1;
  /// The state a write in flight moves to (Kafka's pendingState): requests meanwhile get CONCURRENT_TRANSACTIONS.
  std::optional<txn_state> pending;
  /// Markers of the current PrepareCommit/PrepareAbort are being written.
  bool markers_in_flight = false;
};

/// InitProducerId with a transactional id. `expected_*` (v3+, KIP-360) is the producer's current id and epoch,
/// or -1/-1 for a new producer.
struct init_producer_id_request {
  std::string transactional_id;
  int32_t timeout_ms = 60000;
  int64_t expected_producer_id = no_producer_id;
  int16_t expected_producer_epoch = no_producer_epoch;
};
struct init_producer_id_result {
  txn_error error = txn_error::none;
  int64_t producer_id = no_producer_id;
  int16_t producer_epoch = no_producer_epoch;
};

/// AddPartitionsToTxn (and AddOffsetsToTxn, whose one partition is the group's __consumer_offsets partition).
struct add_partitions_request {
  std::string transactional_id;
  int64_t producer_id = no_producer_id;
  int16_t producer_epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
};
/// One error for the whole request (Kafka answers every partition of it with that error).
struct add_partitions_result {
  txn_error error = txn_error::none;
};

struct end_txn_request {
  std::string transactional_id;
  int64_t producer_id = no_producer_id;
  int16_t producer_epoch = no_producer_epoch;
  bool commit = false;
};
struct end_txn_result {
  txn_error error = txn_error::none;
};

/// DescribeTransactions, one id.
struct transaction_description {
  std::string transactional_id;
  txn_error error = txn_error::none;  // TRANSACTIONAL_ID_NOT_FOUND, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
  txn_state state = txn_state::empty;
  int32_t timeout_ms = 0;
  int64_t start_timestamp_ms = -1;
  int64_t producer_id = no_producer_id;
  int16_t producer_epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
};

/// ListTransactions (KIP-664): empty filters match everything; `min_duration_ms` (v1, KIP-994) keeps only
/// transactions running at least that long (-1: no filter).
struct list_transactions_filter {
  std::vector<txn_state> states;
  std::vector<int64_t> producer_ids;
  int64_t min_duration_ms = -1;
};
struct transaction_listing {
  std::string transactional_id;
  int64_t producer_id = no_producer_id;
  txn_state state = txn_state::empty;
};

/// One __transaction_state record: key bytes and value bytes, or no value for a tombstone.
struct txn_record {
  bytes key;
  std::optional<bytes> value;
  bool operator==(const txn_record&) const = default;
};

/// Kafka's CoordinatorResult for a request (the shape coordinator_runtime::write takes): `records` to append
/// atomically (empty: answer at once), `response` once they are committed and replayed, `failed(error)` instead
/// when the append failed (error: the append's outcome; `failed` maps it and drops the pending transition).
template <typename R>
struct coordinator_result {
  std::vector<txn_record> records;
  R response;
  std::function<R(txn_error)> failed;
};

/// An append no request waits for (markers written, a timed-out transaction aborted, an expired id removed).
struct txn_write {
  std::vector<txn_record> records;
  std::function<void(txn_error)> done;
};

/// Transaction markers to write (WriteTxnMarkers' content): a COMMIT or ABORT control record for `producer_id`
/// at `producer_epoch` in each partition, fenced by `coordinator_epoch` (the leader epoch of the coordinator's
/// __transaction_state partition).
struct marker_job {
  std::string transactional_id;
  int64_t producer_id = no_producer_id;
  int16_t producer_epoch = no_producer_epoch;
  bool commit = false;
  int32_t coordinator_epoch = 0;
  std::vector<topic_partition> partitions;
};

}  // namespace sluice::txn
