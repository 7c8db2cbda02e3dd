// Topic config validation (Kafka 3.x LogConfig bounds) and the topic name collision rule.
#include "broker/topic_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/clock.h"
#include "broker/topic_name.h"
#include "storage/errc.h"
#include "storage/log.h"
#include "storage/record_batch.h"

namespace sluice::broker {
namespace {

bool valid(const std::string& key, const std::string& value) { return !validate_topic_config(key, value).has_value(); }

struct bound_case {
  const char* key;
  const char* value;
  bool ok;
};

TEST(TopicConfigValidation, KafkaLowerBounds) {
  const std::vector<bound_case> cases = {
      {"segment.bytes", "14", true},         {"segment.bytes", "13", false},
      {"segment.bytes", "0", false},         {"segment.bytes", "-1", false},
      {"segment.ms", "1", true},             {"segment.ms", "0", false},
      {"segment.ms", "-1", false},           {"segment.jitter.ms", "0", true},
      {"segment.jitter.ms", "-1", false},    {"segment.index.bytes", "4", true},
      {"segment.index.bytes", "3", false},   {"retention.ms", "-1", true},
      {"retention.ms", "-2", false},         {"retention.ms", "-5", false},
      {"retention.bytes", "-9223372036854775808", true},
      {"retention.bytes", "9223372036854775807", true},
      {"max.message.bytes", "0", true},      {"max.message.bytes", "-1", false},
      {"max.message.bytes", "-5", false},    {"index.interval.bytes", "0", true},
      {"index.interval.bytes", "-1", false}, {"index.interval.bytes", "-5", false},
      {"flush.messages", "1", true},         {"flush.messages", "0", false},
      {"flush.messages", "-1", false},       {"flush.ms", "0", true},
      {"flush.ms", "-1", false},             {"delete.retention.ms", "0", true},
      {"delete.retention.ms", "-1", false},  {"min.compaction.lag.ms", "0", true},
      {"min.compaction.lag.ms", "-1", false}, {"max.compaction.lag.ms", "1", true},
      {"max.compaction.lag.ms", "0", false}, {"file.delete.delay.ms", "0", true},
      {"file.delete.delay.ms", "-1", false}, {"min.insync.replicas", "1", true},
      {"min.insync.replicas", "0", false},   {"min.insync.replicas", "-1", false},
      {"message.timestamp.before.max.ms", "0", true},
      {"message.timestamp.before.max.ms", "-1", false},
      {"message.timestamp.after.max.ms", "-1", false},
      {"local.retention.ms", "-2", true},    {"local.retention.ms", "-3", false},
      {"local.retention.bytes", "-2", true}, {"local.retention.bytes", "-3", false},
      {"min.cleanable.dirty.ratio", "0", true},
      {"min.cleanable.dirty.ratio", "1", true},
      {"min.cleanable.dirty.ratio", "0.25", true},
      {"min.cleanable.dirty.ratio", "-0.1", false},
      {"min.cleanable.dirty.ratio", "1.5", false},
      {"min.cleanable.dirty.ratio", "half", false},
  };
  for (const auto& c : cases) EXPECT_EQ(valid(c.key, c.value), c.ok) << c.key << "=" << c.value;
}

TEST(TopicConfigValidation, MessagesNameKeyAndValue) {
  EXPECT_EQ(validate_topic_config("segment.bytes", "13"),
            "Invalid value 13 for configuration segment.bytes: Value must be at least 14");
  EXPECT_EQ(validate_topic_config("retention.ms", "-7"),
            "Invalid value -7 for configuration retention.ms: Value must be at least -1");
  EXPECT_EQ(validate_topic_config("segment.ms", "abc"),
            "Invalid value abc for configuration segment.ms: Not a number of type LONG");
  EXPECT_EQ(validate_topic_config("max.message.bytes", "1k"),
            "Invalid value 1k for configuration max.message.bytes: Not a number of type INT");
  EXPECT_EQ(validate_topic_config("min.cleanable.dirty.ratio", "2"),
            "Invalid value 2 for configuration min.cleanable.dirty.ratio: Value must be no more than 1");
  EXPECT_EQ(validate_topic_config("preallocate", "yes"),
            "Invalid value yes for configuration preallocate: Expected value to be either true or false");
  EXPECT_EQ(validate_topic_config("cleanup.policy", "delete,purge"),
            "Invalid value purge for configuration cleanup.policy: String must be one of: compact, delete");
  EXPECT_EQ(validate_topic_config("no.such.key", "1"), "Unknown topic config name: no.such.key");
}

TEST(TopicConfigValidation, NumbersParseAsJavaDoes) {
  // INT keys must fit in 32 bits; LONG keys in 64.
  EXPECT_TRUE(valid("segment.bytes", "2147483647"));
  EXPECT_EQ(validate_topic_config("segment.bytes", "2147483648"),
            "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT");
  EXPECT_TRUE(valid("segment.ms", "9223372036854775807"));
  EXPECT_FALSE(valid("segment.ms", "9223372036854775808"));
  // ConfigDef trims values; Long.parseLong takes one leading sign.
  EXPECT_TRUE(valid("retention.ms", " 1000 "));
  EXPECT_TRUE(valid("retention.ms", "+1000"));
  EXPECT_FALSE(valid("retention.ms", "+-1000"));
  EXPECT_FALSE(valid("retention.ms", ""));
  EXPECT_FALSE(valid("retention.ms", "1.5"));
  EXPECT_FALSE(valid("retention.ms", "0x10"));
  EXPECT_EQ(parse_config_long(" +42 "), 42);
  EXPECT_EQ(parse_config_long("-1"), -1);
  EXPECT_EQ(parse_config_long("4 2"), std::nullopt);
}

TEST(TopicConfigValidation, StringsListsAndBooleans) {
  for (const char* v : {"delete", "compact", "compact,delete", "delete, compact", "", "delete,delete"})
    EXPECT_TRUE(valid("cleanup.policy", v)) << v;
  for (const char* v : {"Delete", "delete,", "none", "compact;delete"}) EXPECT_FALSE(valid("cleanup.policy", v)) << v;
  for (const char* v : {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})
    EXPECT_TRUE(valid("compression.type", v)) << v;
  EXPECT_FALSE(valid("compression.type", "none"));
  EXPECT_FALSE(valid("compression.type", "GZIP"));
  EXPECT_TRUE(valid("message.timestamp.type", "CreateTime"));
  EXPECT_TRUE(valid("message.timestamp.type", "LogAppendTime"));
  EXPECT_FALSE(valid("message.timestamp.type", "createtime"));
  for (const char* v : {"true", "false", "TRUE", "False"}) EXPECT_TRUE(valid("unclean.leader.election.enable", v)) << v;
  EXPECT_FALSE(valid("unclean.leader.election.enable", "1"));
  EXPECT_TRUE(valid("leader.replication.throttled.replicas", "*"));
  EXPECT_TRUE(valid("leader.replication.throttled.replicas", "0:1,1:2"));
  EXPECT_TRUE(valid("follower.replication.throttled.replicas", ""));
  EXPECT_FALSE(valid("follower.replication.throttled.replicas", "0-1"));
  // KIP-390 levels keep their ranges.
  EXPECT_TRUE(valid("compression.gzip.level", "-1"));
  EXPECT_FALSE(valid("compression.gzip.level", "0"));
  EXPECT_FALSE(valid("compression.lz4.level", "18"));
  EXPECT_TRUE(valid("compression.zstd.level", "-131072"));
}

TEST(TopicConfigValidation, SetIsCheckedAsAWhole) {
  EXPECT_EQ(validate_topic_configs({{"retention.ms", "1000"}, {"segment.bytes", "1048576"}}), std::nullopt);
  EXPECT_EQ(validate_topic_configs({{"retention.ms", "1000"}, {"min.insync.replicas", "0"}}),
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1");
}

class TopicLogConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/tmp/sluice-topic-config-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto c = make_config({}, {});
    ASSERT_TRUE(c.ok()) << c.err().message;
    broker_ = *c;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  result<std::unique_ptr<storage::log>> open(const std::map<std::string, std::string>& overrides) {
    return storage::log::open(dir_ / ("t-" + std::to_string(n_++)), make_log_config(broker_, overrides), clock_);
  }

  std::filesystem::path dir_;
  broker_config broker_;
  manual_clock clock_;
  int n_ = 0;
};

TEST_F(TopicLogConfig, EveryAcceptedBoundaryBuildsALog) {
  // Whatever the validator accepts, storage accepts: no config value can become KAFKA_STORAGE_ERROR.
  const std::map<std::string, std::string> lowest = {
      {"segment.bytes", "14"},   {"index.interval.bytes", "0"}, {"max.message.bytes", "0"}, {"segment.ms", "1"},
      {"flush.messages", "1"},   {"flush.ms", "0"},             {"retention.ms", "-1"},     {"segment.index.bytes", "4"},
      {"min.insync.replicas", "1"}};
  ASSERT_EQ(validate_topic_configs(lowest), std::nullopt);
  auto l = open(lowest);
  ASSERT_TRUE(l.ok()) << l.err().message;
  const std::map<std::string, std::string> highest = {
      {"segment.bytes", "2147483647"}, {"index.interval.bytes", "2147483647"}, {"max.message.bytes", "2147483647"}};
  ASSERT_EQ(validate_topic_configs(highest), std::nullopt);
  auto h = open(highest);
  ASSERT_TRUE(h.ok()) << h.err().message;
}

TEST_F(TopicLogConfig, MaxMessageBytesZeroRefusesEveryBatch) {
  auto l = open({{"max.message.bytes", "0"}});
  ASSERT_TRUE(l.ok()) << l.err().message;
  storage::record_batch_builder b;
  b.add("k", "v", 1000);
  auto bytes = b.build();
  auto r = (*l)->append(bytes, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, storage::errc::record_too_large);
  EXPECT_EQ((*l)->log_end_offset(), 0);
}

TEST_F(TopicLogConfig, InvalidStoredOverridesFallBackToBrokerValues) {
  // Overrides persisted by an older version that did not check them never reach storage.
  auto c = make_log_config(broker_, {{"segment.bytes", "0"}, {"max.message.bytes", "-1"}, {"segment.ms", "-1"},
                                     {"flush.messages", "-1"}, {"index.interval.bytes", "-5"}});
  EXPECT_EQ(c.segment_bytes, broker_.log_segment_bytes);
  EXPECT_EQ(c.max_message_bytes, broker_.message_max_bytes);
  EXPECT_EQ(c.segment_ms, broker_.log_roll_ms);
  EXPECT_EQ(c.flush_messages, broker_.log_flush_interval_messages);
  EXPECT_EQ(c.index_interval_bytes, broker_.log_index_interval_bytes);
  EXPECT_EQ(topic_min_insync_replicas(broker_, {{"min.insync.replicas", "0"}}), broker_.min_insync_replicas);
  EXPECT_EQ(topic_min_insync_replicas(broker_, {{"min.insync.replicas", " 2"}}), 2);
  auto l = open({{"segment.bytes", "0"}, {"max.message.bytes", "-1"}});
  EXPECT_TRUE(l.ok());
  auto t = make_log_config(broker_, {{"message.timestamp.type", " LogAppendTime "}, {"segment.bytes", " 2048"}});
  EXPECT_EQ(t.message_timestamp_type, storage::timestamp_type::log_append_time);
  EXPECT_EQ(t.segment_bytes, 2048);
}

TEST(TopicNameCollision, DotAndUnderscoreAreTheSame) {
  EXPECT_TRUE(topic_names_collide("a_b.c", "a.b_c"));
  EXPECT_TRUE(topic_names_collide("a.b", "a_b"));
  EXPECT_TRUE(topic_names_collide("x..y", "x__y"));
  EXPECT_FALSE(topic_names_collide("a.b", "a.b"));  // the same name: TOPIC_ALREADY_EXISTS, not a collision
  EXPECT_FALSE(topic_names_collide("a.b", "a-b"));
  EXPECT_FALSE(topic_names_collide("a.b", "a.bc"));
  EXPECT_FALSE(topic_names_collide("A_b", "a.b"));
}

}  // namespace
}  // namespace sluice::broker
