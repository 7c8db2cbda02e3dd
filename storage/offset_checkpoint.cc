#include "storage/offset_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "storage/atomic_file.h"
#include "storage/errc.h"
#include "storage/index_file.h"

namespace sluice::storage {

sluice::result<offset_checkpoint> read_offset_checkpoint(const std::filesystem::path& file) {
  offset_checkpoint out;
  std::ifstream in(file);
  if (!in) {
    if (!std::filesystem::exists(file)) return out;
    return make_error(errc::io_error, "cannot read " + file.string());
  }
  auto bad = [&](const std::string& what) { return make_error(errc::corrupt_message, file.string() + ": " + what); };
  std::string line;
  if (!std::getline(in, line)) return out;  // empty file: nothing checkpointed yet
  if (line != "0") return bad("unsupported version '" + line + "'");
  if (!std::getline(in, line)) return bad("missing entry count");
  int64_t count = 0;
  try {
    count = std::stoll(line);
  } catch (...) {
    return bad("bad entry count '" + line + "'");
  }
  for (int64_t i = 0; i < count; ++i) {
    if (!std::getline(in, line)) return bad("expected " + std::to_string(count) + " entries");
    std::istringstream fields(line);
    std::string topic;
    int64_t partition = -1;
    int64_t offset = -1;
    std::string extra;
    if (!(fields >> topic >> partition >> offset) || (fields >> extra) || partition < 0 || partition > INT32_MAX) {
      return bad("malformed entry '" + line + "'");
    }
    out[{topic, static_cast<int32_t>(partition)}] = offset;
  }
  return out;
}

sluice::result<void> write_offset_checkpoint(const std::filesystem::path& file, const offset_checkpoint& entries) {
  std::string text = "0\n" + std::to_string(entries.size()) + "\n";
  for (const auto& [tp, offset] : entries) {
    text += tp.first + " " + std::to_string(tp.second) + " " + std::to_string(offset) + "\n";
  }
  return write_file_atomically(file, text);
}

sluice::result<void> write_file_atomically(const std::filesystem::path& file, std::string_view text) {
  return replace_file(file, text, full_disk::keeps_old_file);
}

sluice::result<void> replace_file(const std::filesystem::path& file, std::string_view bytes, full_disk on_full_disk,
                                  bool durable) {
  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  auto failed = [&](const char* what, const std::filesystem::path& path) {
    const bool full = errno == ENOSPC || errno == EDQUOT;
    return full && on_full_disk == full_disk::keeps_old_file ? detail::io_error(what, path)
                                                             : detail::io_failure(what, path);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failed("open", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto e = failed("write", tmp);
      ::close(fd);
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (durable && ::fsync(fd) != 0) {
    auto e = detail::io_failure("fsync", tmp);
    ::close(fd);
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), file.c_str()) != 0) return detail::io_failure("rename", tmp);
  if (!durable) return {};
  return detail::fsync_directory(file.parent_path());
}

}  // namespace sluice::storage
