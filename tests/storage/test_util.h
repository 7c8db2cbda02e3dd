#pragma once
// Helpers for storage tests: a temp dir per test, batch makers, region readers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "storage/record_batch.h"
#include "base/file_region.h"

namespace sluice::storage::testing {

/// A fresh directory under /tmp, removed with everything in it when the test ends.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = "/tmp/sluice-storage-test-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// One batch of `records` records with values of `value_size` bytes, timestamps from `timestamp` + i.
inline std::vector<uint8_t> make_batch(int records, int64_t timestamp = 1000, size_t value_size = 10,
                                       const std::string& tag = "v") {
  record_batch_builder b;
  for (int i = 0; i < records; ++i) {
    std::string value = tag + std::to_string(i);
    value.resize(std::max(value.size(), value_size), 'x');
    std::string key = "k" + std::to_string(i);
    b.add(key, value, timestamp + i);
  }
  return b.build();
}

inline std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline std::vector<uint8_t> read_region(const sluice::file_region& r) {
  std::vector<uint8_t> out(static_cast<size_t>(r.size));
  if (r.size == 0) return out;
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(r.file->fd(), out.data() + done, out.size() - done, r.position + static_cast<off_t>(done));
    if (n <= 0) throw std::runtime_error("pread failed");
    done += static_cast<size_t>(n);
  }
  return out;
}

/// Headers of the whole batches in `bytes`; fails the test on a partial or corrupt batch.
inline std::vector<record_batch_header> batches_in(const std::vector<uint8_t>& bytes) {
  std::vector<record_batch_header> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    auto h = validate_record_batch(std::span<const uint8_t>(bytes).subspan(pos));
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.err().message);
    if (!h.ok()) break;
    out.push_back(*h);
    pos += static_cast<size_t>(h->size_bytes());
  }
  return out;
}

}  // namespace sluice::storage::testing
