#pragma once
// Log compaction (cleanup.policy=compact; Kafka's LogCleaner, KIP-534 for tombstones): keeps the latest
// record of every key in the segments below the first uncleanable offset, preserving offsets.
//
// One pass over a log has three steps, so that the heavy part runs off the partition's strand:
//   1. log::plan_cleaning (strand): which inactive segments may be rewritten, the aborted transactions
//      among them, the last batch of each live producer.
//   2. clean_log (any thread): reads those segment files through its own file descriptors (inactive
//      segments never change), maps each key of the dirty part to its latest offset (offset_map), and
//      writes the survivors of each group of segments as "<base>.log.cleaned" with its indexes, fsynced.
//   3. log::install_cleaned (strand): renames them to ".swap" (the commit point), removes the segments
//      they replace and renames the swap files to their final names; log::open finishes a swap that a
//      crash interrupted and deletes ".cleaned" leftovers.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/file_region.h"
#include "base/result.h"
#include "storage/compression.h"
#include "storage/transaction_index.h"

namespace sluice::storage {

/// Kafka's SkimpyOffsetMap: a fixed array of (16-byte key hash, int64 offset) slots with linear probing.
/// Memory is exactly what the constructor is given (log.cleaner.dedupe.buffer.size / log.cleaner.threads),
/// 24 bytes a slot; it is full() at `load_factor` of its slots (log.cleaner.io.buffer.load.factor, 0.9).
/// Two keys whose 128-bit hashes collide count as one key (the chance is negligible, as with Kafka's MD5).
class offset_map {
 public:
  static constexpr size_t slot_bytes = 24;
  explicit offset_map(size_t memory_bytes, double load_factor = 0.9);

  /// Records `offset` as the latest offset of `key` (a later put of the same key replaces it).
  void put(std::span<const uint8_t> key, int64_t offset);
  /// The latest offset recorded for `key`, or -1.
  int64_t get(std::span<const uint8_t> key) const;
  void clear();

  size_t size() const { return size_; }
  size_t slots() const { return slots_.size(); }
  bool full() const { return size_ >= max_entries_; }
  /// The largest offset put since clear(), or -1.
  int64_t latest_offset() const { return latest_offset_; }

 private:
  struct slot {
    uint64_t hash_hi = 0;
    uint64_t hash_lo = 0;
    int64_t offset = -1;  // -1: empty
  };
  static_assert(sizeof(slot) == slot_bytes);
  size_t find(uint64_t hi, uint64_t lo) const;  // the slot holding the hash, or the empty slot where it goes

  std::vector<slot> slots_;
  size_t size_ = 0;
  size_t max_entries_ = 0;
  int64_t latest_offset_ = -1;
};

/// One inactive segment as the plan saw it (the install step checks it is still there, unchanged).
struct cleanable_segment {
  int64_t base_offset = 0;
  int64_t next_offset = 0;  // last offset + 1 (base offset when empty)
  int64_t size_bytes = 0;
  int64_t max_timestamp = -1;  // largest batch max timestamp (max.compaction.lag.ms), -1 when empty
  /// The segment's .log descriptor as the plan saw it (segment::file()): the cleaner reads these bytes, whatever
  /// happens to the file's name meanwhile. Null: open the file by name (tests that make plans by hand).
  std::shared_ptr<const file_handle> file;
};

/// What log::plan_cleaning hands to clean_log: nothing in it refers to the log object (only to the segments'
/// descriptors, shared).
struct cleaning_plan {
  std::filesystem::path dir;
  /// The segments that may be rewritten, oldest first: every segment wholly below first_uncleanable_offset.
  std::vector<cleanable_segment> segments;
  int64_t log_start_offset = 0;
  /// Offsets below were cleaned by an earlier pass (the cleaner-offset-checkpoint), clamped to the log.
  int64_t first_dirty_offset = 0;
  /// min(active segment base, high watermark, first unstable offset, first segment younger than
  /// min.compaction.lag.ms): nothing at or above it is touched (Kafka's firstUncleanableOffset).
  int64_t first_uncleanable_offset = 0;
  /// Aborted transactions whose data lies in the segments: their data records are removed.
  std::vector<aborted_txn> aborted;
  /// producer id -> offset of the last batch of that producer still in the producer state: an emptied batch
  /// is kept as a header with no records so its sequence survives (Kafka's BatchRetention.RETAIN_EMPTY).
  std::map<int64_t, int64_t> producer_last_offsets;
  int64_t segment_bytes = 1073741824;  // groups of segments are rewritten into one of at most this size
  int32_t index_interval_bytes = 4096;
  compression_levels levels;

  /// Bytes of the segments at or above first_dirty_offset (Kafka's dirty bytes) and in all.
  int64_t dirty_bytes() const;
  int64_t total_bytes() const;
};

struct cleaning_options {
  int64_t now_ms = 0;                         // the cleaner's clock, for delete horizons (KIP-534)
  int64_t delete_retention_ms = 86400000;     // delete.retention.ms: how long tombstones are kept
  /// Called with the bytes read or written so far by this pass, may sleep (log.cleaner.io.max.bytes.per.second).
  std::function<void(int64_t bytes)> throttle;
  /// Polled between batches; true makes clean_log stop with errc::io_error "cleaning cancelled" (shutdown).
  std::function<bool()> cancelled;
};

/// One group of source segments rewritten into "<base>.log.cleaned" (+ .index/.timeindex/.txnindex .cleaned).
struct cleaned_group {
  std::vector<cleanable_segment> sources;
  int64_t base_offset = 0;  // = sources.front().base_offset
  int64_t bytes_before = 0;
  int64_t bytes_after = 0;
};

struct cleaning_stats {
  int64_t bytes_read = 0;  // by the mapping and by the rewrite (a dirty segment is read twice)
  int64_t bytes_written = 0;
  int64_t records_read = 0;
  int64_t records_retained = 0;
  int64_t tombstones_removed = 0;
  int64_t aborted_records_removed = 0;
  int64_t markers_removed = 0;
  int64_t empty_batches_retained = 0;
  size_t keys_mapped = 0;
};

struct cleaning_result {
  std::vector<cleaned_group> groups;
  /// The next first dirty offset (what the cleaner checkpoint becomes once installed): the offset past the
  /// last one mapped, or first_uncleanable_offset when the whole dirty part fit in the offset map.
  int64_t end_offset = 0;
  /// The latest delete horizon of the tombstones kept (KIP-534), or -1: a pass after it removes them even
  /// when nothing new is dirty (Kafka's latestDeleteHorizon).
  int64_t latest_delete_horizon = -1;
  cleaning_stats stats;
};

/// Step 2 (any thread): maps the dirty part of the plan's segments into `map` (cleared first), then
/// rewrites every segment with base offset below the end offset, grouped up to segment_bytes (a group in
/// which every batch stays as it was is not rewritten: its files are dropped and it is not in the result),
/// ending each group at the offsets its sources ended at (when the last batch goes, an empty batch without
/// producer stands at its offsets, so a restart can tell which segments a swap replaces),
/// keeping a record iff:
///  - its batch is a control batch (a COMMIT/ABORT marker) whose transaction still has a record in the log, or
///    whose delete horizon has not passed (a marker of a transaction with nothing left gets one: now +
///    delete.retention.ms, as tombstones), else
///  - its batch is not transactional data of an aborted transaction, and
///  - it has a key whose latest mapped offset is <= its offset (or its offset is past the mapped range), and
///  - it has a value, or it is a tombstone whose batch has no delete horizon yet or one still in the future.
/// A rewritten batch keeps its base offset, last offset delta, producer fields, leader epoch, codec and
/// timestamp type; a batch with retained tombstones and no horizon gets one: now + delete.retention.ms in
/// its base timestamp with attribute bit 6 (KIP-534). Keyless records are dropped (Kafka counts them as
/// invalid). Batches that keep every record and need no horizon are copied byte for byte.
/// Errors: errc::io_error (a file read or write failed; a segment file missing means retention or a
/// truncation removed it meanwhile: the pass is dropped; or options.cancelled said stop), errc::corrupt_message
/// (a batch does not parse or decompress). On error no ".cleaned" file is left.
sluice::result<cleaning_result> clean_log(const cleaning_plan& plan, const cleaning_options& options,
                                          offset_map& map);

/// Kafka's Throttler for log.cleaner.io.max.bytes.per.second: sleeps as needed so that the bytes reported
/// by successive calls never run ahead of `bytes_per_second` over the time since construction.
class io_throttler {
 public:
  io_throttler(double bytes_per_second, sluice::clock& clock, std::function<void(int64_t ms)> sleep_ms);
  /// `total_bytes`: the bytes done so far (monotonic). Sleeps through sleep_ms when ahead of the rate.
  void maybe_throttle(int64_t total_bytes);

 private:
  double rate_;
  sluice::clock& clock_;
  std::function<void(int64_t)> sleep_;
  int64_t start_ms_;
};

}  // namespace sluice::storage
