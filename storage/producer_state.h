#pragma once
// Per-partition producer state for idempotent producers (KIP-98; Kafka's ProducerStateManager,
// ProducerStateEntry and ProducerAppendInfo). For every producer id seen in the partition: its epoch and
// the metadata of its last 5 batches, so that a retried batch is recognised and answered with the offsets
// it was first written at instead of being written again.
//
// Owned by the storage::log; NOT thread-safe: touched only on the partition's strand, like the log.
// Transactions (KIP-98): each producer's open transaction (its first offset) and the coordinator epoch of its
// last marker; the open transactions and the completed ones whose marker the high watermark has not passed yet
// give the first unstable offset, which bounds the last stable offset (LSO) read_committed consumers see.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "base/result.h"
#include "storage/control_record.h"
#include "storage/record_batch.h"

namespace sluice::storage {

/// Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: retries of the last 5 batches are deduplicated
/// (the producer's max.in.flight.requests.per.connection may not exceed 5 with idempotence).
inline constexpr size_t producer_batch_window = 5;

/// What one appended batch of a producer covered.
struct producer_batch_metadata {
  int32_t first_seq = -1;
  int32_t last_seq = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t max_timestamp = -1;
  friend bool operator==(const producer_batch_metadata&, const producer_batch_metadata&) = default;
};

/// The state of one producer id in one partition.
struct producer_state_entry {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;                   // -1 (RecordBatch.NO_PRODUCER_EPOCH): no state
  std::deque<producer_batch_metadata> batches;   // oldest first, at most producer_batch_window, one epoch
  int64_t last_timestamp = -1;                   // max timestamp of the newest batch: producer.id.expiration.ms
  int32_t coordinator_epoch = -1;                // transactions (later): epoch of the last marker's coordinator
  int64_t current_txn_first_offset = -1;         // transactions (later): first offset of the open transaction

  int32_t last_seq() const { return batches.empty() ? -1 : batches.back().last_seq; }
  /// The cached batch of epoch `epoch` with exactly this sequence range (Kafka's findDuplicateBatch).
  const producer_batch_metadata* find_duplicate(int16_t epoch, int32_t first_seq, int32_t last_seq) const;
  friend bool operator==(const producer_state_entry&, const producer_state_entry&) = default;
};

/// A transaction ended by a marker (Kafka's CompletedTxn): its first data offset (the marker's own offset for
/// a transaction that wrote nothing here), the marker's offset, and whether it was aborted.
struct completed_txn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  bool aborted = false;
  /// Whether the producer had written data in the transaction. A marker with none (no transaction open here)
  /// completes nothing: it changes neither the last stable offset nor the aborted-transaction index (Kafka's
  /// ProducerAppendInfo.appendEndTxnMarker emits no CompletedTxn for it).
  bool has_data = true;
  friend bool operator==(const completed_txn&, const completed_txn&) = default;
};

/// Where a batch comes from: a client's Produce is checked; batches replayed from the log at recovery
/// (Kafka's AppendOrigin.REPLICATION / log loading) only update the state; a coordinator's own write to its
/// internal topic (Kafka's AppendOrigin.COORDINATOR: the group coordinator's transactional offset commits, stamped
/// with the producer's id and epoch and RecordBatch.NO_SEQUENCE) has its epoch checked but no sequence or
/// duplicate check (Kafka's ProducerAppendInfo checks sequences for CLIENT origin only).
enum class append_origin { client, recovery, coordinator };

/// The last sequence number of a batch: base sequence + last offset delta, wrapping past INT32_MAX to 0
/// (Kafka's DefaultRecordBatch.incrementSequence).
int32_t batch_last_sequence(int32_t base_sequence, int32_t last_offset_delta);

/// The producer state of one partition, plus its snapshot files `<20-digit offset>.snapshot` in the
/// partition directory (Kafka's names; our own format, see producer_state.cc).
class producer_state_manager {
 public:
  /// `dir`: the partition directory. `expiration_ms`: producer.id.expiration.ms.
  producer_state_manager(std::filesystem::path dir, int64_t expiration_ms);

  /// Updates staged by one append, applied only once the batches are written (commit()).
  struct pending_append {
    std::map<int64_t, producer_state_entry> updated;  // per producer id: new epoch + this append's batches
  };

  /// Checks one batch of producer `h.producer_id` (>= 0) whose offsets will be [h.base_offset,
  /// h.last_offset()] and stages it in `pending`. Rules (Kafka 2.5+ ProducerAppendInfo, client origin):
  ///  - a batch with the same epoch and exactly the sequence range of one of the last 5 batches is a
  ///    duplicate: returns that batch's metadata (its ORIGINAL offsets) and stages nothing;
  ///  - epoch lower than the producer's: errc::invalid_producer_epoch (INVALID_PRODUCER_EPOCH);
  ///  - a new (higher) epoch must start at sequence 0, unless the producer has no state: else
  ///    errc::out_of_order_sequence;
  ///  - same epoch: the first sequence must follow the last one (INT32_MAX wraps to 0), else
  ///    errc::out_of_order_sequence. A producer with no state (new, expired, or whose state was lost
  ///    with its data) is accepted at ANY sequence (KIP-360: no UNKNOWN_PRODUCER_ID any more).
  ///  - a transactional batch opens the producer's transaction at its base offset if none is open; a
  ///    non-transactional batch while one is open is errc::invalid_txn_state (Kafka's "Expected transactional
  ///    write from producer").
  /// `origin` coordinator: no duplicate and no sequence check (the epoch and transaction rules hold).
  /// Returns nullopt for a new batch (staged).
  sluice::result<std::optional<producer_batch_metadata>> check_and_stage(
      pending_append& pending, const record_batch_header& h, append_origin origin = append_origin::client) const;
  /// Applies the staged updates of an append whose batches were written.
  void commit(pending_append&& pending);

  /// Replays one batch read from the log (no checks; batches without a producer id are ignored). Moves
  /// map_end_offset() past it. A control batch needs its marker: replay_marker.
  void replay(const record_batch_header& h);

  // ---- transactions (KIP-98) ------------------------------------------------------------------------------

  /// Checks a marker for producer `h.producer_id` at epoch `h.producer_epoch` (Kafka's appendEndTxnMarker):
  /// an epoch older than the producer's is errc::invalid_producer_epoch; a coordinator epoch older than that of
  /// the producer's last marker is errc::coordinator_fenced.
  sluice::result<void> check_marker(const record_batch_header& h, const end_txn_marker& m) const;
  /// Applies a marker written at offset `h.base_offset` (or replayed at recovery): the producer's open
  /// transaction ends (its epoch becomes the marker's, which may fence older epochs; its coordinator epoch the
  /// marker's). The transaction stays unstable until the high watermark passes the marker. Returns it.
  completed_txn complete_txn(const record_batch_header& h, const end_txn_marker& m);
  /// The LSO an aborted transaction's index entry records (Kafka's lastStableOffset(completedTxn)): the first
  /// offset of the oldest transaction still open after it ended, else its marker offset + 1.
  int64_t last_stable_offset_after(const completed_txn& t) const;
  /// The first offset of the oldest open transaction, or of a completed one whose marker is not yet below the
  /// high watermark (Kafka's firstUnstableOffset); nullopt when there is none.
  std::optional<int64_t> first_unstable_offset() const;
  /// The high watermark moved to `hw`: completed transactions with markers below it are stable.
  void on_high_watermark_updated(int64_t hw);
  /// Open transactions: first offset -> producer id.
  const std::map<int64_t, int64_t>& open_transactions() const { return open_txns_; }

  /// Removes producers whose last batch timestamp is at least producer.id.expiration.ms older than
  /// `now_ms` and that have no open transaction (Kafka's removeExpiredProducers). Returns how many.
  size_t remove_expired(int64_t now_ms);

  /// The state of one producer, or nullptr.
  const producer_state_entry* find(int64_t producer_id) const;
  const std::map<int64_t, producer_state_entry>& producers() const { return producers_; }
  /// The log offset up to which (exclusive) this state reflects the log.
  int64_t map_end_offset() const { return map_end_offset_; }
  void set_map_end_offset(int64_t offset) { map_end_offset_ = offset; }
  /// Forgets every producer; map_end_offset() becomes `offset`.
  void reset(int64_t offset);
  int64_t expiration_ms() const { return expiration_ms_; }
  void set_expiration_ms(int64_t ms) { expiration_ms_ = ms; }

  // ---- snapshots ----------------------------------------------------------------------------------------

  /// Writes the state as `<map_end_offset>.snapshot` (temp file, fsync, rename, fsync of the directory) and
  /// returns its path. `durable` false: without the fsyncs (the caller syncs the file and the directory later; a
  /// snapshot torn by a crash before that fails its CRC at load and is deleted, and the log is replayed from an
  /// older one). Errors: errc::io_error.
  sluice::result<std::filesystem::path> take_snapshot(bool durable = true);
  /// Offset of the snapshot last written or loaded by this manager (-1: none).
  int64_t last_snapshot_offset() const { return last_snapshot_offset_; }
  /// Offsets of the snapshot files present, ascending.
  std::vector<int64_t> snapshot_offsets() const;
  /// Loads the newest valid snapshot whose offset <= `max_offset` (replacing the state); snapshot files
  /// above `max_offset` (a truncated or torn log) and corrupt ones (bad CRC, bad size) are deleted.
  /// Returns the snapshot's offset, or nullopt when none could be loaded (the state is then empty and
  /// map_end_offset() is -1). Entries already expired at `now_ms` are dropped.
  std::optional<int64_t> load_latest_snapshot(int64_t max_offset, int64_t now_ms);
  /// Deletes snapshot files with offset < `offset`, always keeping the newest file (retention and
  /// DeleteRecords move the log start offset; the newest snapshot still carries the producers whose data
  /// is gone, which KIP-360 keeps until they expire).
  void delete_snapshots_before(int64_t offset);
  /// Deletes snapshot files with offset > `offset` (truncation).
  void delete_snapshots_after(int64_t offset);

  /// The bytes of a snapshot of the current state (exposed for tests of the format).
  std::vector<uint8_t> encode_snapshot() const;
  /// Parses snapshot bytes; errc::corrupt_message on a bad magic, version, size or CRC.
  static sluice::result<std::map<int64_t, producer_state_entry>> decode_snapshot(std::span<const uint8_t> bytes);

 private:
  static void apply(producer_state_entry& entry, const record_batch_header& h);
  std::filesystem::path snapshot_path(int64_t offset) const;
  /// open_txns_ from the entries (after loading a snapshot or a reset).
  void rebuild_open_transactions();

  std::filesystem::path dir_;
  int64_t expiration_ms_;
  std::map<int64_t, producer_state_entry> producers_;
  std::map<int64_t, int64_t> open_txns_;                 // first offset -> producer id
  std::map<int64_t, completed_txn> unreplicated_txns_;   // first offset -> ended, marker not below the HW yet
  int64_t high_watermark_ = 0;
  int64_t map_end_offset_ = 0;
  int64_t last_snapshot_offset_ = -1;
};

}  // namespace sluice::storage
