#include "storage/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace sluice::storage {
namespace {

uint32_t crc_of(const std::string& s) {
  return crc32c(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc_of("123456789"), 0xE3069283u);
  EXPECT_EQ(crc_of(""), 0u);
  // RFC 3720 (iSCSI) appendix B.4 test patterns.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

TEST(Crc32c, SoftwareAndHardwareAgreeAtEveryLengthAndAlignment) {
  std::mt19937 rng(12345);
  std::vector<uint8_t> data(8192 + 16);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    // Around the hardware path's 3 x 512-byte interleaved blocks too: one block, one and a bit, several.
    for (size_t len : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1000, 1535, 1536, 1537, 1543, 3072, 3079, 4096,
                       4607, 4608, 8192}) {
      const uint32_t sw = detail::crc32c_software(0, data.data() + offset, len);
      EXPECT_EQ(crc32c_extend(0, data.data() + offset, len), sw) << offset << " " << len;
      if (detail::hardware_crc32c()) {
        EXPECT_EQ(detail::crc32c_hardware(0, data.data() + offset, len), sw);
      }
    }
  }
}

TEST(Crc32c, ExtendEqualsWhole) {
  const std::string s = "The quick brown fox jumps over the lazy dog";
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(crc32c_extend(crc32c_extend(0, p, cut), p + cut, s.size() - cut), crc_of(s));
  }
}

}  // namespace
}  // namespace sluice::storage
