#pragma once
// Reading and writing a coordinator's internal-topic partition (__consumer_offsets today, __transaction_state
// next): the two halves every coordinator shard needs from the log, independent of what its records mean.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "broker/partition.h"
#include "protocol/error_code.h"

namespace sluice::broker::coordinator {

using record_bytes = std::vector<uint8_t>;

/// One internal-topic record: key bytes and value bytes, or no value for a tombstone.
struct internal_record {
  record_bytes key;
  std::optional<record_bytes> value;
};

/// The producer a coordinator's transactional write belongs to (KIP-98: the group coordinator's TxnOffsetCommit
/// records are appended as a transactional batch of the producer's id and epoch, and stay pending until that
/// producer's COMMIT or ABORT marker lands in the same partition).
struct producer_stamp {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

/// Where a replayed record came from (Kafka's CoordinatorShard.replay(offset, producerId, producerEpoch, record)).
struct record_context {
  int64_t offset = -1;           // the record's offset in the log
  int64_t producer_id = -1;      // its batch's producer id (-1: none)
  int16_t producer_epoch = -1;
  bool transactional = false;    // its batch has the transactional attribute bit
};

/// A transaction marker found in the log: a control batch whose record is a COMMIT or ABORT
/// (storage/control_record.h; Kafka's CoordinatorShard.replayEndTransactionMarker).
struct txn_marker_context {
  int64_t offset = -1;           // the control record's offset
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool commit = false;           // COMMIT (1) or ABORT (0)
  int32_t coordinator_epoch = -1;
};

/// Appends one batch of internal records with acks=-1 and completes once the high watermark passes it (Kafka's
/// coordinators write with required acks -1 and answer when the write is committed: a commit acknowledged by a
/// coordinator survives its failover).
///
/// Strand: the partition's; `append` and `done` run there (`done` may run before `append` returns).
class internal_writer {
 public:
  /// `commit_timeout_ms`: how long to wait for the ISR (offsets.commit.timeout.ms,
  /// transaction.state.log... for the transaction coordinator); `min_insync_replicas`: read at each append.
  internal_writer(std::shared_ptr<partition> part, sluice::clock& clock, int64_t commit_timeout_ms,
                  std::function<int32_t()> min_insync_replicas);

  /// Appends `records` as one uncompressed batch stamped with the clock's wall time. `done` gets NONE once the
  /// high watermark passed the batch; else the append's error (e.g. NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
  /// MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR) or how the wait ended: NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR shrank
  /// below the minimum meanwhile), NOT_LEADER_OR_FOLLOWER (leadership moved), REQUEST_TIMED_OUT.
  void append(const std::vector<internal_record>& records, std::function<void(protocol::error_code)> done);
  /// The same, also telling `done` the base offset the batch was written at (-1 when it was not written), so the
  /// shard can replay each record with its offset. With `producer`, the batch is transactional, stamped with
  /// that producer id and epoch (and the base sequence, set_base_sequence), appended with the coordinator origin (the log
  /// checks the epoch and opens the producer's transaction, no sequence check: Kafka's AppendOrigin.COORDINATOR).
  /// A stale epoch fails with INVALID_PRODUCER_EPOCH.
  void append(const std::vector<internal_record>& records, const std::optional<producer_stamp>& producer,
              std::function<void(protocol::error_code, int64_t base_offset)> done);

  /// The base sequence every batch is stamped with, with or without a producer (default -1, NO_SEQUENCE, as Kafka's
  /// transaction coordinator writes __transaction_state). Kafka's CoordinatorRuntime, which writes
  /// __consumer_offsets, stamps 0 (its MemoryRecordsBuilder's baseSequence); the records then carry sequences
  /// 0, 1, ... Only the batch header differs, not its size.
  void set_base_sequence(int32_t base_sequence) { base_sequence_ = base_sequence; }

 private:
  std::shared_ptr<partition> part_;
  sluice::clock& clock_;
  int64_t commit_timeout_ms_;
  std::function<int32_t()> min_insync_replicas_;
  int32_t base_sequence_ = -1;
};

/// What replay_log calls: `record` for each keyed record of an uncompressed data batch, with its offset and its
/// batch's producer; `marker` (may be empty) for each transaction marker (Kafka's CoordinatorLoaderImpl hands a
/// control batch's COMMIT/ABORT to the shard's replayEndTransactionMarker; other control records are skipped).
struct replay_visitor {
  std::function<void(const record_bytes& key, const std::optional<record_bytes>& value, const record_context& ctx)>
      record;
  std::function<void(const txn_marker_context& marker)> marker;
};

/// Reads every record of `part` from its log start to its log end offset (a new leader loads everything it has,
/// as Kafka's coordinator loader does), in offset order: keyed records of uncompressed data batches go to
/// `visit.record`, transaction markers to `visit.marker` (keyless records, compressed batches and control records
/// that are not markers skipped). Returns the number of data records visited; a read error stops the replay there
/// (logged). On the partition's strand.
size_t replay_log(partition& part, const replay_visitor& visit);
/// The same without the contexts: `visit(key, value)` for each keyed data record; markers skipped.
size_t replay_log(partition& part,
                  const std::function<void(const record_bytes& key, const std::optional<record_bytes>& value)>& visit);

}  // namespace sluice::broker::coordinator
