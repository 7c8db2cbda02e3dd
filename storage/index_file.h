#pragma once
// The file under an offset index or time index: fixed-size entries appended with pwrite(2), read whole on
// open, cut with ftruncate(2). Kafka mmaps a preallocated file; we keep the entries in memory and write the
// file at its exact size, so no trimming is needed at close.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "base/result.h"

namespace sluice::storage::detail {

class index_file {
 public:
  index_file() = default;
  ~index_file();
  index_file(index_file&& other) noexcept;
  index_file& operator=(index_file&& other) noexcept;

  /// Opens or creates `path`; returns its bytes in `contents`.
  static sluice::result<index_file> open(const std::filesystem::path& path, std::vector<uint8_t>& contents);

  /// Writes `bytes` at `position`.
  sluice::result<void> write_at(int64_t position, std::span<const uint8_t> bytes);
  sluice::result<void> truncate(int64_t size);
  sluice::result<void> flush();
  void close();
  const std::filesystem::path& path() const { return path_; }
  void set_path(std::filesystem::path p) { path_ = std::move(p); }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

/// "<20-digit zero-padded offset><suffix>", Kafka's file name for segment files.
std::string segment_file_name(int64_t base_offset, const char* suffix);

/// fsyncs directory `dir` so that renames and removals in it are durable. errc::io_error.
sluice::result<void> fsync_directory(const std::filesystem::path& dir);

/// errc::io_error with strerror(errno) appended.
sluice::error io_error(const std::string& what, const std::filesystem::path& path);
/// io_error, also reported as a log dir failure (storage/log_dir_failure.h): for failures after which the dir's
/// data cannot be trusted (a failed fsync).
sluice::error io_failure(const std::string& what, const std::filesystem::path& path);

}  // namespace sluice::storage::detail
