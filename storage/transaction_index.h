#pragma once
// The aborted-transaction index of one segment, `<base offset>.txnindex` (KIP-98; Kafka's TransactionIndex and
// AbortedTxn): one entry per transaction aborted with its marker in this segment, 34 bytes each, big-endian:
//   int16 version (0) | int64 producer id | int64 first offset | int64 last offset | int64 last stable offset
// `first offset` is the transaction's first data offset, `last offset` the offset of its ABORT marker, `last
// stable offset` the partition's LSO right after the marker. A read_committed Fetch returns the aborted
// transactions that overlap the fetched range (collect_aborted), so the consumer can drop their records.
//
// NOT thread-safe: owned by its segment, touched on the partition's strand. The entries are kept in memory and
// appended to the file with pwrite(2) (the file is read whole on open).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/result.h"
#include "storage/index_file.h"

namespace sluice::storage {

struct aborted_txn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t last_stable_offset = -1;
  friend bool operator==(const aborted_txn&, const aborted_txn&) = default;
};

inline constexpr size_t aborted_txn_entry_size = 34;

class transaction_index {
 public:
  /// Opens or creates `path`. Entries of an unknown version, a torn tail (size not a multiple of 34) or last
  /// offsets that go backwards make it errc::corrupt_message (the log rebuilds the index from the segment).
  /// Errors: errc::io_error.
  static sluice::result<transaction_index> open(const std::filesystem::path& path);

  /// Appends one entry. Its last offset must be greater than the previous entry's (errc::invalid_argument).
  sluice::result<void> append(const aborted_txn& txn);
  /// The entries whose transaction overlaps [fetch_offset, upper_bound): last_offset >= fetch_offset and
  /// first_offset < upper_bound, appended to `out` in index order. Returns whether some entry has
  /// last_stable_offset >= upper_bound (Kafka's isComplete: no later segment can hold an overlapping one).
  bool collect_aborted(int64_t fetch_offset, int64_t upper_bound, std::vector<aborted_txn>& out) const;
  /// Removes the entries with last_offset >= `offset` (log truncation).
  sluice::result<void> truncate_to(int64_t offset);
  /// Removes every entry (the segment is rebuilt).
  sluice::result<void> reset();
  sluice::result<void> flush();
  void close();
  /// Renames the file (segment deletion renames to .deleted first, as Kafka does).
  sluice::result<void> rename_to(const std::filesystem::path& path);

  const std::vector<aborted_txn>& entries() const { return entries_; }
  const std::filesystem::path& path() const { return file_.path(); }

  /// The 34 bytes of one entry.
  static std::vector<uint8_t> encode(const aborted_txn& txn);

 private:
  detail::index_file file_;
  std::vector<aborted_txn> entries_;
};

}  // namespace sluice::storage
