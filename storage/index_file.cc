#include "storage/index_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

index_file::~index_file() { close(); }

index_file::index_file(index_file&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

index_file& index_file::operator=(index_file&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

sluice::result<index_file> index_file::open(const std::filesystem::path& path, std::vector<uint8_t>& contents) {
  index_file f;
  f.path_ = path;
  f.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return io_error("open", path);
  struct stat st {};
  if (::fstat(f.fd_, &st) != 0) return io_error("fstat", path);
  contents.assign(static_cast<size_t>(st.st_size), 0);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::pread(f.fd_, contents.data() + done, contents.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("read", path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  contents.resize(done);
  return f;
}

sluice::result<void> index_file::write_at(int64_t position, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(position + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("write", path_);
    done += static_cast<size_t>(n);
  }
  return {};
}

sluice::result<void> index_file::truncate(int64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return io_error("truncate", path_);
  return {};
}

sluice::result<void> index_file::flush() {
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) return io_failure("fsync", path_);
  return {};
}

void index_file::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
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
