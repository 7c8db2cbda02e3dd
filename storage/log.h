#pragma once
// One partition's log (Kafka's UnifiedLog/LocalLog): a directory "<topic>-<partition>" of segments ordered
// by base offset; the last one is the active segment that takes appends. NOT thread-safe: every call
// comes from the partition's strand (DESIGN.md §3), and the file_regions it hands out may be sent from any
// thread afterwards (their bytes never change).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "base/clock.h"
#include "base/file_region.h"
#include "base/result.h"
#include "storage/background_flusher.h"
#include "storage/compression.h"
#include "storage/leader_epoch_cache.h"
#include "storage/log_cleaner.h"
#include "storage/control_record.h"
#include "storage/producer_state.h"
#include "storage/transaction_index.h"
#include "storage/record_batch.h"
#include "storage/segment.h"

namespace sluice::storage {

/// Topic-level settings of one log, under Kafka's names.
struct log_config {
  int64_t segment_bytes = 1073741824;   // segment.bytes / log.segment.bytes
  int32_t index_interval_bytes = 4096;  // index.interval.bytes
  int32_t max_message_bytes = 1048588;  // max.message.bytes: a batch larger -> errc::record_too_large
  // --- added in part B (defaults keep part A behaviour) ---
  int64_t segment_ms = 604800000;       // segment.ms / log.roll.ms: roll when the active segment is older
  int64_t flush_messages = INT64_MAX;   // flush.messages: fsync after this many unflushed records
  int64_t flush_ms = INT64_MAX;         // flush.ms: fsync when the oldest unflushed append is this old
  timestamp_type message_timestamp_type = timestamp_type::create_time;  // message.timestamp.type
  // --- idempotent producers (storage/producer_state.h); broker-level keys in Kafka ---
  int64_t producer_id_expiration_ms = 86400000;                 // producer.id.expiration.ms
  int64_t producer_id_expiration_check_interval_ms = 600000;    // producer.id.expiration.check.interval.ms
  // --- compression (storage/log_validator.h) ---
  // compression.type: std::nullopt is `producer` (store each batch with the codec it came with); a codec
  // (none = `uncompressed`) makes append recompress batches that carry another one.
  std::optional<compression_codec> compression_type;
  compression_levels compression_level;  // compression.gzip.level, .lz4.level, .zstd.level (KIP-390)
  // --- per-record rules of a client's batches (Kafka's LogValidator.validateRecord) ---
  bool compacted = false;                          // cleanup.policy has `compact`: records need a key
  int64_t timestamp_before_max_ms = INT64_MAX;     // message.timestamp.before.max.ms (CreateTime only)
  int64_t timestamp_after_max_ms = INT64_MAX;      // message.timestamp.after.max.ms (the broker passes Kafka's 1 h)
};

struct append_result {
  int64_t base_offset;    // offset of the first record appended
  int64_t last_offset;    // offset of the last record appended
  int64_t max_timestamp;  // largest batch max timestamp (the append time for LogAppendTime)
  int32_t record_count;
  int64_t log_append_time = -1;  // added: the broker time stamped on LogAppendTime batches, else -1
  // Idempotence: the batch was a retry of one already in the log; nothing was written and the offsets
  // above are those of the ORIGINAL batch (record_count 0).
  bool duplicate = false;
};

/// What bounds a compaction plan (log::plan_cleaning); the broker's cleaner fills it per log.
struct cleaning_limits {
  int64_t high_watermark = INT64_MAX;  // nothing at or above it is cleaned (consumers have not all seen it)
  int64_t first_dirty_offset = 0;      // the cleaner checkpoint: offsets below were cleaned before
  int64_t min_compaction_lag_ms = 0;   // min.compaction.lag.ms
  int64_t now_ms = 0;
};

/// Where log::open starts recovery; read from the log dir's checkpoint files by the log_manager.
struct log_recovery_state {
  int64_t recovery_point = -1;    // offsets below were fsynced; -1: unknown (recover every segment)
  int64_t log_start_offset = -1;  // from log-start-offset-checkpoint; -1: the first segment's base offset
};

class log {
 public:
  /// Opens (creating if missing) the partition directory `dir` and recovers it: with no recovery point known,
  /// every segment is scanned batch by batch (length, magic, CRC32C, increasing offsets), a torn or corrupt
  /// tail is cut at the first invalid byte and that segment's indexes are rebuilt from the scan.
  /// Errors: errc::io_error.
  static sluice::result<std::unique_ptr<log>> open(std::filesystem::path dir, log_config config,
                                                   sluice::clock& clock);
  /// As above, recovering every segment from `state.recovery_point` (Kafka: segments past the recovery
  /// point of recovery-point-offset-checkpoint) instead of the whole active segment.
  static sluice::result<std::unique_ptr<log>> open(std::filesystem::path dir, log_config config,
                                                   sluice::clock& clock, log_recovery_state state);

  ~log();
  log(const log&) = delete;
  log& operator=(const log&) = delete;

  /// Appends one or more v2 record batches concatenated as a producer sends them (the Records field).
  /// Every batch is checked before any is written: size fields consistent with the buffer and >= the v2
  /// header (errc::corrupt_message), magic 2 (errc::unsupported_magic), batch size <= max.message.bytes
  /// (errc::record_too_large), CRC32C (errc::corrupt_message), recordsCount >= 1 and == lastOffsetDelta + 1
  /// (errc::invalid_record, Kafka's LogValidator). A compressed batch, or any batch when compression.type
  /// names another codec than it carries, also has its records checked (decompressed if needed:
  /// errc::corrupt_message if they do not decompress, errc::invalid_record if malformed) and is rebuilt
  /// with the topic's codec when that differs (storage/log_validator.h); a rebuilt batch larger than
  /// max.message.bytes is errc::record_too_large. Then base offsets (from the LEO on) and the partition
  /// leader epoch are rewritten IN PLACE in `batches` (outside the CRC; for message.timestamp.type
  /// LogAppendTime also the timestamp type and max timestamp, with a new CRC), the active segment is rolled
  /// first if the batches would push it past segment.bytes (or it is older than segment.ms, or offsets would
  /// overflow its int32 relative offsets), and the bytes are written with one write(2). Nothing is written
  /// when any batch is invalid. An empty buffer is errc::invalid_record. Write failures: errc::io_error.
  /// `origin`: append_origin::coordinator for a coordinator's own batches (no sequence or duplicate check of
  /// their producer, producer_state.h); client otherwise.
  /// A client's batch with a producer id must have a base sequence >= 0 (errc::invalid_record). Its records
  /// are checked against the topic's record rules (log_config: a key on compacted topics, CreateTime
  /// timestamps within message.timestamp.before/after.max.ms); when any is refused nothing is written, the
  /// error is errc::invalid_timestamp if a timestamp was refused, else errc::invalid_record, and the refused
  /// records are appended to `*rejected` when given (Kafka's RecordValidationException with its record
  /// errors, answered by Produce v8+).
  sluice::result<append_result> append(std::span<uint8_t> batches, int32_t leader_epoch,
                                       append_origin origin = append_origin::client,
                                       std::vector<record_error>* rejected = nullptr);

  /// Whole batches starting with the one that contains `offset`, from ONE segment, at most `max_bytes`,
  /// never a batch whose base offset >= `max_offset` (the high watermark, exclusive). With `min_one_batch`
  /// (KIP-74: the first partition of a fetch) the first batch is returned whole even if larger than
  /// max_bytes. offset < log start offset or > LEO: errc::offset_out_of_range; offset == LEO: empty result.
  /// A segment with nothing at/after `offset` passes on to the next one.
  sluice::result<read_result> read(int64_t offset, int32_t max_bytes, int64_t max_offset, bool min_one_batch);

  int64_t log_start_offset() const { return log_start_offset_; }
  int64_t log_end_offset() const { return log_end_offset_; }  // next offset to be assigned (LEO)
  int64_t size_bytes() const;                                  // total bytes of all segments
  /// Offsets below this are fsynced (the value written to recovery-point-offset-checkpoint). With a background
  /// flusher it moves past a rolled segment only once that segment's flush has finished and a later call on the
  /// strand (append, flush_if_needed, roll, flush) has taken the result.
  int64_t recovery_point() const { return recovery_point_; }

  /// Rolls hand the fsync of the segment they end to `flusher` (Kafka's UnifiedLog.roll schedules it too) instead
  /// of running it on the strand; nullptr (the default): the roll fsyncs inline. The flusher must outlive every
  /// roll. A failed background fsync is a log dir failure (storage/log_dir_failure.h), and the recovery point then
  /// stays where it was. flush() and close() still fsync whatever a background flush has not finished.
  void set_background_flusher(background_flusher* flusher);
  size_t segment_count() const { return segments_.size(); }
  /// Base offsets of the segments, oldest first.
  std::vector<int64_t> segment_base_offsets() const;
  const log_config& config() const { return config_; }
  /// Replaces the topic-level settings (a topic config change); takes effect from the next append.
  void update_config(const log_config& config) { config_ = config; }

  /// Recovery point and log start offset as last published by the owning strand; the one pair of values
  /// that may be read from another thread (the log_manager's checkpoint writer).
  log_recovery_state checkpoint_state() const {
    return {published_recovery_point_.load(std::memory_order_acquire),
            published_log_start_offset_.load(std::memory_order_acquire)};
  }

  /// fsyncs the active segment and its indexes; the recovery point becomes the LEO.
  sluice::result<void> flush();
  /// Flushes and closes every file. Further calls other than the accessors are not allowed.
  /// `durable` false: closes without the fsync and the producer-state snapshot, for a log about to be deleted.
  void close(bool durable = true);
  const std::filesystem::path& dir() const { return dir_; }

  // ---- part B: time index, retention, DeleteRecords, flush policy ----------------------------------

  /// KIP-79 ListOffsets by timestamp: the first offset (in offset order) whose record timestamp >=
  /// `timestamp_ms`, or -1 when no record is that late; the records of compressed batches are read
  /// (decompressed one batch at a time), as Kafka's LogSegment.findOffsetByTimestamp. Only offsets >= the
  /// log start offset are considered. Errors as segment::offset_for_timestamp.
  /// `found_timestamp`, when given, receives the found record's timestamp (Kafka answers it).
  sluice::result<int64_t> offset_for_timestamp(int64_t timestamp_ms, int64_t* found_timestamp = nullptr);

  struct timestamp_and_offset {
    int64_t timestamp = -1;
    int64_t offset = -1;
  };
  /// KIP-734 ListOffsets MAX_TIMESTAMP (-3): the largest batch max timestamp and the offset of the first
  /// record carrying it (in the first batch with that max timestamp; a compressed batch is decompressed),
  /// as Kafka 3.7.1+/4.x (UnifiedLog.fetchOffsetByTimestamp with RecordBatch.offsetOfMaxTimestamp), or
  /// {-1, -1} for an empty log.
  sluice::result<timestamp_and_offset> max_timestamp_and_offset();

  /// Retention (Kafka's deleteOldSegments): deletes whole segments, oldest first, while either the
  /// segment's max timestamp is older than now - `retention_ms` (-1: no time limit), or the log is larger
  /// than `retention_bytes` by at least that segment's size (-1: no size limit; never the active segment).
  /// A non-empty active segment that breaches `retention_ms` (an idle partition) is deleted too, after
  /// rolling a new empty active segment at the LEO (Kafka's deleteSegments): the log start offset then
  /// equals the LEO. The log start offset moves to the base offset of the first remaining segment. Only
  /// segments wholly below `high_watermark` are deleted (for the active segment: LEO <= HW; Kafka: never
  /// delete what followers or consumers have not seen; pass the HW). Returns the number deleted.
  sluice::result<int> delete_old_segments(int64_t retention_ms, int64_t retention_bytes,
                                          int64_t high_watermark = INT64_MAX);

  /// DeleteRecords (KIP-107): moves the log start offset to `offset` (ignored if not greater) and deletes
  /// the segments wholly below it. `offset` > LEO: errc::offset_out_of_range. Returns the new log start.
  sluice::result<int64_t> delete_records_before(int64_t offset);

  /// Flush policy (flush.messages / flush.ms): fsyncs when enough records or time have accumulated since
  /// the last flush. Call after one or more appends (a group commit: one fsync for several). Returns
  /// whether it flushed.
  sluice::result<bool> flush_if_needed();

  /// Removes every batch with offset >= `offset` (whole batches; for replica truncation, KIP-101).
  /// Producer snapshots above `offset` are deleted and the producer state is rebuilt.
  sluice::result<void> truncate_to(int64_t offset);

  // ---- compaction (storage/log_cleaner.h, storage/log_compaction.cc) --------------------------------------

  /// Step 1 of a cleaning pass: the inactive segments wholly below the first uncleanable offset (min of the
  /// active segment's base, `limits.high_watermark`, the first unstable offset, and the base of the first
  /// segment with a record younger than min.compaction.lag.ms), the first dirty offset clamped into
  /// [log start, first uncleanable], the aborted transactions among them and each producer's last batch.
  /// nullopt when no segment qualifies.
  std::optional<cleaning_plan> plan_cleaning(const cleaning_limits& limits) const;
  /// Step 3: swaps the groups of `result` in for the segments they were made from. Every source segment must
  /// still be in the log, inactive and of the size the plan saw; else nothing is swapped, the ".cleaned" files
  /// are removed and the error is errc::not_found (retention, DeleteRecords or a truncation came first: the
  /// next pass starts over). Crash-safe at every step: ".swap" is the commit point (open() finishes it).
  /// Returns the bytes freed. Errors: errc::io_error.
  sluice::result<int64_t> install_cleaned(const cleaning_result& result);

  // ---- idempotent producers (KIP-98) ---------------------------------------------------------------
  // append() checks every batch with a producer id (>= 0) against the producer state: a retry of one of
  // the producer's last 5 batches succeeds with its original offsets and is not written again
  // (append_result::duplicate); errc::out_of_order_sequence / errc::invalid_producer_epoch reject the
  // append (nothing written). The state is snapshotted to `<offset>.snapshot` at every roll and at close;
  // open() loads the newest snapshot and replays the batch headers after it.

  /// The producer state of this partition (strand only).
  producer_state_manager& producer_state() { return *producer_state_; }

  // ---- replication (KIP-101, storage/log_replica.cc) ----------------------------------------------------

  /// A follower's append of batches copied from the leader: offsets, leader epochs and timestamps are kept
  /// as the leader wrote them. Checks as append() (sizes, magic, CRC) plus: the first base offset must be
  /// >= the LEO and offsets must increase (errc::offset_out_of_range otherwise); a gap moves the LEO up.
  /// Producer state is updated without sequence checks (Kafka's REPLICATION origin) and every batch whose
  /// partition leader epoch is newer than the latest known starts that epoch in leader_epochs().
  sluice::result<append_result> append_as_follower(std::span<const uint8_t> batches);

  /// A follower far behind a leader whose log starts past this LEO (Kafka's truncateFullyAndStartAt):
  /// deletes every segment and starts an empty log at `offset`.
  sluice::result<void> truncate_fully_and_start_at(int64_t offset);

  /// The leader epochs of this log (strand only).
  leader_epoch_cache& leader_epochs() { return *epochs_; }

  // ---- transactions (KIP-98, storage/log_txn.cc) --------------------------------------------------------
  // Transactional batches open their producer's transaction (producer_state.h); a marker (control batch)
  // written by the broker ends it. An aborted transaction is recorded in the `.txnindex` of the segment that
  // holds its marker; read_committed fetches ask collect_aborted for the ones overlapping what they read. The
  // partition bounds what read_committed consumers see by the last stable offset:
  // min(high watermark, first_unstable_offset()).

  struct marker_result {
    int64_t offset = -1;  // where the marker was written
    completed_txn txn;
  };
  /// Appends a COMMIT or ABORT marker for `producer_id` at `producer_epoch` (the coordinator's WriteTxnMarkers),
  /// stamped with the leader epoch. Errors: errc::invalid_producer_epoch (an epoch older than the producer's),
  /// errc::coordinator_fenced (an older coordinator epoch than the producer's last marker), errc::io_error.
  sluice::result<marker_result> append_marker(int64_t producer_id, int16_t producer_epoch, const end_txn_marker& m,
                                              int32_t leader_epoch);
  /// The producer-state checks of append_marker without the append: the same errors but io_error.
  sluice::result<void> check_marker(int64_t producer_id, int16_t producer_epoch, const end_txn_marker& m) const;
  /// The first offset of the oldest open (or not yet replicated) transaction; nullopt: none.
  std::optional<int64_t> first_unstable_offset() const { return producer_state_->first_unstable_offset(); }
  /// The partition's high watermark moved: transactions whose marker it passed are stable.
  void on_high_watermark_updated(int64_t hw) { producer_state_->on_high_watermark_updated(hw); }
  /// The aborted transactions overlapping [fetch_offset, upper_bound) (Kafka's collectAbortedTransactions), from
  /// the segment holding `fetch_offset` on, until an entry's LSO shows later segments cannot overlap.
  std::vector<aborted_txn> collect_aborted(int64_t fetch_offset, int64_t upper_bound) const;

 private:
  log(std::filesystem::path dir, log_config config, sluice::clock& clock);
  sluice::result<void> load(log_recovery_state state);
  // At open, before the segments are listed: finishes the swaps of "<base>.log.swap" files a crash left
  // (removes the segments each replaces, then renames it into place).
  sluice::result<void> complete_interrupted_swaps();
  segment& active() { return *segments_.rbegin()->second; }
  bool should_roll(int64_t bytes, int64_t offset_span, int64_t now_ms, int64_t max_timestamp) const;
  sluice::result<void> roll();
  // Background flushes of rolled segments (set_background_flusher). A job reports to this state, never to the log:
  // `synced_to` is the end of the last rolled segment synced by a job of the current `generation`; a truncation
  // starts a new generation so that a job for bytes it removed cannot move the recovery point over new ones.
  struct roll_flush_state {
    std::mutex mutex;
    uint64_t generation = 0;
    bool failed = false;  // a job's fsync failed: later jobs do not move the recovery point over its segment
    std::atomic<int64_t> synced_to{-1};
  };
  background_flusher* flusher_ = nullptr;
  std::shared_ptr<roll_flush_state> roll_flushes_;
  void take_finished_flushes();  // moves the recovery point to what finished jobs synced
  void forget_pending_flushes();  // a truncation or a full flush: what queued jobs sync no longer counts
  sluice::result<void> delete_segment(std::map<int64_t, std::unique_ptr<segment>>::iterator it);
  // Idempotence: newest snapshot <= LEO, then the batch headers after it (storage/producer_state.h).
  sluice::result<void> rebuild_producer_state();
  /// A marker batch written or replicated into segment `seg` (header `h`, whole bytes `batch`): completes the
  /// producer's transaction and, for an abort with data not indexed yet, appends its .txnindex entry. Returns the
  /// completed transaction; std::nullopt for a control batch of another type (no transaction ends).
  sluice::result<std::optional<completed_txn>> apply_marker_batch(segment& seg, const record_batch_header& h,
                                                                  std::span<const uint8_t> batch);
  /// A producer snapshot at the LEO; returns its path when one was written. `durable` false: not fsynced (a roll's
  /// background flush syncs it).
  std::optional<std::filesystem::path> snapshot_producer_state(bool durable = true);
  std::unique_ptr<producer_state_manager> producer_state_;
  std::unique_ptr<leader_epoch_cache> epochs_;
  void load_leader_epochs();  // at open: the checkpoint, trimmed to [log start, LEO]
  int64_t last_producer_expiry_check_ms_ = 0;

  std::filesystem::path dir_;
  log_config config_;
  sluice::clock& clock_;
  std::map<int64_t, std::unique_ptr<segment>> segments_;
  int64_t log_start_offset_ = 0;
  int64_t log_end_offset_ = 0;
  int64_t recovery_point_ = 0;
  int64_t unflushed_records_ = 0;
  int64_t last_flush_ms_ = 0;
  bool closed_ = false;
  std::atomic<int64_t> published_recovery_point_{0};
  std::atomic<int64_t> published_log_start_offset_{0};
  void publish() {
    published_recovery_point_.store(recovery_point_, std::memory_order_release);
    published_log_start_offset_.store(log_start_offset_, std::memory_order_release);
  }
};

}  // namespace sluice::storage
