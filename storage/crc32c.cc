#include "storage/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define SLUICE_CRC32C_X86 1
#endif

namespace sluice::storage {
namespace detail {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reversed

using table_set = std::array<std::array<uint32_t, 256>, 8>;

constexpr table_set make_tables() {
  table_set t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

constexpr table_set kTables = make_tables();

}  // namespace

uint32_t crc32c_software(uint32_t crc, const uint8_t* p, size_t n) {
  uint32_t c = ~crc;
  // Slicing-by-8: eight table lookups per 8 input bytes (little-endian load of the first word).
  while (n >= 8) {
    uint32_t lo = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                  static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

#ifdef SLUICE_CRC32C_X86
namespace {

// The crc32 instruction takes 3 cycles but can start one per cycle: three independent streams over three adjacent
// stripes keep it busy, and their CRCs are then joined. On the raw register (no pre/post inversion) the CRC is linear:
// crc(c, A ++ B) = crc(c, A) * x^(8|B|) mod P  xor  crc(0, B), and multiplying by x^(8 * kStripe) is a linear map of
// the 32-bit register, kept here as four byte tables.
constexpr size_t kStripe = 512;

struct stripe_shift {
  std::array<std::array<uint32_t, 256>, 4> t;
  uint32_t operator()(uint32_t c) const {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
  }
};

__attribute__((target("sse4.2"))) stripe_shift make_stripe_shift() {
  stripe_shift s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint64_t c = static_cast<uint64_t>(b) << (8 * k);
      for (size_t i = 0; i < kStripe / 8; ++i) c = _mm_crc32_u64(c, 0);  // kStripe zero bytes
      s.t[static_cast<size_t>(k)][b] = static_cast<uint32_t>(c);
    }
  }
  return s;
}

}  // namespace

__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  if (n >= 3 * kStripe) {
    static const stripe_shift shift = make_stripe_shift();
    do {
      uint64_t c1 = 0, c2 = 0;
      for (size_t i = 0; i < kStripe; i += 8) {
        uint64_t w0, w1, w2;
        std::memcpy(&w0, p + i, 8);
        std::memcpy(&w1, p + kStripe + i, 8);
        std::memcpy(&w2, p + 2 * kStripe + i, 8);
        c = _mm_crc32_u64(c, w0);
        c1 = _mm_crc32_u64(c1, w1);
        c2 = _mm_crc32_u64(c2, w2);
      }
      c = shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1);
      c = shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c2);
      p += 3 * kStripe;
      n -= 3 * kStripe;
    } while (n >= 3 * kStripe);
  }
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

bool hardware_crc32c() {
  static const bool supported = __builtin_cpu_supports("sse4.2");
  return supported;
}
#else
uint32_t crc32c_hardware(uint32_t crc, const uint8_t* p, size_t n) { return crc32c_software(crc, p, n); }
bool hardware_crc32c() { return false; }
#endif

}  // namespace detail

uint32_t crc32c_extend(uint32_t crc, const uint8_t* data, size_t size) {
  return detail::hardware_crc32c() ? detail::crc32c_hardware(crc, data, size)
                                   : detail::crc32c_software(crc, data, size);
}

uint32_t crc32c(std::span<const uint8_t> data) { return crc32c_extend(0, data.data(), data.size()); }

}  // namespace sluice::storage
