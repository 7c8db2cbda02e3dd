#pragma once
// A sequential reader over a file descriptor for scans of segment files (recovery, compaction): keeps a window
// of the file in memory (1 MiB, or one batch if larger). Not thread-safe; the fd stays the caller's.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

namespace sluice::storage::detail {

class scan_reader {
 public:
  scan_reader(int fd, int64_t file_size) : fd_(fd), file_size_(file_size) {}

  // Pointer to bytes [pos, pos + n) or nullptr if the file is shorter or a read fails (then error() != 0).
  const uint8_t* get(int64_t pos, size_t n) {
    if (pos >= start_ && pos + static_cast<int64_t>(n) <= start_ + static_cast<int64_t>(len_)) {
      return buf_.data() + (pos - start_);
    }
    if (pos + static_cast<int64_t>(n) > file_size_) return nullptr;
    const size_t want = std::max<size_t>(n, std::min<int64_t>(kWindow, file_size_ - pos));
    if (buf_.size() < want) buf_.resize(want);
    size_t done = 0;
    while (done < want) {
      const ssize_t r = ::pread(fd_, buf_.data() + done, want - done, static_cast<off_t>(pos + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) error_ = errno;
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    start_ = pos;
    len_ = done;
    return done >= n ? buf_.data() : nullptr;
  }

  /// The errno of the last failed read (EIO: the device could not read the file), 0 if none failed. A scan
  /// that ends on a failed read must not take the file for torn: the bytes are there, only unreadable now.
  int error() const { return error_; }

 private:
  static constexpr size_t kWindow = 1 << 20;
  int fd_;
  int64_t file_size_;
  std::vector<uint8_t> buf_;
  int64_t start_ = 0;
  size_t len_ = 0;
  int error_ = 0;
};

}  // namespace sluice::storage::detail
