#include "broker/groups/partition_for_group.h"

namespace sluice::groups {

namespace {
// Decodes one UTF-8 code point at s[i], advancing i; U+FFFD for a malformed sequence (one byte consumed).
uint32_t next_code_point(std::string_view s, size_t& i) {
  auto b0 = static_cast<uint8_t>(s[i]);
  auto cont = [&](size_t k) {
    return i + k < s.size() && (static_cast<uint8_t>(s[i + k]) & 0xC0) == 0x80;
  };
  auto cb = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k]) & 0x3F); };
  if (b0 < 0x80) {
    i += 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0 && b0 >= 0xC2 && cont(1)) {
    uint32_t cp = ((b0 & 0x1Fu) << 6) | cb(1);
    i += 2;
    return cp;
  }
  if ((b0 & 0xF0) == 0xE0 && cont(1) && cont(2)) {
    uint32_t cp = ((b0 & 0x0Fu) << 12) | (cb(1) << 6) | cb(2);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) {
      i += 3;
      return cp;
    }
  }
  if ((b0 & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
    uint32_t cp = ((b0 & 0x07u) << 18) | (cb(1) << 12) | (cb(2) << 6) | cb(3);
    if (cp >= 0x10000 && cp <= 0x10FFFF) {
      i += 4;
      return cp;
    }
  }
  i += 1;
  return 0xFFFD;
}
}  // namespace

int32_t java_hashcode(std::string_view utf8) {
  uint32_t h = 0;  // unsigned arithmetic wraps exactly as Java's int does
  size_t i = 0;
  while (i < utf8.size()) {
    uint32_t cp = next_code_point(utf8, i);
    if (cp >= 0x10000) {
      uint32_t v = cp - 0x10000;
      h = 31 * h + (0xD800 + (v >> 10));
      h = 31 * h + (0xDC00 + (v & 0x3FF));
    } else {
      h = 31 * h + cp;
    }
  }
  return static_cast<int32_t>(h);
}

int32_t partition_for_group(std::string_view group_id, int32_t num_partitions) {
  // Kafka's Utils.abs (Integer.MIN_VALUE -> 0, else Math.abs), not a mask: the two differ for negative hashes.
  const int32_t h = java_hashcode(group_id);
  const int32_t positive = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
  return positive % num_partitions;
}

}  // namespace sluice::groups
