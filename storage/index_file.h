#pragma once
// The file under an offset index, time index or transaction index: read whole on open, written with pwrite(2)
// and cut with truncate(2), no descriptor held in between. Kafka mmaps a preallocated file (and closes its
// descriptor); we keep the entries in memory and write the file at its exact size, so no trimming is needed at
// close. The offset and time indexes write their new entries at flush time only (offset_index.h).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "base/result.h"

namespace sluice::storage::detail {

class index_file {
 public:
  index_file() = default;

  /// Opens or creates `path` and returns its bytes in `contents`. Keeps no file descriptor open: an index is
  /// read whole here and written in bursts (write_at), so a broker with N partitions holds N segment fds, not 3N
  /// (issue #23: 10,000 partitions under a 20,000-fd limit).
  static sluice::result<index_file> open(const std::filesystem::path& path, std::vector<uint8_t>& contents);

  /// Writes `bytes` at `position` (open, pwrite, close). Not durable until flush().
  sluice::result<void> write_at(int64_t position, std::span<const uint8_t> bytes);
  /// Cuts the file to `size` bytes (truncate(2) on the path; nothing to do when it is not longer). Not durable
  /// until flush().
  sluice::result<void> truncate(int64_t size);
  /// The file's size in bytes as this object left it (read at open, then moved by write_at and truncate).
  int64_t size() const { return size_; }

  /// For a file of fixed-size entries whose first `persisted` are on disk: writes entries [persisted, count) in one
  /// pwrite, each encoded by encode(i, out) into `entry_size` bytes at `out`, after cutting whatever follows the
  /// persisted ones (a tail loaded as invalid), then sets `persisted` to `count`. Not durable until flush().
  template <class Encode>
  sluice::result<void> write_entries(size_t& persisted, size_t count, size_t entry_size, Encode encode) {
    if (persisted >= count) return {};
    std::vector<uint8_t> buf((count - persisted) * entry_size);
    for (size_t i = persisted; i < count; ++i) encode(i, buf.data() + (i - persisted) * entry_size);
    const auto at = static_cast<int64_t>(persisted * entry_size);
    if (auto t = truncate(at); !t) return t;
    if (auto w = write_at(at, buf); !w) return w;
    persisted = count;
    return {};
  }
  /// The entries were cut to `count`: `persisted` becomes at most `count` and the file is cut after it.
  sluice::result<void> cut_entries(size_t& persisted, size_t count, size_t entry_size) {
    persisted = std::min(persisted, count);
    return truncate(static_cast<int64_t>(persisted * entry_size));
  }
  /// fdatasyncs the file when anything was written or cut since the last flush. A failed fsync is a log dir
  /// failure (io_failure).
  sluice::result<void> flush();
  /// Nothing to release (no descriptor is kept); kept so that owners close every file the same way.
  void close() {}
  const std::filesystem::path& path() const { return path_; }
  void set_path(std::filesystem::path p) { path_ = std::move(p); }

 private:
  std::filesystem::path path_;
  int64_t size_ = 0;
  bool unsynced_ = false;  // written or cut since the last flush()
};

/// "<20-digit zero-padded offset><suffix>", Kafka's file name for segment files.
std::string segment_file_name(int64_t base_offset, const char* suffix);

/// fdatasyncs the file (or directory) at `path`; one that no longer exists (ENOENT) is not an error. A failed fsync is a log dir
/// failure (io_failure); a failed open, an errc::io_error.
sluice::result<void> fsync_path_if_exists(const std::filesystem::path& path);

/// fsyncs directory `dir` so that renames and removals in it are durable. errc::io_error.
sluice::result<void> fsync_directory(const std::filesystem::path& dir);

/// errc::io_error with strerror(errno) appended.
sluice::error io_error(const std::string& what, const std::filesystem::path& path);
/// io_error, also reported as a log dir failure (storage/log_dir_failure.h): for failures after which the dir's
/// data cannot be trusted (a failed fsync).
sluice::error io_failure(const std::string& what, const std::filesystem::path& path);

}  // namespace sluice::storage::detail
