#pragma once
// writer: a big-endian encoder that appends to a byte vector and records file regions without copying
// them, so the output is a gather list (bytes interleaved with file regions) for writev/sendfile.
//
// sizes:: gives the encoded size of each primitive, so that generated encoded_size() matches encode()
// exactly and a frame can be sized (and its 4-byte size prefix written) before encoding.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/file_region.h"
#include "protocol/records.h"
#include "protocol/tagged_field.h"
#include "protocol/uuid.h"

namespace sluice::protocol {

/// An encoded frame: `bytes` with file regions spliced in. Region i is sent after bytes[0, pos_i) and
/// before bytes[pos_i, ...); positions are non-decreasing.
struct encoded_frame {
  std::vector<uint8_t> bytes;
  std::vector<std::pair<size_t, sluice::file_region>> file_regions;

  size_t total_size() const {
    size_t n = bytes.size();
    for (const auto& fr : file_regions) n += static_cast<size_t>(fr.second.size);
    return n;
  }
};

namespace sizes {
inline size_t unsigned_varint(uint32_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline size_t unsigned_varlong(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline size_t varint(int32_t v) {
  return unsigned_varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}
inline size_t varlong(int64_t v) {
  return unsigned_varlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
/// A length prefix of strings (int16), bytes/records (int32) or arrays (int32); compact: varint N+1.
inline size_t string_length(size_t len, bool compact) {
  return compact ? unsigned_varint(static_cast<uint32_t>(len + 1)) : 2;
}
inline size_t bytes_length(size_t len, bool compact) {
  return compact ? unsigned_varint(static_cast<uint32_t>(len + 1)) : 4;
}
inline size_t array_length(size_t count, bool compact) { return bytes_length(count, compact); }

inline size_t string(std::string_view s, bool compact) { return string_length(s.size(), compact) + s.size(); }
inline size_t string(const std::string& s, bool compact) { return string(std::string_view(s), compact); }
inline size_t string(const char* s, bool compact) { return string(std::string_view(s), compact); }
/// A null optional encoded where null is not allowed: an empty string.
inline size_t string(const std::optional<std::string>& s, bool compact) {
  return s ? string(*s, compact) : string_length(0, compact);
}
inline size_t nullable_string(const std::optional<std::string>& s, bool compact) {
  return s ? string(*s, compact) : (compact ? 1 : 2);
}
inline size_t bytes(std::span<const uint8_t> b, bool compact) { return bytes_length(b.size(), compact) + b.size(); }
inline size_t bytes(const std::vector<uint8_t>& b, bool compact) { return bytes(std::span<const uint8_t>(b), compact); }
inline size_t bytes(const std::optional<std::vector<uint8_t>>& b, bool compact) {
  return b ? bytes(*b, compact) : bytes_length(0, compact);
}
inline size_t nullable_bytes(const std::optional<std::vector<uint8_t>>& b, bool compact) {
  return b ? bytes(*b, compact) : (compact ? 1 : 4);
}
inline size_t records(const protocol::records& r, bool compact) { return bytes_length(r.size(), compact) + r.size(); }
inline size_t records(const std::optional<protocol::records>& r, bool compact) {
  return r ? records(*r, compact) : bytes_length(0, compact);
}
inline size_t nullable_records(const std::optional<protocol::records>& r, bool compact) {
  return r ? records(*r, compact) : (compact ? 1 : 4);
}
/// An array length; -1 is null.
inline size_t array_length_or_null(int32_t count, bool compact) {
  return count < 0 ? (compact ? 1 : 4) : array_length(static_cast<size_t>(count), compact);
}
/// Unknown tagged fields as written back: per field its tag and size varints and its payload.
inline size_t raw_tagged_fields(const std::vector<raw_tagged_field>& fields) {
  size_t n = 0;
  for (const auto& f : fields)
    n += unsigned_varint(f.tag) + unsigned_varint(static_cast<uint32_t>(f.data.size())) + f.data.size();
  return n;
}
}  // namespace sizes

class writer {
 public:
  writer() = default;
  explicit writer(size_t reserve_bytes) { buf_.reserve(reserve_bytes); }
  void reserve(size_t n) { buf_.reserve(n); }

  /// Bytes written so far, file regions included.
  size_t size() const { return buf_.size() + region_bytes_; }
  /// Takes the result; the writer is empty afterwards.
  encoded_frame finish() {
    encoded_frame f{std::move(buf_), std::move(regions_)};
    buf_.clear();
    regions_.clear();
    region_bytes_ = 0;
    return f;
  }
  /// The memory bytes written so far (file regions not included).
  std::span<const uint8_t> buffer() const { return buf_; }

  void write_int8(int8_t v) { buf_.push_back(static_cast<uint8_t>(v)); }
  void write_int16(int16_t v) { put_be(static_cast<uint16_t>(v)); }
  void write_int32(int32_t v) { put_be(static_cast<uint32_t>(v)); }
  void write_int64(int64_t v) { put_be(static_cast<uint64_t>(v)); }
  void write_uint16(uint16_t v) { put_be(v); }
  void write_uint32(uint32_t v) { put_be(v); }
  void write_float64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    put_be(bits);
  }
  void write_bool(bool b) { buf_.push_back(b ? 1 : 0); }
  void write_uuid(const uuid& u) { write_raw(u.bytes); }

  void write_unsigned_varint(uint32_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }
  void write_unsigned_varlong(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }
  void write_varint(int32_t v) {
    write_unsigned_varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
  }
  void write_varlong(int64_t v) {
    write_unsigned_varlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }

  // Strings: int16 length or (compact) unsigned varint length+1; null is -1 / 0.
  void write_string(std::string_view s, bool compact = false) {
    if (compact)
      write_unsigned_varint(static_cast<uint32_t>(s.size() + 1));
    else
      write_int16(static_cast<int16_t>(s.size()));
    write_raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  }
  void write_string(const std::string& s, bool compact = false) { write_string(std::string_view(s), compact); }
  void write_string(const char* s, bool compact = false) { write_string(std::string_view(s), compact); }
  void write_compact_string(std::string_view s) { write_string(s, true); }
  /// For a nullable-in-some-versions field in a version where null is not allowed: null -> "".
  void write_string(const std::optional<std::string>& s, bool compact) {
    write_string(s ? std::string_view(*s) : std::string_view(), compact);
  }
  void write_nullable_string(const std::optional<std::string>& s, bool compact = false) {
    if (s)
      write_string(*s, compact);
    else if (compact)
      write_unsigned_varint(0);
    else
      write_int16(-1);
  }

  // Bytes: int32 length or (compact) unsigned varint length+1; null is -1 / 0.
  void write_bytes(std::span<const uint8_t> b, bool compact = false) {
    write_bytes_length(static_cast<int32_t>(b.size()), compact);
    write_raw(b);
  }
  void write_bytes(const std::vector<uint8_t>& b, bool compact = false) {
    write_bytes(std::span<const uint8_t>(b), compact);
  }
  void write_bytes(const std::optional<std::vector<uint8_t>>& b, bool compact) {
    write_bytes(b ? std::span<const uint8_t>(*b) : std::span<const uint8_t>(), compact);
  }
  void write_nullable_bytes(const std::optional<std::vector<uint8_t>>& b, bool compact = false) {
    if (b)
      write_bytes(*b, compact);
    else
      write_bytes_length(-1, compact);
  }

  /// A records field: length prefix, then the memory bytes or the file region (not copied).
  void write_records(const records& r, bool compact) {
    write_bytes_length(static_cast<int32_t>(r.size()), compact);
    if (r.in_file())
      write_file_region(r.file);
    else
      write_raw(r.bytes);
  }
  void write_records(const std::optional<records>& r, bool compact) {
    if (r)
      write_records(*r, compact);
    else
      write_bytes_length(0, compact);
  }
  void write_nullable_records(const std::optional<records>& r, bool compact) {
    if (r)
      write_records(*r, compact);
    else
      write_bytes_length(-1, compact);
  }

  /// An array count; -1 writes null.
  void write_array_length(int32_t count, bool compact = false) { write_bytes_length(count, compact); }
  void write_compact_array_length(int32_t count) { write_bytes_length(count, true); }

  void write_raw(std::span<const uint8_t> b) {
    if (b.empty()) return;
    size_t at = buf_.size();
    buf_.resize(at + b.size());
    std::memcpy(buf_.data() + at, b.data(), b.size());
  }
  /// Writes the unknown tagged fields fields[from, ...) while their tag is below `before` (a known tag
  /// about to be written; 1 << 32: all the rest) and returns the index of the first one not written.
  /// Generated encoders call it before each known tagged field, so that fields read in increasing tag
  /// order are written back in that order, interleaved with the known ones (as Kafka's RawTaggedFieldWriter).
  size_t write_raw_tagged_fields(const std::vector<raw_tagged_field>& fields, size_t from, uint64_t before) {
    for (; from < fields.size() && fields[from].tag < before; ++from) {
      write_unsigned_varint(fields[from].tag);
      write_unsigned_varint(static_cast<uint32_t>(fields[from].data.size()));
      write_raw(fields[from].data);
    }
    return from;
  }

  /// Records `region` at the current position without copying it.
  void write_file_region(const sluice::file_region& region) {
    if (region.size <= 0) return;
    regions_.emplace_back(buf_.size(), region);
    region_bytes_ += static_cast<size_t>(region.size);
  }

  /// Overwrites 4 bytes at memory position `pos` (used for size prefixes).
  void put_int32_at(size_t pos, int32_t v) {
    uint32_t be = __builtin_bswap32(static_cast<uint32_t>(v));
    std::memcpy(buf_.data() + pos, &be, 4);
  }

 private:
  void write_bytes_length(int32_t len, bool compact) {
    if (compact)
      write_unsigned_varint(static_cast<uint32_t>(len + 1));
    else
      write_int32(len);
  }
  template <typename T>
  void put_be(T v) {
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    std::memcpy(buf_.data() + at, &v, sizeof(T));
  }

  std::vector<uint8_t> buf_;
  std::vector<std::pair<size_t, sluice::file_region>> regions_;
  size_t region_bytes_ = 0;
};

}  // namespace sluice::protocol
