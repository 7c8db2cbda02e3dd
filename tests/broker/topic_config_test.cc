// Topic config validation (Kafka 4.4 LogConfig keys, types and bounds), DescribeConfigs synonyms and the topic name
// collision rule.
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
      {"segment.bytes", "1048576", true},    {"segment.bytes", "1048575", false},
      {"segment.bytes", "20000", false},     {"segment.bytes", "14", false},
      {"segment.bytes", "0", false},         {"segment.bytes", "-1", false},
      {"internal.segment.bytes", "0", true}, {"internal.segment.bytes", "-5", true},
      {"internal.segment.bytes", "16384", true},
      {"remote.copy.lag.bytes", "-1", true}, {"remote.copy.lag.bytes", "-2", false},
      {"remote.copy.lag.ms", "-1", true},    {"remote.copy.lag.ms", "-2", false},
      {"max.decompressed.message.bytes", "1", true},
      {"max.decompressed.message.bytes", "0", false},
      {"max.decompressed.message.bytes", "2147483639", true},
      {"max.decompressed.message.bytes", "2147483640", false},
      {"errors.deadletterqueue.group.enable", "TRUE", true},
      {"errors.deadletterqueue.group.enable", "1", false},
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
  EXPECT_EQ(validate_topic_config("segment.bytes", "20000"),
            "Invalid value 20000 for configuration segment.bytes: Value must be at least 1048576");
  EXPECT_EQ(validate_topic_config("internal.segment.bytes", "abc"),
            "Invalid value abc for configuration internal.segment.bytes: Not a number of type INT");
  EXPECT_EQ(validate_topic_config("max.decompressed.message.bytes", "2147483647"),
            "Invalid value 2147483647 for configuration max.decompressed.message.bytes: Value must be no more than "
            "2147483639");
  // Removed in Kafka 4.0 (KIP-724).
  EXPECT_EQ(validate_topic_config("message.downconversion.enable", "true"),
            "Unknown topic config name: message.downconversion.enable");
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
      {"segment.bytes", "1048576"}, {"index.interval.bytes", "0"}, {"max.message.bytes", "0"}, {"segment.ms", "1"},
      {"flush.messages", "1"},   {"flush.ms", "0"},             {"retention.ms", "-1"},     {"segment.index.bytes", "4"},
      {"min.insync.replicas", "1"}};
  ASSERT_EQ(validate_topic_configs(lowest), std::nullopt);
  auto l = open(lowest);
  ASSERT_TRUE(l.ok()) << l.err().message;
  for (const char* any : {"-2147483648", "0", "1"}) {  // internal.segment.bytes takes any INT
    ASSERT_EQ(validate_topic_configs({{"internal.segment.bytes", any}}), std::nullopt);
    auto i = open({{"internal.segment.bytes", any}});
    ASSERT_TRUE(i.ok()) << any << ": " << i.err().message;
  }
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
  auto t = make_log_config(broker_, {{"message.timestamp.type", " LogAppendTime "}, {"segment.bytes", " 2048000"}});
  EXPECT_EQ(t.message_timestamp_type, storage::timestamp_type::log_append_time);
  EXPECT_EQ(t.segment_bytes, 2048000);
  // segment.bytes below Kafka 4's 1 MiB minimum (stored by an older version) is ignored too.
  EXPECT_EQ(make_log_config(broker_, {{"segment.bytes", "2048"}}).segment_bytes, broker_.log_segment_bytes);
}

TEST_F(TopicLogConfig, InternalSegmentBytesReplacesSegmentBytes) {
  // Kafka's LogConfig.segmentSize(): internal.segment.bytes when set, below the 1 MiB minimum too.
  EXPECT_EQ(make_log_config(broker_, {{"internal.segment.bytes", "16384"}}).segment_bytes, 16384);
  EXPECT_EQ(make_log_config(broker_, {{"segment.bytes", "2097152"}, {"internal.segment.bytes", "65536"}}).segment_bytes,
            65536);
  EXPECT_EQ(make_log_config(broker_, {{"segment.bytes", "2097152"}}).segment_bytes, 2097152);
  EXPECT_EQ(make_log_config(broker_, {{"internal.segment.bytes", "0"}}).segment_bytes, 1);  // Kafka rolls every batch
  EXPECT_EQ(make_log_config(broker_, {{"internal.segment.bytes", "x"}}).segment_bytes, broker_.log_segment_bytes);
}

TEST(BrokerConfig, LogSegmentBytesAtLeastOneMebibyte) {
  // Kafka 4.x's KafkaConfig: log.segment.bytes atLeast(1048576) (KIP-1030); no broker-side way below it.
  EXPECT_FALSE(make_config({}, {{"log.segment.bytes", "65536"}}).ok());
  auto c = make_config({}, {{"log.segment.bytes", "1048576"}});
  ASSERT_TRUE(c.ok()) << c.err().message;
  EXPECT_EQ(c->log_segment_bytes, 1048576);
}

TEST(BrokerConfig, ReplicaSelectorClassIsKafkasRackAwareSelectorOrNothing) {
  auto none = make_config({}, {});
  ASSERT_TRUE(none.ok()) << none.err().message;
  EXPECT_FALSE(none->rack_aware_replica_selector);  // Kafka's default: consumers read from the leader
  auto rack = make_config({}, {{"replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"}});
  ASSERT_TRUE(rack.ok()) << rack.err().message;
  EXPECT_TRUE(rack->rack_aware_replica_selector);
  auto other = make_config({}, {{"replica.selector.class", "com.example.MySelector"}});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.err().message.find("replica.selector.class"), std::string::npos) << other.err().message;
}

TEST(TopicConfigKeys, KafkaFourFourList) {
  std::vector<std::string> names;
  for (const auto& k : topic_config_keys()) names.emplace_back(k.name);
  EXPECT_EQ(names.size(), 38u);
  for (const char* n : {"errors.deadletterqueue.group.enable", "max.decompressed.message.bytes", "remote.copy.lag.bytes",
                        "remote.copy.lag.ms", "internal.segment.bytes"})
    EXPECT_NE(find_topic_config_key(n), nullptr) << n;
  EXPECT_EQ(find_topic_config_key("message.downconversion.enable"), nullptr);
  auto default_of = [](const char* n) { return std::string(find_topic_config_key(n)->default_value); };
  EXPECT_EQ(default_of("errors.deadletterqueue.group.enable"), "false");
  EXPECT_EQ(default_of("max.decompressed.message.bytes"), "2147483639");
  EXPECT_EQ(default_of("remote.copy.lag.bytes"), "-1");
  EXPECT_EQ(default_of("remote.copy.lag.ms"), "0");
  EXPECT_EQ(std::string(find_topic_config_key("remote.copy.lag.ms")->broker_key), "log.remote.copy.lag.ms");
  EXPECT_TRUE(find_topic_config_key("internal.segment.bytes")->internal);
  // KIP-569 types as Kafka's DescribeConfigs answers them.
  EXPECT_EQ(topic_config_type("errors.deadletterqueue.group.enable"), 1);  // BOOLEAN
  EXPECT_EQ(topic_config_type("compression.type"), 2);                     // STRING
  EXPECT_EQ(topic_config_type("max.decompressed.message.bytes"), 3);       // INT
  EXPECT_EQ(topic_config_type("segment.bytes"), 3);
  EXPECT_EQ(topic_config_type("remote.copy.lag.bytes"), 5);                // LONG
  EXPECT_EQ(topic_config_type("min.cleanable.dirty.ratio"), 6);            // DOUBLE
  EXPECT_EQ(topic_config_type("cleanup.policy"), 7);                       // LIST
}

std::string describe(const std::vector<config_synonym>& synonyms) {
  std::string out;
  for (const auto& s : synonyms)
    out += (out.empty() ? "" : " ") + s.name + "=" + s.value.value_or("<null>") + "/" + std::to_string(s.source);
  return out;
}

// What Kafka 4.4 answers DescribeConfigs with include_synonyms (ConfigHelper.configSynonyms: every static setting of
// the synonym group, then every non-null default, from the first entry of the key's own broker name on).
TEST(TopicConfigSynonyms, AsKafkaListsThem) {
  auto c = make_config({}, {{"log.retention.bytes", "1073741824"}, {"log.retention.hours", "24"}});
  ASSERT_TRUE(c.ok()) << c.err().message;
  auto syn = [&](const char* key, const std::map<std::string, std::string>& overrides = {}) {
    return describe(topic_config_synonyms(*c, *find_topic_config_key(key), overrides));
  };
  EXPECT_EQ(syn("segment.bytes"), "log.segment.bytes=1073741824/5");
  EXPECT_EQ(syn("retention.bytes"), "log.retention.bytes=1073741824/4 log.retention.bytes=-1/5");
  // log.retention.ms is null: the hours' entries come before any log.retention.ms entry and are dropped.
  EXPECT_EQ(syn("retention.ms"), "");
  EXPECT_EQ(syn("retention.ms", {{"retention.ms", "3600000"}}), "retention.ms=3600000/1");
  EXPECT_EQ(syn("segment.ms"), "");
  EXPECT_EQ(syn("segment.jitter.ms"), "");
  EXPECT_EQ(syn("flush.ms"), "");
  EXPECT_EQ(syn("remote.storage.enable"), "");
  EXPECT_EQ(syn("errors.deadletterqueue.group.enable"), "");
  EXPECT_EQ(syn("max.decompressed.message.bytes"), "max.decompressed.message.bytes=2147483639/5");
  EXPECT_EQ(syn("remote.copy.lag.ms"), "log.remote.copy.lag.ms=0/5");
  EXPECT_EQ(syn("cleanup.policy", {{"cleanup.policy", "compact"}}),
            "cleanup.policy=compact/1 log.cleanup.policy=delete/5");

  auto ms = make_config({}, {{"log.retention.ms", "5000"}, {"log.retention.hours", "24"}});
  ASSERT_TRUE(ms.ok()) << ms.err().message;
  EXPECT_EQ(describe(topic_config_synonyms(*ms, *find_topic_config_key("retention.ms"), {})),
            "log.retention.ms=5000/4 log.retention.hours=24/4 log.retention.hours=168/5");
  // Broker resources: the same rule over the key's own name.
  EXPECT_EQ(describe(broker_config_synonyms(*c, "log.retention.hours")), "log.retention.hours=24/4 log.retention.hours=168/5");
  EXPECT_EQ(describe(broker_config_synonyms(*c, "log.retention.ms")), "");
  EXPECT_EQ(describe(broker_config_synonyms(*c, "num.partitions")), "num.partitions=1/5");
  EXPECT_EQ(describe(broker_config_synonyms(*c, "advertised.listeners")), "");
  EXPECT_EQ(broker_config_type("num.partitions"), 3);
  EXPECT_EQ(broker_config_type("auto.create.topics.enable"), 1);
  EXPECT_EQ(broker_config_type("offsets.topic.replication.factor"), 4);
  EXPECT_EQ(broker_config_type("log.retention.ms"), 5);
  EXPECT_EQ(broker_config_type("listeners"), 7);
  EXPECT_EQ(broker_config_type("compression.type"), 2);
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

TEST(TopicConfigValidation, ThrottledReplicaListsNamePartitionAndBroker) {
  EXPECT_TRUE(throttled_replica_listed("*", 7, 3));
  EXPECT_TRUE(throttled_replica_listed("0:1,1:3", 1, 3));
  EXPECT_FALSE(throttled_replica_listed("0:1,1:3", 1, 1));
  EXPECT_FALSE(throttled_replica_listed("0:1,1:3", 0, 3));
  EXPECT_FALSE(throttled_replica_listed("", 0, 1));
  EXPECT_FALSE(throttled_replica_listed("10:1", 1, 1)) << "whole entries, not substrings";
}

}  // namespace
}  // namespace sluice::broker
