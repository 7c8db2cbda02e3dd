#pragma once
// Sparse time index of one segment (Kafka's TimeIndex, file "<base offset>.timeindex", KIP-33): 12-byte
// entries, big-endian int64 timestamp and int32 offset relative to the segment base. An entry
// (max timestamp so far, offset of that batch's last record) is added next to each offset index entry when
// the max timestamp grew, and once more when the segment is rolled. Timestamps strictly increase.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/result.h"
#include "storage/index_file.h"

namespace sluice::storage {

struct timestamp_offset {
  int64_t timestamp = -1;  // milliseconds since the epoch; -1 (Kafka's NO_TIMESTAMP) when none
  int64_t offset = 0;      // absolute offset
};

class time_index {
 public:
  static constexpr int entry_size = 12;

  /// Opens (creating if missing) the file and loads its entries; invalid files load as far as valid and
  /// are marked !sane().
  static sluice::result<time_index> open(const std::filesystem::path& path, int64_t base_offset);
  bool sane() const { return loaded_sane_; }

  /// Appends (timestamp, offset) in memory unless `timestamp` does not exceed the last entry's (then a no-op). The
  /// file gets it at the next flush() (see offset_index::append).
  sluice::result<void> maybe_append(int64_t timestamp, int64_t offset);

  /// The entry with the largest timestamp <= `timestamp`, or {-1, base_offset} when none is.
  timestamp_offset lookup(int64_t timestamp) const;
  /// The last entry, or {-1, base_offset}.
  timestamp_offset last_entry() const;

  /// Drops every entry whose offset >= `offset`.
  sluice::result<void> truncate_to(int64_t offset);
  sluice::result<void> reset() { return truncate_to(INT64_MIN); }

  const std::vector<timestamp_offset>& entries() const { return entries_; }
  /// Writes the entries appended since the last flush and fdatasyncs the file (as offset_index::flush).
  sluice::result<void> flush();
  /// Writes the entries appended since the last write to the file, without an fsync. errc::io_error.
  sluice::result<void> write_pending();
  /// Forgets the file without writing what is not flushed.
  void close() { file_.close(); }
  detail::index_file& file() { return file_; }

 private:
  detail::index_file file_;
  size_t persisted_ = 0;  // entries_[0, persisted_) are in the file
  int64_t base_offset_ = 0;
  bool loaded_sane_ = true;
  std::vector<timestamp_offset> entries_;
};

}  // namespace sluice::storage
