#include "protocol/reader.h"

#include <limits>
#include <string>

namespace sluice::protocol {

std::string reader::error_message() const {
  if (ok_) return {};
  std::string m = "malformed ";
  if (!api_.empty()) {
    m += api_;
    if (api_version_ >= 0) m += " v" + std::to_string(api_version_);
    m += ' ';
  }
  m += kind_.empty() ? std::string_view("frame") : kind_;
  m += ": field '";
  m += error_field_;
  m += "' at byte " + std::to_string(error_offset_) + ": " + error_reason_;
  return m;
}

void reader::fail(std::string_view field, std::string reason) {
  if (!ok_) return;
  ok_ = false;
  error_field_ = field;
  error_reason_ = std::move(reason);
  error_offset_ = pos_;
  pos_ = size_;  // nothing more can be read
}

void reader::fail_short(std::string_view field, size_t wanted) {
  fail(field, "needs " + std::to_string(wanted) + " bytes, " + std::to_string(size_ - pos_) + " remaining");
}

uuid reader::read_uuid(std::string_view field) {
  uuid u;
  if (!need(16, field)) return u;
  std::memcpy(u.bytes.data(), data_ + pos_, 16);
  pos_ += 16;
  return u;
}

uint32_t reader::read_unsigned_varint(std::string_view field) {
  uint32_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (!need(1, field)) return 0;
    uint8_t b = data_[pos_++];
    value |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  pos_ -= 5;
  fail(field, "unsigned varint longer than 5 bytes");
  return 0;
}

uint64_t reader::read_unsigned_varlong(std::string_view field) {
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (!need(1, field)) return 0;
    uint8_t b = data_[pos_++];
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  pos_ -= 10;
  fail(field, "varlong longer than 10 bytes");
  return 0;
}

reader::span_or_null reader::take(int64_t len, std::string_view field, size_t length_at) {
  span_or_null s{nullptr, 0, true};  // what a failed read returns: null / empty
  if (!ok_) return s;
  if (len < 0 || static_cast<uint64_t>(len) > size_ - pos_) {
    pos_ = length_at;
    fail(field, "length " + std::to_string(len) + " exceeds the " + std::to_string(size_ - pos_) +
                    " bytes remaining");
    return s;
  }
  s.data = data_ + pos_;
  s.size = static_cast<size_t>(len);
  s.is_null = false;
  pos_ += s.size;
  return s;
}

reader::span_or_null reader::read_length16(std::string_view field, bool nullable) {
  size_t at = pos_;
  int16_t len = read_int16(field);
  if (len < 0 && ok_) {
    if (len == -1 && nullable) return span_or_null{nullptr, 0, true};
    pos_ = at;
    fail(field, len == -1 ? "null is not allowed here" : "negative length " + std::to_string(len));
    return span_or_null{nullptr, 0, true};
  }
  return take(len, field, at);
}

reader::span_or_null reader::read_length32(std::string_view field, bool nullable) {
  size_t at = pos_;
  int32_t len = read_int32(field);
  if (len < 0 && ok_) {
    if (len == -1 && nullable) return span_or_null{nullptr, 0, true};
    pos_ = at;
    fail(field, len == -1 ? "null is not allowed here" : "negative length " + std::to_string(len));
    return span_or_null{nullptr, 0, true};
  }
  return take(len, field, at);
}

reader::span_or_null reader::read_compact_length(std::string_view field, bool nullable) {
  size_t at = pos_;
  uint32_t n = read_unsigned_varint(field);
  if (!ok_) return span_or_null{nullptr, 0, true};
  if (n == 0) {
    if (nullable) return span_or_null{nullptr, 0, true};
    pos_ = at;
    fail(field, "null is not allowed here");
    return span_or_null{nullptr, 0, true};
  }
  return take(static_cast<int64_t>(n) - 1, field, at);
}

reader::span_or_null reader::read_compact_string_length(std::string_view field, bool nullable) {
  size_t at = pos_;
  span_or_null s = read_compact_length(field, nullable);
  if (ok_ && !s.is_null && s.size > 0x7fff) {
    pos_ = at;
    fail(field, "string of " + std::to_string(s.size) + " bytes is longer than 32767");
    return span_or_null{nullptr, 0, true};
  }
  return s;
}

namespace {

/// Length of the well-formed UTF-8 sequence at `p` (of `n` bytes left), or 0 when it is malformed (RFC 3629:
/// no overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence(const uint8_t* p, size_t n) {
  uint8_t c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return len;
}

}  // namespace

std::string reader::to_string(span_or_null s) {
  if (s.size == 0) return std::string();
  const auto* p = s.data;
  size_t i = 0;
  while (i < s.size && p[i] < 0x80) ++i;  // ASCII fast path
  for (size_t k = i; k < s.size;) {
    size_t len = utf8_sequence(p + k, s.size - k);
    if (len == 0) break;
    k += len;
    if (k == s.size) return std::string(reinterpret_cast<const char*>(p), s.size);
  }
  if (i == s.size) return std::string(reinterpret_cast<const char*>(p), s.size);
  // Malformed somewhere: rebuild with U+FFFD for each byte that starts no well-formed sequence.
  std::string out;
  out.reserve(s.size + 8);
  for (size_t k = 0; k < s.size;) {
    size_t len = utf8_sequence(p + k, s.size - k);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++k;
    } else {
      out.append(reinterpret_cast<const char*>(p + k), len);
      k += len;
    }
  }
  return out;
}

int32_t reader::read_array_length(std::string_view field, bool compact, bool nullable, size_t min_element_size) {
  size_t at = pos_;
  int64_t n;
  if (compact) {
    n = static_cast<int64_t>(read_unsigned_varint(field)) - 1;
  } else {
    n = read_int32(field);
  }
  if (!ok_) return 0;
  if (n < 0) {
    if (n == -1 && nullable) return -1;
    pos_ = at;
    fail(field, n == -1 ? "null array is not allowed here" : "negative array length " + std::to_string(n));
    return 0;
  }
  if (min_element_size == 0) min_element_size = 1;
  if (n > std::numeric_limits<int32_t>::max()) {
    pos_ = at;
    fail(field, "array length " + std::to_string(n) + " is too large");
    return 0;
  }
  if (static_cast<uint64_t>(n) > (size_ - pos_) / min_element_size) {
    pos_ = at;
    fail(field, "array of " + std::to_string(n) + " elements cannot fit in the " + std::to_string(size_ - pos_) +
                    " bytes remaining");
    return 0;
  }
  return static_cast<int32_t>(n);
}

std::span<const uint8_t> reader::read_raw(size_t n, std::string_view field) {
  if (!need(n, field)) return {};
  std::span<const uint8_t> s(data_ + pos_, n);
  pos_ += n;
  return s;
}

bool reader::read_tag_header(uint32_t& tag, uint32_t& size, std::string_view field) {
  tag = read_unsigned_varint(field);
  size = read_unsigned_varint(field);
  if (!ok_) return false;
  if (size > size_ - pos_) {
    fail(field, "tagged field " + std::to_string(tag) + " of " + std::to_string(size) + " bytes exceeds the " +
                    std::to_string(size_ - pos_) + " bytes remaining");
    return false;
  }
  return true;
}

void reader::check_tagged_field_end(size_t start, uint32_t size, std::string_view field) {
  if (ok_ && pos_ - start != size)
    fail(field, "tagged field declared " + std::to_string(size) + " bytes but its value used " +
                    std::to_string(pos_ - start));
}

void reader::skip_tagged_fields(std::string_view field) {
  uint32_t count = read_unsigned_varint(field);
  for (uint32_t i = 0; i < count && ok_; ++i) {
    uint32_t tag, size;
    if (!read_tag_header(tag, size, field)) return;
    skip(size, field);
  }
}

void reader::read_unknown_tagged_field(uint32_t tag, uint32_t size, std::vector<raw_tagged_field>& out,
                                       std::string_view field) {
  std::span<const uint8_t> payload = read_raw(size, field);
  if (!ok_) return;
  out.push_back(raw_tagged_field{tag, std::vector<uint8_t>(payload.begin(), payload.end())});
}

}  // namespace sluice::protocol
