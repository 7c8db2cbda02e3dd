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
__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
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
