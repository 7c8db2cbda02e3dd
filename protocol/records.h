#pragma once
// records: the value of a Kafka `records` field (one or more v2 record batches), opaque to the codec.
// Either a view of memory (a decoded request: a view into the frame buffer) or a file region (a fetch
// response served with sendfile(2)).
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "base/file_region.h"

namespace sluice::protocol {

struct records {
  /// Memory bytes; used when `file.file` is null.
  std::span<const uint8_t> bytes;
  /// Keeps `bytes` alive when set (for example the frame buffer a request was decoded from). Decoding
  /// copies the reader's owner here; a caller that keeps the frame alive itself may leave it empty.
  std::shared_ptr<const void> owner;
  /// File bytes; used when `file.file` is set.
  sluice::file_region file;

  bool in_file() const { return file.file != nullptr; }
  size_t size() const { return in_file() ? static_cast<size_t>(file.size) : bytes.size(); }

  static records from_memory(std::span<const uint8_t> b, std::shared_ptr<const void> keep_alive = {}) {
    return records{b, std::move(keep_alive), {}};
  }
  static records from_file(sluice::file_region region) { return records{{}, {}, std::move(region)}; }

  /// Memory records compare by content; file records by (file, position, size).
  friend bool operator==(const records& a, const records& b) {
    if (a.in_file() || b.in_file())
      return a.file.file == b.file.file && a.file.position == b.file.position && a.file.size == b.file.size;
    return a.bytes.size() == b.bytes.size() &&
           (a.bytes.empty() || std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0);
  }
};

}  // namespace sluice::protocol
