#pragma once
// Helpers for the generated round-trip tests (generated_roundtrip_test.cc, written by
// protocol/gen/generate.py): deterministic non-default values and the checks run on every message at
// every version.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/reader.h"
#include "protocol/records.h"
#include "protocol/uuid.h"
#include "protocol/writer.h"

namespace sluice::protocol::test_support {

inline int64_t& counter() {
  static int64_t c = 0;
  return c;
}
inline int64_t next_int() { return ++counter(); }
inline std::string next_string(int variant) { return variant == 1 ? std::string() : "s" + std::to_string(next_int()); }
inline std::vector<uint8_t> next_bytes(int variant) {
  if (variant == 1) return {};
  int64_t n = next_int();
  return {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), 0xab};
}
inline records next_records(int variant) {
  static const std::array<uint8_t, 64> pool = [] {
    std::array<uint8_t, 64> a{};
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
    return a;
  }();
  size_t n = variant == 1 ? 0 : static_cast<size_t>(next_int() % 40) + 1;
  return records::from_memory(std::span<const uint8_t>(pool.data(), n));
}
inline uuid next_uuid() {
  uuid u;
  int64_t n = next_int();
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(n + static_cast<int64_t>(i) * 13);
  return u;
}

/// For every version and both variants (0: values everywhere; 1: nulls and empty collections where
/// allowed): encode, check encoded_size, decode, compare the structs, re-encode and compare bytes; then
/// check that every strict prefix of the encoding fails to decode cleanly.
template <class Msg>
void check_all_versions() {
  for (int16_t v = Msg::min_version; v <= Msg::max_version; ++v) {
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE("version " + std::to_string(v) + " variant " + std::to_string(variant));
      Msg m;
      fill(m, v, variant);
      writer w;
      m.encode(w, v);
      ASSERT_EQ(w.size(), m.encoded_size(v));
      encoded_frame f = w.finish();
      ASSERT_TRUE(f.file_regions.empty());

      reader r(f.bytes);
      Msg d;
      d.decode(r, v);
      ASSERT_TRUE(r.ok()) << r.error_message();
      EXPECT_EQ(r.remaining(), 0u);
      EXPECT_TRUE(d == m);

      writer w2;
      d.encode(w2, v);
      EXPECT_EQ(w2.finish().bytes, f.bytes);

      if (variant == 0) {
        for (size_t len = 0; len < f.bytes.size(); ++len) {
          reader rp(std::span<const uint8_t>(f.bytes.data(), len));
          Msg p;
          p.decode(rp, v);
          ASSERT_FALSE(rp.ok()) << "prefix of " << len << " of " << f.bytes.size() << " bytes decoded";
          EXPECT_FALSE(rp.error_field().empty());
        }
      }
    }
  }
}

}  // namespace sluice::protocol::test_support
