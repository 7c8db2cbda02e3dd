#pragma once
// Sparse offset index of one segment (Kafka's OffsetIndex, file "<base offset>.index"): 8-byte entries,
// big-endian int32 offset relative to the segment base offset and int32 byte position in the .log file.
// An entry is added when more than index.interval.bytes were appended since the previous one; like Kafka
// it maps the LAST offset of a batch to the position where that batch starts. Entries are strictly
// increasing in both offset and position. Owned by the segment (the partition's strand).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/result.h"
#include "storage/index_file.h"

namespace sluice::storage {

struct offset_position {
  int64_t offset = 0;    // absolute offset
  int64_t position = 0;  // byte position in the segment's .log
};

class offset_index {
 public:
  static constexpr int entry_size = 8;

  /// Opens (creating if missing) the index file and loads its entries. A file whose size is not a multiple
  /// of 8 or whose entries do not increase is loaded as far as it is valid and marked !sane().
  static sluice::result<offset_index> open(const std::filesystem::path& path, int64_t base_offset);

  /// Whether the loaded file looked valid for a .log of `log_size` bytes (Kafka's sanityCheck).
  bool sane(int64_t log_size) const;

  /// Appends an entry in memory; `offset` must exceed the last entry's and fit in int32 relative to the base.
  /// The file gets it at the next flush(): until then a crash leaves the file without it, which costs nothing but
  /// a scan (segment::load reads batch headers from the last entry in the file; recovery rebuilds the entries past
  /// the recovery point), as Kafka's index, which is not flushed with every append either.
  sluice::result<void> append(int64_t offset, int64_t position);

  /// The entry with the largest offset <= `offset`, or {base_offset, 0} when none is.
  offset_position lookup(int64_t offset) const;

  /// Drops every entry whose offset >= `offset`.
  sluice::result<void> truncate_to(int64_t offset);
  /// Drops every entry.
  sluice::result<void> reset() { return truncate_to(INT64_MIN); }

  const std::vector<offset_position>& entries() const { return entries_; }
  int64_t base_offset() const { return base_offset_; }
  /// Writes the entries appended since the last flush to the file and fdatasyncs it. errc::io_error; a failed
  /// fsync is also a log dir failure.
  sluice::result<void> flush();
  /// Writes the entries appended since the last write to the file, without an fsync. errc::io_error.
  sluice::result<void> write_pending();
  /// Forgets the file without writing what is not flushed (the owner flushed first, or deletes the files).
  void close() { file_.close(); }
  detail::index_file& file() { return file_; }

 private:
  detail::index_file file_;
  size_t persisted_ = 0;  // entries_[0, persisted_) are in the file
  int64_t base_offset_ = 0;
  bool loaded_sane_ = true;
  std::vector<offset_position> entries_;
};

}  // namespace sluice::storage
