#include "protocol/uuid.h"

namespace sluice::protocol {
namespace {
constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}
}  // namespace

std::string uuid::to_string() const {
  std::string out;
  out.reserve(22);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::optional<uuid> uuid::from_string(std::string_view text) {
  if (text.size() != 22) return std::nullopt;
  uuid u;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (char c : text) {
    int v = decode_char(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (i < 16) u.bytes[i++] = static_cast<uint8_t>((acc >> bits) & 0xff);
    }
  }
  // 22 chars carry 132 bits: the last 4 must be zero for a canonical encoding.
  if (i != 16 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return u;
}

}  // namespace sluice::protocol
