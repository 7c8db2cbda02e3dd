// The handler table takes its version ranges from the message definitions (api_traits), never from a second list.
#include <gtest/gtest.h>

#include <set>

#include "broker/handler_table.h"
#include "protocol/api_traits.h"

namespace sluice::broker {
namespace {

TEST(HandlerTable, VersionsAreTheDefinitionsServedRange) {
  ASSERT_FALSE(handler_table().empty());
  std::set<int16_t> keys;
  for (const handler_entry& e : handler_table()) {
    const auto key = static_cast<int16_t>(e.key);
    EXPECT_TRUE(keys.insert(key).second) << "api key " << key << " twice";
    const protocol::api_traits* t = protocol::find_api_traits(key);
    ASSERT_NE(t, nullptr) << "api key " << key;
    EXPECT_EQ(e.min_version, t->served_min_version) << t->name;
    EXPECT_EQ(e.max_version, t->served_max_version) << t->name;
    EXPECT_GE(e.min_version, t->min_version) << t->name;
    EXPECT_LE(e.max_version, t->max_version) << t->name;
    EXPECT_EQ(find_handler(key), &e) << t->name;
  }
  // Facts of the served ranges that clients depend on: Fetch from v4 (Kafka 4.0, KIP-896), Produce advertised
  // from v0 (librdkafka <= 2.11 compresses only then); the maxima are Kafka 4.4's (Fetch 18, Produce 13,
  // ApiVersions 5).
  EXPECT_EQ(find_handler(1)->min_version, 4);
  EXPECT_EQ(find_handler(1)->max_version, 18);
  EXPECT_EQ(find_handler(0)->min_version, 0);
  EXPECT_EQ(find_handler(0)->max_version, 13);
  EXPECT_EQ(find_handler(18)->max_version, 5);
  // SASL (KIP-43, KIP-152): SaslHandshake 0-1, SaslAuthenticate 0-2, as Kafka 4.4 serves them.
  EXPECT_EQ(find_handler(17)->max_version, 1);
  EXPECT_EQ(find_handler(36)->max_version, 2);
}

}  // namespace
}  // namespace sluice::broker
