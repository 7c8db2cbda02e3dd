#pragma once
// A byte range of an open file, kept open for as long as anyone holds the region. Storage hands these out
// for reads; the network layer sends them with sendfile(2) or copies them with pread(2).
#include <unistd.h>

#include <cstdint>
#include <memory>

namespace sluice {

/// An open file descriptor closed when the last owner lets go (a segment deleted by retention stays
/// readable for a fetch response still being sent).
class file_handle {
 public:
  explicit file_handle(int fd) : fd_(fd) {}
  ~file_handle() { if (fd_ >= 0) ::close(fd_); }
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

/// `size` bytes of `file` starting at byte `position`. An empty region has no file.
struct file_region {
  std::shared_ptr<const file_handle> file;
  int64_t position = 0;
  int64_t size = 0;
};

}  // namespace sluice
