#include "storage/index_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "storage/errc.h"
#include "storage/log_dir_failure.h"

namespace sluice::storage::detail {

sluice::error io_error(const std::string& what, const std::filesystem::path& path) {
  const int e = errno;
  return make_error(errc::io_error, what + " " + path.string() + ": " + std::strerror(e));
}

sluice::error io_failure(const std::string& what, const std::filesystem::path& path) {
  auto e = io_error(what, path);
  report_log_dir_failure(path, e.message);
  return e;
}

std::string segment_file_name(int64_t base_offset, const char* suffix) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(base_offset));
  return std::string(buf) + suffix;
}

namespace {

/// Closes `fd` on scope exit (errors of close(2) after a completed write are not the write's).
struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

sluice::result<index_file> index_file::open(const std::filesystem::path& path, std::vector<uint8_t>& contents) {
  index_file f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("open", path);
  fd_closer closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error("fstat", path);
  contents.assign(static_cast<size_t>(st.st_size), 0);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::pread(fd, contents.data() + done, contents.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("read", path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  contents.resize(done);
  f.size_ = static_cast<int64_t>(done);
  return f;
}

sluice::result<void> index_file::write_at(int64_t position, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return {};
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("open", path_);
  fd_closer closer{fd};
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(position + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("write", path_);
    done += static_cast<size_t>(n);
  }
  size_ = std::max(size_, position + static_cast<int64_t>(bytes.size()));
  unsynced_ = true;
  return {};
}

sluice::result<void> index_file::truncate(int64_t size) {
  if (size >= size_) return {};
  if (::truncate(path_.c_str(), static_cast<off_t>(size)) != 0) return io_error("truncate", path_);
  size_ = size;
  unsynced_ = true;
  return {};
}

sluice::result<void> index_file::flush() {
  if (!unsynced_) return {};
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return io_error("open", path_);
  fd_closer closer{fd};
  if (::fdatasync(fd) != 0) return io_failure("fsync", path_);
  unsynced_ = false;
  return {};
}

sluice::result<void> fsync_path_if_exists(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    return io_error("open", path);
  }
  fd_closer closer{fd};
  if (::fdatasync(fd) != 0) return io_failure("fsync", path);
  return {};
}

sluice::result<void> fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir);
  const int r = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (r != 0) {
    errno = e;
    return io_failure("fsync", dir);
  }
  return {};
}

}  // namespace sluice::storage::detail
