// Kafka's topic name rule (Topic.validate) and its 4.x messages: broker/topic_name.h.
#include "broker/topic_name.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::broker {
namespace {

std::string reason(const std::string& name) { return invalid_topic_name_reason(name).value_or("<valid>"); }

TEST(TopicName, ValidNames) {
  for (const std::string& name :
       std::vector<std::string>{"a", "orders", "A-b_c.9", "..a", "a..", "...", "-", "_", std::string(249, 'x')})
    EXPECT_EQ(reason(name), "<valid>") << name;
}

TEST(TopicName, KafkaMessagesInKafkaOrder) {
  EXPECT_EQ(reason(""), "Topic name is invalid: the empty string is not allowed");
  EXPECT_EQ(reason("."), "Topic name is invalid: '.' is not allowed");
  EXPECT_EQ(reason(".."), "Topic name is invalid: '..' is not allowed");
  const std::string long_name(250, 'x');
  EXPECT_EQ(reason(long_name),
            "Topic name is invalid: the length of '" + long_name + "' is longer than the max allowed length 249");
  EXPECT_EQ(reason("a b"),
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' "
            "and '-'");
  // Length is checked before characters: 250 characters with a bad one report the length.
  EXPECT_NE(reason(std::string(249, 'x') + "*").find("longer than the max allowed length 249"), std::string::npos);
}

TEST(TopicName, LengthCountsJavaCharactersNotBytes) {
  // "é" is 2 UTF-8 bytes but one Java char: 200 of them (400 bytes) are within 249 characters, so Kafka reports
  // the characters, not the length. "😀" (U+1F600) is 4 bytes and 2 Java chars (a surrogate pair).
  std::string e_acute;
  for (int i = 0; i < 200; ++i) e_acute += "\xC3\xA9";
  EXPECT_NE(reason(e_acute).find("contains one or more characters"), std::string::npos);
  std::string emoji;
  for (int i = 0; i < 124; ++i) emoji += "\xF0\x9F\x98\x80";  // 248 Java chars
  EXPECT_NE(reason(emoji).find("contains one or more characters"), std::string::npos);
  emoji += "\xF0\x9F\x98\x80";  // 250 Java chars
  EXPECT_NE(reason(emoji).find("longer than the max allowed length 249"), std::string::npos);
}

}  // namespace
}  // namespace sluice::broker
