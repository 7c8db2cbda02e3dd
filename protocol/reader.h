#pragma once
// reader: a bounds-checked big-endian decoder over one frame with a sticky error (DESIGN.md §2).
//
// The first failure (not enough bytes, an illegal null or negative length, a length or array count
// larger than the bytes remaining, an over-long varint) is recorded with the field name and byte
// offset; every later read returns a zero value and consumes nothing. Callers check ok() once at the
// end. The reader never allocates more than the remaining bytes justify: lengths and array counts are
// checked against remaining() before any allocation. Strings are decoded as Kafka does: malformed UTF-8 becomes
// U+FFFD, and a compact string longer than 32767 bytes is an error.
//
// Wire encodings follow the Kafka protocol guide ("Protocol Primitive Types") and KIP-482 (compact
// lengths as unsigned varint N+1, tagged fields).
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/records.h"
#include "protocol/tagged_field.h"
#include "protocol/uuid.h"

namespace sluice::protocol {

class reader {
 public:
  /// `frame`: the bytes of one request or response (without the 4-byte size prefix, or with it; offsets
  /// are relative to the span). `owner`, when set, is copied into decoded `records` to keep them alive.
  explicit reader(std::span<const uint8_t> frame, std::shared_ptr<const void> owner = {})
      : data_(frame.data()), size_(frame.size()), owner_(std::move(owner)) {}

  /// Names what is being decoded, for error_message(): e.g. ("Produce", 9, "request").
  void set_context(std::string_view api, int16_t api_version, std::string_view kind = "request") {
    api_ = api;
    api_version_ = api_version;
    kind_ = kind;
  }

  bool ok() const { return ok_; }
  std::string_view error_field() const { return error_field_; }
  size_t error_offset() const { return error_offset_; }
  std::string_view error_reason() const { return error_reason_; }
  /// e.g. "malformed Produce v9 request: field 'partition_produce_data.records' at byte 61: length 900
  /// exceeds the 12 bytes remaining". Empty when ok().
  std::string error_message() const;

  size_t position() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  size_t size() const { return size_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  /// Records the first error; later calls are ignored. Consumes the rest of the input.
  void fail(std::string_view field, std::string reason);

  // Fixed-width big-endian integers.
  int8_t read_int8(std::string_view field) { return static_cast<int8_t>(read_be<uint8_t>(field)); }
  int16_t read_int16(std::string_view field) { return static_cast<int16_t>(read_be<uint16_t>(field)); }
  int32_t read_int32(std::string_view field) { return static_cast<int32_t>(read_be<uint32_t>(field)); }
  int64_t read_int64(std::string_view field) { return static_cast<int64_t>(read_be<uint64_t>(field)); }
  uint16_t read_uint16(std::string_view field) { return read_be<uint16_t>(field); }
  uint32_t read_uint32(std::string_view field) { return read_be<uint32_t>(field); }
  double read_float64(std::string_view field) {
    uint64_t bits = read_be<uint64_t>(field);
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  /// Any non-zero byte is true (as Kafka's readByte() != 0).
  bool read_bool(std::string_view field) { return read_be<uint8_t>(field) != 0; }
  uuid read_uuid(std::string_view field);

  // Variable-length integers (protobuf encoding; signed ones zigzag).
  uint32_t read_unsigned_varint(std::string_view field);
  int32_t read_varint(std::string_view field) {
    uint32_t v = read_unsigned_varint(field);
    return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  uint64_t read_unsigned_varlong(std::string_view field);
  int64_t read_varlong(std::string_view field) {
    uint64_t v = read_unsigned_varlong(field);
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }

  // Strings: int16 length (classic) or unsigned varint length+1 (compact). Null is -1 / 0.
  std::string read_string(std::string_view field) { return to_string(read_length16(field, false)); }
  std::optional<std::string> read_nullable_string(std::string_view field) {
    return to_optional_string(read_length16(field, true));
  }
  std::string read_compact_string(std::string_view field) { return to_string(read_compact_string_length(field, false)); }
  std::optional<std::string> read_compact_nullable_string(std::string_view field) {
    return to_optional_string(read_compact_string_length(field, true));
  }
  std::string read_string(std::string_view field, bool compact) {
    return compact ? read_compact_string(field) : read_string(field);
  }
  std::optional<std::string> read_nullable_string(std::string_view field, bool compact) {
    return compact ? read_compact_nullable_string(field) : read_nullable_string(field);
  }

  // Bytes: int32 length (classic) or unsigned varint length+1 (compact). Null is -1 / 0.
  std::vector<uint8_t> read_bytes(std::string_view field, bool compact = false) {
    return to_vector(compact ? read_compact_length(field, false) : read_length32(field, false));
  }
  std::optional<std::vector<uint8_t>> read_nullable_bytes(std::string_view field, bool compact = false) {
    span_or_null s = compact ? read_compact_length(field, true) : read_length32(field, true);
    if (s.is_null) return std::nullopt;
    return to_vector(s);
  }
  std::vector<uint8_t> read_compact_bytes(std::string_view field) { return read_bytes(field, true); }

  /// A `records` field: length-prefixed like bytes, returned as a view into the frame (no copy).
  records read_records(std::string_view field, bool compact) {
    return to_records(compact ? read_compact_length(field, false) : read_length32(field, false));
  }
  std::optional<records> read_nullable_records(std::string_view field, bool compact) {
    span_or_null s = compact ? read_compact_length(field, true) : read_length32(field, true);
    if (s.is_null) return std::nullopt;
    return to_records(s);
  }

  /// An array element count: int32 (classic) or unsigned varint N+1 (compact). Returns -1 for null
  /// when `nullable`, otherwise null is an error. Fails when count * `min_element_size` exceeds
  /// remaining(), so that a caller may reserve(count) safely.
  int32_t read_array_length(std::string_view field, bool compact, bool nullable, size_t min_element_size = 1);
  /// How many elements of `element_bytes` bytes (in memory) a decoder may reserve for an array of `count`
  /// elements: never more memory than the bytes remaining in the frame (plus one element). The vector
  /// still grows past this as elements are actually decoded.
  size_t reserve_count(int32_t count, size_t element_bytes) const {
    size_t cap = remaining() / (element_bytes == 0 ? 1 : element_bytes) + 1;
    size_t n = count < 0 ? 0 : static_cast<size_t>(count);
    return n < cap ? n : cap;
  }
  int32_t read_array_length(std::string_view field) { return read_array_length(field, false, true); }
  int32_t read_compact_array_length(std::string_view field) { return read_array_length(field, true, true); }

  /// `n` raw bytes as a view into the frame; an empty span (and an error) when fewer remain.
  std::span<const uint8_t> read_raw(size_t n, std::string_view field);
  void skip(size_t n, std::string_view field) { (void)read_raw(n, field); }

  // Tagged fields (KIP-482): count, then per field tag, size, payload.
  /// Reads one tag header; false on error (size larger than remaining bytes included).
  bool read_tag_header(uint32_t& tag, uint32_t& size, std::string_view field);
  /// After decoding a known tagged field: fails unless exactly `size` bytes were consumed since `start`.
  void check_tagged_field_end(size_t start, uint32_t size, std::string_view field);
  /// Reads and discards a whole tagged-field section.
  void skip_tagged_fields(std::string_view field);
  /// After read_tag_header of a tag the definition does not know (or not in this version): reads its
  /// `size` payload bytes and appends {tag, payload} to `out`; appends nothing on error.
  void read_unknown_tagged_field(uint32_t tag, uint32_t size, std::vector<raw_tagged_field>& out,
                                 std::string_view field);

 private:
  struct span_or_null {
    const uint8_t* data = nullptr;
    size_t size = 0;
    bool is_null = false;
  };

  bool need(size_t n, std::string_view field) {
    if (n <= size_ - pos_) [[likely]]
      return true;
    if (ok_) fail_short(field, n);
    return false;
  }
  void fail_short(std::string_view field, size_t wanted);

  template <typename T>
  T read_be(std::string_view field) {
    if (!need(sizeof(T), field)) [[unlikely]]
      return T{};
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    return v;
  }

  span_or_null take(int64_t len, std::string_view field, size_t length_at);
  span_or_null read_length16(std::string_view field, bool nullable);
  span_or_null read_length32(std::string_view field, bool nullable);
  span_or_null read_compact_length(std::string_view field, bool nullable);
  /// A compact string's length: as read_compact_length, and more than 32767 bytes is an error (Kafka's generated
  /// readers refuse it: a string must fit the int16 length of the non-flexible encodings and of stored records).
  span_or_null read_compact_string_length(std::string_view field, bool nullable);

  /// A string field's bytes, decoded as Kafka's readers do (Java's UTF-8 decoding replaces what is malformed):
  /// each byte that starts no well-formed UTF-8 sequence (RFC 3629) becomes U+FFFD, so what the broker stores and
  /// answers is always valid UTF-8. Java may use one U+FFFD for a truncated multi-byte sequence where this uses one
  /// per byte.
  static std::string to_string(span_or_null s);
  static std::optional<std::string> to_optional_string(span_or_null s) {
    if (s.is_null) return std::nullopt;
    return to_string(s);
  }
  static std::vector<uint8_t> to_vector(span_or_null s) {
    if (s.size == 0) return {};
    return std::vector<uint8_t>(s.data, s.data + s.size);
  }
  records to_records(span_or_null s) const {
    return records{std::span<const uint8_t>(s.data, s.size), owner_, {}};
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::shared_ptr<const void> owner_;

  std::string error_field_;
  std::string error_reason_;
  size_t error_offset_ = 0;
  std::string_view api_;
  std::string_view kind_;
  int16_t api_version_ = -1;
};

}  // namespace sluice::protocol
