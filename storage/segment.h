#pragma once
// One log segment: "<20-digit base offset>.log" holding whole v2 batches back to back, plus its sparse
// ".index" (offset -> position) and ".timeindex" (timestamp -> offset). Appends go through write(2) at the
// end of the file; reads hand out file_regions that stay valid while anyone holds them, even after the
// segment is deleted (the fd is shared). Not thread-safe: owned by the partition's log, on its strand.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/file_region.h"
#include "base/result.h"
#include "storage/offset_index.h"
#include "storage/record_batch.h"
#include "storage/time_index.h"
#include "storage/transaction_index.h"

namespace sluice::storage {

/// Whole batches of one partition as a byte range of a segment file (see log::read).
struct read_result {
  sluice::file_region region;  // whole batches; empty (size 0, no file) when nothing to return
  int64_t first_offset = -1;   // base offset of the first returned batch, or -1
};

/// The name a segment's files carry while compaction writes or swaps them in (storage/log_cleaner.h):
/// "<base>.log" + "" / ".cleaned" / ".swap", and the same for .index, .timeindex and .txnindex.
enum class segment_suffix { none, cleaned, swap };
const char* to_suffix(segment_suffix s);

/// A batch header and where the batch starts in its .log file.
struct batch_position {
  record_batch_header header;
  int64_t position = 0;
};

/// What the background flush of a segment that has become inactive syncs (log.cc's roll): the .log through the
/// segment's shared descriptor, then other files by path (its indexes, the roll's producer snapshot; one removed
/// or renamed meanwhile is skipped: a deleted file needs no sync, and a renamed one is synced by whoever renamed
/// it), then the directory when set.
struct segment_sync_target {
  std::shared_ptr<const file_handle> file;
  std::filesystem::path log_path;
  std::vector<std::filesystem::path> paths;
  std::optional<std::filesystem::path> directory;
  /// fdatasyncs all of it. A failed fsync is a log dir failure (detail::io_failure). Any thread.
  sluice::result<void> sync() const;
};

class segment {
 public:
  /// Creates empty files for a new segment at `base_offset` (existing files of that name are truncated).
  /// `suffix`: the files of a segment being written by the cleaner (".cleaned") or swapped in (".swap").
  static sluice::result<std::unique_ptr<segment>> create(const std::filesystem::path& dir, int64_t base_offset,
                                                         int32_t index_interval_bytes, int64_t now_ms,
                                                         segment_suffix suffix = segment_suffix::none);
  /// Opens an existing segment. Neither scans nor validates: call load() or recover() next.
  static sluice::result<std::unique_ptr<segment>> open(const std::filesystem::path& dir, int64_t base_offset,
                                                       int32_t index_interval_bytes, int64_t now_ms,
                                                       segment_suffix suffix = segment_suffix::none);
  /// Renames the files of segment `base_offset` from one suffix to another: .index, .timeindex and .txnindex
  /// first (those that exist), the .log last, so that the .log's name tells how far a swap went.
  /// A missing .log is errc::io_error.
  static sluice::result<void> rename_files(const std::filesystem::path& dir, int64_t base_offset, segment_suffix from,
                                           segment_suffix to);
  /// Removes the .index, .timeindex, .txnindex and .log files of segment `base_offset` carrying `suffix` (".cleaned":
  /// a dropped compaction pass; none: segments recovery deletes after a torn one); missing ones are fine.
  static void remove_files_of(const std::filesystem::path& dir, int64_t base_offset, segment_suffix suffix);

  /// Full recovery (Kafka's LogSegment.recover): reads every batch from `from_position` (a batch start; 0 =
  /// whole file) checking size fields, magic, CRC32C and increasing offsets; cuts the file at the first
  /// invalid byte; rebuilds both indexes from that point. Returns the number of bytes cut off.
  sluice::result<int64_t> recover(int64_t from_position = 0);

  /// Recovery from the first batch containing offsets >= `offset` (the recovery point): data before it is
  /// trusted (was fsynced), indexes are cut there and rebuilt by the scan.
  sluice::result<int64_t> recover_from_offset(int64_t offset);

  /// Cheap load of a segment trusted to be whole (flushed): rebuilds the indexes when missing or invalid
  /// (full recover()), else reads batch headers from the last index entry to the end, adding any index
  /// entries that are missing, to learn next_offset() and max_timestamp().
  sluice::result<void> load(bool index_files_existed);

  /// Appends whole batches, already validated and carrying their final offsets (base offsets increasing
  /// from next_offset()). Adds index entries every index.interval.bytes. On a failed write the file is cut
  /// back to its previous size and errc::io_error returned.
  sluice::result<void> append(std::span<const uint8_t> batches);

  /// The first batch whose last offset >= `offset` (the one containing it, or the next), or nullopt.
  sluice::result<std::optional<batch_position>> find_batch(int64_t offset) const;

  /// Calls `fn` with the header of each batch whose last offset >= `from_offset`, in file order (reads the
  /// 61-byte headers only, no CRC check: the segment was recovered at load). For rebuilding producer state.
  sluice::result<void> for_each_batch_header(int64_t from_offset,
                                             const std::function<void(const record_batch_header&)>& fn) const;
  /// The same, with each batch's file position (to read a control batch whole with read_batch).
  sluice::result<void> for_each_batch_header(
      int64_t from_offset, const std::function<void(const record_batch_header&, int64_t position)>& fn) const;
  /// The whole batch of `size` bytes at `position`.
  sluice::result<std::vector<uint8_t>> read_batch(int64_t position, int64_t size) const;

  // ---- aborted transactions (`<base offset>.txnindex`, created on the first abort in this segment) ----
  /// Appends an entry (its ABORT marker is in this segment). Errors as transaction_index::append.
  sluice::result<void> append_aborted(const aborted_txn& txn);
  /// transaction_index::collect_aborted; false (not complete) when the segment has no index.
  bool collect_aborted(int64_t fetch_offset, int64_t upper_bound, std::vector<aborted_txn>& out) const;
  /// The last offset of the newest entry, or -1.
  int64_t last_aborted_offset() const;

  /// Whole batches from the one containing `offset` (see log::read for the limits). nullopt when this
  /// segment holds nothing at or after `offset`.
  sluice::result<std::optional<read_result>> read(int64_t offset, int32_t max_bytes, int64_t max_offset,
                                                  bool min_one_batch) const;

  /// Records whose timestamp >= `timestamp`: the first such batch's position (KIP-33 lookup). nullopt when
  /// no batch of this segment has a max timestamp >= `timestamp`.
  sluice::result<std::optional<batch_position>> find_batch_by_timestamp(int64_t timestamp) const;

  /// The first offset >= `starting_offset` whose record timestamp >= `timestamp` (Kafka's
  /// LogSegment.findOffsetByTimestamp and FileRecords.searchForTimestamp), or -1. Starts at the time index
  /// floor entry; reads the records of each batch whose max timestamp >= `timestamp`, in offset order, so
  /// timestamps that go backwards inside a batch give the first record in offset order that reaches the
  /// target. A compressed batch is decompressed (one batch in memory at a time, at most
  /// max_decompressed_batch_bytes). A LogAppendTime batch is not read: all its records carry the batch max
  /// timestamp (Kafka's rule), so its first offset >= `starting_offset` is the answer.
  /// `found_timestamp`, when given, receives the timestamp of the record found.
  /// Errors: errc::io_error on a failed read; errc::corrupt_message / errc::invalid_record if a stored
  /// batch does not decompress or parse.
  sluice::result<int64_t> offset_for_timestamp(int64_t timestamp, int64_t starting_offset,
                                               int64_t* found_timestamp = nullptr) const;

  /// Cuts the segment so that it ends before the batch containing `offset` (whole batches only).
  sluice::result<void> truncate_to(int64_t offset);

  /// Called when a newer segment takes over: writes the final time index entry and fsyncs everything.
  sluice::result<void> on_become_inactive();
  /// As on_become_inactive() without the fsyncs: writes the final time index entry and the index entries not yet
  /// in their files, and returns what a background flush must sync for the segment to be durable.
  sluice::result<segment_sync_target> become_inactive_without_sync();

  sluice::result<void> flush();
  /// Writes index entries not yet in the .index and .timeindex files (after a load or recovery rebuilt them in
  /// memory), without an fsync. errc::io_error.
  sluice::result<void> write_indexes();
  void close();
  /// Closes and unlinks the three files. Open file_regions keep the log bytes readable.
  sluice::result<void> remove_files();

  int64_t base_offset() const { return base_offset_; }
  int64_t size_bytes() const { return size_; }
  /// Last offset + 1, or base_offset() when empty. Valid after load()/recover().
  int64_t next_offset() const { return next_offset_; }
  /// Largest batch max timestamp in the segment, -1 when empty (Kafka's largestTimestamp).
  int64_t max_timestamp() const { return max_timestamp_; }
  /// Age of the segment for segment.ms (Kafka's LogSegment.timeWaitedForRoll): the incoming batches' max
  /// timestamp minus the first batch's max timestamp when the segment has one (record time against record
  /// time), else wall time since the segment was created or opened.
  int64_t time_waited_for_roll(int64_t now_ms, int64_t incoming_max_timestamp) const {
    if (first_batch_timestamp_ >= 0) return incoming_max_timestamp - first_batch_timestamp_;
    return now_ms - created_ms_;
  }
  bool empty() const { return size_ == 0; }
  const offset_index& index() const { return offset_index_; }
  const time_index& timeindex() const { return time_index_; }
  std::filesystem::path log_path() const;
  /// The .log's descriptor, shared: the log cleaner reads an inactive segment through it (pread), so a segment
  /// removed or a topic made again under the same name meanwhile cannot hand it other bytes.
  std::shared_ptr<const file_handle> file() const { return file_; }

 private:
  segment() = default;
  static sluice::result<std::unique_ptr<segment>> open_files(const std::filesystem::path& dir, int64_t base_offset,
                                                             int32_t index_interval_bytes, int64_t now_ms,
                                                             bool truncate, segment_suffix suffix);
  std::filesystem::path file_path(const char* extension) const;  // "<base><extension><suffix>"
  sluice::result<void> pread_exact(uint8_t* buf, size_t n, int64_t position) const;
  sluice::result<record_batch_header> read_header(int64_t position) const;
  // Bookkeeping for one batch written at `position`: index entries, next offset, timestamps.
  sluice::result<void> account_batch(const record_batch_header& h, int64_t position);
  sluice::result<void> truncate_file(int64_t size);

  std::filesystem::path dir_;
  segment_suffix suffix_ = segment_suffix::none;
  int64_t base_offset_ = 0;
  int32_t index_interval_bytes_ = 4096;
  std::shared_ptr<file_handle> file_;
  int64_t size_ = 0;
  int64_t next_offset_ = 0;
  int64_t max_timestamp_ = -1;
  int64_t offset_of_max_timestamp_ = -1;
  int64_t first_batch_timestamp_ = -1;
  int64_t created_ms_ = 0;
  int64_t bytes_since_last_index_entry_ = 0;
  offset_index offset_index_;
  time_index time_index_;
  std::optional<transaction_index> txn_index_;  // only once a transaction aborted here
  std::filesystem::path txn_index_path() const;
};

}  // namespace sluice::storage
