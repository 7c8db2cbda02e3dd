// parse_properties reads server.properties and meta.properties as java.util.Properties.load does.
#include <gtest/gtest.h>

#include "broker/config.h"
#include "broker/meta_properties.h"

namespace sluice::broker {
namespace {

std::map<std::string, std::string> parse(const std::string& text) {
  auto r = parse_properties(text);
  EXPECT_TRUE(r) << (r ? "" : r.err().message);
  return r ? *r : std::map<std::string, std::string>{};
}

TEST(Properties, SeparatorsCommentsAndBlanks) {
  auto kv = parse("# comment\n! also a comment\n\n  a=1\nb: 2\nc 3\nd\t=\t4\ne\n f = five six \n");
  EXPECT_EQ(kv, (std::map<std::string, std::string>{
                    {"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", ""}, {"f", "five six"}}));
}

TEST(Properties, LineEndingsOfEveryKind) {
  EXPECT_EQ(parse("a=1\rb=2\r\nc=3\nd=4"),
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}));
}

TEST(Properties, ContinuationsAndEscapes) {
  // An odd number of trailing backslashes continues the line; the next line's leading blanks are dropped.
  auto kv = parse("list=a,\\\n    b,\\\n    c\npath=C:\\\\dir\\\\\nkey\\=with\\:seps=v\nbroker.\\u0069d=5\ntab=x\\ty\n");
  EXPECT_EQ(kv.at("list"), "a,b,c");
  EXPECT_EQ(kv.at("path"), "C:\\dir\\") << "an even count of backslashes is no continuation";
  EXPECT_EQ(kv.at("key=with:seps"), "v");
  EXPECT_EQ(kv.at("broker.id"), "5");
  EXPECT_EQ(kv.at("tab"), "x\ty");
  EXPECT_EQ(parse("u=\\u00e9")["u"], "\xc3\xa9");
  EXPECT_EQ(parse("last=a\\")["last"], "a") << "a continuation at the end of the text ends the line";
}

TEST(Properties, Errors) {
  auto bad = parse_properties("a=1\nb=\\u12G4\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("line 2"), std::string::npos) << bad.err().message;
  EXPECT_FALSE(parse_properties("=value\n"));
}

TEST(Properties, MetaPropertiesWithEscapedKeysAndBareCarriageReturns) {
  // Java reads these as broker.id 5 and the cluster id below; a parser that does not would see no broker.id
  // and "complete" the file with another broker's id.
  auto m = parse_meta_properties("#\rversion=0\rbroker.\\u0069d=5\rcluster.id=J0kh\\_nACP3Q\r");
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_EQ(m->broker_id, 5);
  EXPECT_EQ(m->cluster_id, "J0kh_nACP3Q");
}

// `sluice --config-env` (the Docker image): Bitnami's KAFKA_CFG_* names and our SLUICE_CFG_* ones.
TEST(Properties, KeysFromTheEnvironment) {
  const char* env[] = {"KAFKA_CFG_LOG_DIRS=/bitnami/kafka/data",
                       "KAFKA_CFG_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092,INTERNAL://sluice-1:29092",
                       "SLUICE_CFG_NUM_PARTITIONS=3",
                       "KAFKA_CFG_NUM_PARTITIONS=1",          // SLUICE_CFG_ wins for the same key
                       "SLUICE_CFG_SLUICE_TEST_FAULTS_ENABLE=true",
                       "KAFKA_CFG_SOME__ODD_NAME=x",          // __ is a literal underscore
                       "KAFKA_CFG_=ignored",                  // nothing after the prefix
                       "KAFKA_HEAP_OPTS=-Xmx1g",              // not a config variable
                       "PATH=/usr/bin",
                       "KAFKA_CFG_EMPTY_VALUE=",
                       nullptr};
  const auto got = config_from_environment(env);
  const std::map<std::string, std::string> want{
      {"log.dirs", "/bitnami/kafka/data"},
      {"advertised.listeners", "PLAINTEXT://localhost:9092,INTERNAL://sluice-1:29092"},
      {"num.partitions", "3"},
      {"sluice.test.faults.enable", "true"},
      {"some_odd.name", "x"},
      {"empty.value", ""}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(config_from_environment(nullptr).empty());
}

}  // namespace
}  // namespace sluice::broker
