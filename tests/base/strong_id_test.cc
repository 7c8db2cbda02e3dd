#include "base/clock.h"
#include "base/result.h"
#include "base/strong_id.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace sluice {

TEST(strong_id, compares_by_value_and_does_not_convert_between_tags) {
  broker_id a{3}, b{5};
  EXPECT_LT(a, b);
  EXPECT_EQ(a, broker_id{3});
  static_assert(!std::is_convertible_v<broker_id, partition_index>);
  static_assert(!std::is_convertible_v<int32_t, broker_id>);
}

TEST(result, carries_value_or_error) {
  result<int> good = 7;
  result<int> bad = error{base_errc::failed, "corrupt"};
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().code, base_errc::failed);
  EXPECT_EQ(bad.err().code.category().name(), std::string("sluice"));
  EXPECT_EQ(bad.err().message, "corrupt");
}

TEST(manual_clock, advances_only_when_told) {
  manual_clock c(1000);
  EXPECT_EQ(c.now_ms(), 1000);
  c.advance_ms(250);
  EXPECT_EQ(c.now_ms(), 1250);
  EXPECT_EQ(c.monotonic_ms(), 1250);
}

}  // namespace sluice
