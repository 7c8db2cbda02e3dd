#pragma once
// The transaction coordinator of one __transaction_state partition (KIP-98; Kafka's TransactionCoordinator with
// its TransactionStateManager and TransactionMetadata), written as a coordinator shard for
// broker/coordinator/runtime.h, the runtime the group coordinator uses.
//
// Threading: NOT thread-safe. One strand owns each instance (the partition's); every call, replay and the
// marker callbacks run there.
//
// Lifecycle: inactive (every API answers NOT_COORDINATOR) -> begin_loading (COORDINATOR_LOAD_IN_PROGRESS),
// replay of the partition's records, finish_loading -> active; unload() when leadership leaves.
//
// Persistence (Kafka's CoordinatorShard shape): the coordinator never writes. An operation validates the request
// against the current metadata, marks the transition pending (later requests for that id get
// CONCURRENT_TRANSACTIONS) and returns the TransactionLogValue record of the new state with the answer
// (`coordinator_result`); work nobody waits for (completing a transaction once its markers are written, aborting a
// timed-out one, removing an expired id) is queued for `take_writes()`. Metadata changes only when the runtime
// replays a committed record, so a coordinator rebuilt from the log after a failover holds what this one held.
//
// Transaction completion (two phases, as Kafka): EndTxn writes PrepareCommit/PrepareAbort and answers; when that
// record is replayed (or found by a load) the coordinator asks `send_markers` to write the COMMIT/ABORT control
// records into every partition of the transaction (retried by the sender until written); `markers_written` then
// queues CompleteCommit/CompleteAbort, after which the id accepts a new transaction.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "broker/txn/txn_record_codec.h"
#include "broker/txn/txn_types.h"

namespace sluice::txn {

class transaction_coordinator {
 public:
  enum class load_state { inactive, loading, active };
  using error_type = txn_error;  // Kafka's numbers, for the runtime's append outcomes

  /// `new_producer_id`: a producer id never handed out before (broker/producer_id_manager); its error is
  /// answered as COORDINATOR_NOT_AVAILABLE. `coordinator_epoch`: the leader epoch of this __transaction_state
  /// partition, read when loading (markers carry it). `send_markers`: writes a job's markers, then calls
  /// `markers_written` on this coordinator's strand.
  transaction_coordinator(int32_t partition, txn_config config, const sluice::clock& clock,
                          std::function<result<int64_t>()> new_producer_id,
                          std::function<int32_t()> coordinator_epoch, std::function<void(marker_job)> send_markers);

  // ---- ownership of the partition (coordinator_shard) ----
  void begin_loading();
  /// Applies one committed __transaction_state record (tombstone: the id is removed). While loading it rebuilds
  /// the ids; once active it completes the transition its write prepared (and starts the markers of a
  /// PrepareCommit/PrepareAbort). Undecodable records are logged and skipped.
  void replay(const bytes& key, const std::optional<bytes>& value);
  /// Active from now on: transactions found prepared get their markers written; timers start.
  void finish_loading();
  /// Leadership left: everything is forgotten (writes in flight answer with their append errors).
  void unload();
  load_state state() const { return state_; }
  /// Earliest monotonic deadline: the next check for timed-out transactions or expired ids.
  std::optional<int64_t> next_deadline() const;
  /// Aborts transactions older than their timeout (with an epoch bump that fences their producer) and removes
  /// ids idle longer than transactional.id.expiration.ms.
  void on_timer();
  std::vector<txn_write> take_writes();

  // ---- requests ----
  /// InitProducerId with a transactional id: a new producer id (epoch 0) for a new id; else the epoch bumped
  /// (a new producer id when it would overflow); an ongoing transaction is aborted first with the epoch fenced
  /// (answer CONCURRENT_TRANSACTIONS: the client retries). Errors: INVALID_TRANSACTION_TIMEOUT (<= 0 or over
  /// transaction.max.timeout.ms), CONCURRENT_TRANSACTIONS, PRODUCER_FENCED (KIP-360 expected id/epoch stale),
  /// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, and the append's errors as map_append_error maps them.
  coordinator_result<init_producer_id_result> init_producer_id(const init_producer_id_request& r);
  /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction becomes (or stays) Ongoing with these partitions.
  /// Errors: INVALID_PRODUCER_ID_MAPPING (unknown id or other producer id), PRODUCER_FENCED (other epoch),
  /// CONCURRENT_TRANSACTIONS (a transition in flight, or the last transaction still completing).
  coordinator_result<add_partitions_result> add_partitions(const add_partitions_request& r);
  /// Whether each partition is part of the ongoing transaction of (id, producer id, epoch) (AddPartitionsToTxn v4+
  /// verify_only, KIP-890): NONE for those that are, TRANSACTION_ABORTABLE for others (Kafka 4.x); id/epoch errors
  /// as above.
  std::vector<std::pair<topic_partition, txn_error>> verify_partitions(const add_partitions_request& r) const;
  /// EndTxn: an Ongoing transaction moves to PrepareCommit/PrepareAbort (answered NONE once written). A retry of
  /// a completed end answers NONE; CONCURRENT_TRANSACTIONS while it is still completing; INVALID_TXN_STATE for
  /// the opposite result or no transaction; id/epoch errors as add_partitions.
  coordinator_result<end_txn_result> end_txn(const end_txn_request& r);
  /// The markers of `job` are written: queues CompleteCommit/CompleteAbort (ignored if the transaction moved on).
  void markers_written(const marker_job& job);

  // ---- reads ----
  std::vector<transaction_description> describe(const std::vector<std::string>& ids) const;
  /// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when not active, else NONE and the matching transactions.
  txn_error list(const list_transactions_filter& filter, std::vector<transaction_listing>& out) const;
  const transaction_metadata* find(const std::string& id) const;
  int32_t partition() const { return partition_; }

 private:
  int64_t wall() const { return clock_.now_ms(); }
  std::optional<txn_error> not_serving() const;
  /// Whether a request of (producer id, epoch) may act on `id`: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
  /// INVALID_PRODUCER_ID_MAPPING (unknown id, other producer id), PRODUCER_FENCED (other epoch); nullopt: it may.
  std::optional<txn_error> check_producer(const std::string& id, int64_t producer_id, int16_t producer_epoch) const;
  /// The record of `m` moved to `v` (m's pending transition set to v.state).
  txn_record transition(transaction_metadata& m, const txn_log_value& v);
  txn_log_value snapshot(const transaction_metadata& m) const;
  /// `failed` of a result: drops m's pending transition (and an id never written), maps the append error.
  void drop_pending(const std::string& id);
  /// A PrepareAbort with the epoch bumped (fencing the producer), for InitProducerId and timeouts.
  txn_log_value fence_and_abort(const transaction_metadata& m) const;
  void start_markers(transaction_metadata& m);
  void queue(std::vector<txn_record> records, std::function<void(txn_error)> done);
  void abort_timed_out();
  void remove_expired();

  int32_t partition_;
  txn_config config_;
  const sluice::clock& clock_;
  std::function<result<int64_t>()> new_producer_id_;
  std::function<int32_t()> coordinator_epoch_fn_;
  std::function<void(marker_job)> send_markers_;
  load_state state_ = load_state::inactive;
  int32_t coordinator_epoch_ = 0;
  std::map<std::string, transaction_metadata> txns_;
  /// The epoch before a bump a pending write makes (not in the record: Kafka keeps lastProducerEpoch in memory).
  std::map<std::string, int16_t> pending_last_epoch_;
  std::vector<txn_write> writes_;
  std::optional<int64_t> next_abort_check_;
  std::optional<int64_t> next_expiry_check_;
};

std::string_view to_string(transaction_coordinator::load_state s);

}  // namespace sluice::txn
