// The config-family admin handlers on a real single node, below the network: CreateTopics, AlterConfigs,
// IncrementalAlterConfigs, DescribeConfigs, CreatePartitions and DeleteTopics answer as Kafka 4.4 does
// (compat/diff RESULTS.md B14-B24; each expectation is what Kafka's broker answered the same request).
#include <gtest/gtest.h>

#include <future>

#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"
#include "tests/broker/single_node.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

class AdminConfigsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.open("sluice-admin-configs-test", {{"broker.id", "1"}, {"num.partitions", "1"}}, clock_, io_);
    ASSERT_FALSE(HasFatalFailure());
    topic_spec spec;
    spec.name = "t";
    spec.num_partitions = 1;
    ASSERT_TRUE(node_.topics->create(spec, false).ok());
  }
  template <typename Resp, typename Req, typename F>
  Resp call(int16_t api_key, int16_t version, Req req, F handler) {
    auto rc = std::make_shared<request_context>(
        request_context{protocol::request_header{api_key, version, 1, "admin-configs-test"}, session_, strand_});
    auto r = std::make_shared<Req>(std::move(req));
    auto* services = node_.services.get();
    auto done = asio::co_spawn(strand_, [services, rc, r, handler]() { return handler(*services, *rc, *r); },
                               asio::use_future);
    io_.restart();
    io_.poll();
    EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    return done.get();
  }

  protocol::create_topics_response create(protocol::create_topics_request req, int16_t version = 7) {
    return call<protocol::create_topics_response>(19, version, std::move(req), handlers::create_topics);
  }
  static protocol::create_topics_request::creatable_topic new_topic(std::string name, int32_t partitions = 1,
                                                                    int16_t rf = 1) {
    protocol::create_topics_request::creatable_topic t;
    t.name = std::move(name);
    t.num_partitions = partitions;
    t.replication_factor = rf;
    return t;
  }
  static protocol::create_topics_request::creatable_topic_config cfg(std::string name, std::optional<std::string> value) {
    protocol::create_topics_request::creatable_topic_config c;
    c.name = std::move(name);
    c.value = std::move(value);
    return c;
  }
  protocol::describe_configs_response describe(protocol::describe_configs_request req, int16_t version = 4) {
    return call<protocol::describe_configs_response>(32, version, std::move(req), handlers::describe_configs);
  }
  static protocol::describe_configs_request::describe_configs_resource resource(
      int8_t type, std::string name, std::optional<std::vector<std::string>> keys = std::nullopt) {
    protocol::describe_configs_request::describe_configs_resource r;
    r.resource_type = type;
    r.resource_name = std::move(name);
    r.configuration_keys = std::move(keys);
    return r;
  }
  protocol::alter_configs_response alter(std::string topic,
                                         std::vector<std::pair<std::string, std::optional<std::string>>> configs) {
    protocol::alter_configs_request req;
    protocol::alter_configs_request::alter_configs_resource r;
    r.resource_type = 2;
    r.resource_name = std::move(topic);
    for (auto& [n, v] : configs) {
      protocol::alter_configs_request::alterable_config c;
      c.name = n;
      c.value = v;
      r.configs.push_back(c);
    }
    req.resources.push_back(std::move(r));
    return call<protocol::alter_configs_response>(33, 2, std::move(req), handlers::alter_configs);
  }

  manual_clock clock_;
  asio::io_context io_;
  testing::single_node node_;
  asio::strand<asio::io_context::executor_type> strand_{asio::make_strand(io_)};
  session session_;
};

// B16: the controller's deadline (now + timeout_ms) has passed: every topic REQUEST_TIMED_OUT, counts -1, nothing
// created.
TEST_F(AdminConfigsTest, CreateTopicsTimeoutZeroTimesOutAndCreatesNothing) {
  protocol::create_topics_request req;
  req.topics = {new_topic("z"), new_topic("z2", 3)};
  req.timeout_ms = 0;
  auto resp = create(req);
  ASSERT_EQ(resp.topics.size(), 2u);
  for (const auto& t : resp.topics) {
    EXPECT_EQ(t.error_code, error_code::request_timed_out) << t.name;
    EXPECT_EQ(t.num_partitions, -1);
    EXPECT_EQ(t.replication_factor, -1);
    EXPECT_TRUE(t.topic_id.is_zero());
  }
  EXPECT_EQ(node_.topics->find("z"), nullptr);
  EXPECT_EQ(node_.topics->find("z2"), nullptr);
}

// B15: validate_only answers a (random, non-zero) topic id and creates nothing.
TEST_F(AdminConfigsTest, CreateTopicsValidateOnlyAnswersATopicId) {
  protocol::create_topics_request req;
  req.topics = {new_topic("v", 3)};
  req.timeout_ms = 10000;
  req.validate_only = true;
  auto resp = create(req);
  ASSERT_EQ(resp.topics.size(), 1u);
  EXPECT_EQ(resp.topics[0].error_code, error_code::none);
  EXPECT_FALSE(resp.topics[0].topic_id.is_zero());
  EXPECT_EQ(resp.topics[0].num_partitions, 3);
  EXPECT_EQ(node_.topics->find("v"), nullptr);
}

// B17: Kafka's order: the name, an existing topic, null configs, config values, then the counts.
TEST_F(AdminConfigsTest, CreateTopicsChecksInKafkasOrder) {
  protocol::create_topics_request req;
  req.timeout_ms = 10000;
  auto existing_bad_config = new_topic("t", 0);
  existing_bad_config.configs = {cfg("no.such.config", "1")};
  auto bad_config_zero_partitions = new_topic("a", 0);
  bad_config_zero_partitions.configs = {cfg("no.such.config", "1")};
  auto null_and_bad = new_topic("b", 0, 0);
  null_and_bad.configs = {cfg("retention.ms", std::nullopt), cfg("segment.bytes", "1")};
  auto zero_rf_zero_partitions = new_topic("c", 0, 0);
  auto small_segments = new_topic("d");
  small_segments.configs = {cfg("segment.bytes", "20000")};
  req.topics = {existing_bad_config, bad_config_zero_partitions, null_and_bad, zero_rf_zero_partitions, small_segments};
  auto resp = create(req);
  ASSERT_EQ(resp.topics.size(), 5u);
  EXPECT_EQ(resp.topics[0].error_code, error_code::topic_already_exists);
  EXPECT_EQ(resp.topics[1].error_code, error_code::invalid_config);
  EXPECT_EQ(resp.topics[2].error_code, error_code::invalid_config);
  EXPECT_EQ(resp.topics[2].error_message, "Null value not supported for topic configs: retention.ms");
  EXPECT_EQ(resp.topics[3].error_code, error_code::invalid_replication_factor);
  EXPECT_EQ(resp.topics[4].error_code, error_code::invalid_config);
  EXPECT_EQ(resp.topics[4].error_message,
            "Invalid value 20000 for configuration segment.bytes: Value must be at least 1048576");
}

TEST_F(AdminConfigsTest, CreateTopicsManualAssignmentInAnyOrderAndInternalSegmentBytes) {
  protocol::create_topics_request req;
  req.timeout_ms = 10000;
  auto m = new_topic("m", -1, -1);
  m.assignments = {{1, {1}}, {0, {1}}};
  auto both = new_topic("m2", 2, -1);
  both.assignments = {{0, {1}}};
  auto twice = new_topic("m3", -1, -1);
  twice.assignments = {{0, {1}}, {0, {1}}};
  auto small = new_topic("s");
  small.configs = {cfg("internal.segment.bytes", "16384")};
  req.topics = {m, both, twice, small};
  auto resp = create(req, 5);
  ASSERT_EQ(resp.topics.size(), 4u);
  EXPECT_EQ(resp.topics[0].error_code, error_code::none) << resp.topics[0].error_message.value_or("");
  EXPECT_EQ(resp.topics[0].num_partitions, 2);
  EXPECT_EQ(resp.topics[1].error_code, error_code::invalid_request);
  EXPECT_EQ(resp.topics[2].error_code, error_code::invalid_replica_assignment);
  ASSERT_EQ(resp.topics[3].error_code, error_code::none);
  // v5+ lists every config: the 37 public keys, plus internal.segment.bytes because it is set.
  ASSERT_TRUE(resp.topics[3].configs.has_value());
  EXPECT_EQ(resp.topics[3].configs->size(), 38u);
  ASSERT_TRUE(resp.topics[0].configs.has_value());
  EXPECT_EQ(resp.topics[0].configs->size(), 37u);
  auto s = node_.topics->find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->configs.at("internal.segment.bytes"), "16384");
}

TEST_F(AdminConfigsTest, CreatePartitionsAndDeleteTopicsTimeoutZero) {
  protocol::create_partitions_request cp;
  cp.topics.push_back({});
  cp.topics[0].name = "t";
  cp.topics[0].count = 3;
  cp.timeout_ms = 0;
  auto cpr = call<protocol::create_partitions_response>(37, 3, cp, handlers::create_partitions);
  ASSERT_EQ(cpr.results.size(), 1u);
  EXPECT_EQ(cpr.results[0].error_code, error_code::request_timed_out);
  EXPECT_EQ(node_.topics->find("t")->partitions.size(), 1u);

  protocol::delete_topics_request dt;
  dt.topics.push_back({});
  dt.topics[0].name = "t";
  dt.timeout_ms = 0;
  auto dtr = call<protocol::delete_topics_response>(20, 6, dt, handlers::delete_topics);
  ASSERT_EQ(dtr.responses.size(), 1u);
  EXPECT_EQ(dtr.responses[0].error_code, error_code::request_timed_out);
  EXPECT_EQ(dtr.responses[0].name, "t");
  EXPECT_EQ(dtr.responses[0].error_message, std::nullopt);
  EXPECT_NE(node_.topics->find("t"), nullptr);
}

// B18, B19.
TEST_F(AdminConfigsTest, AlterConfigsDuplicateKeysEmptyNameAndNullValue) {
  auto dup = alter("t", {{"retention.ms", "1000000"}, {"retention.ms", "2000000"}});
  ASSERT_EQ(dup.responses.size(), 1u);
  EXPECT_EQ(dup.responses[0].error_code, error_code::invalid_request);
  EXPECT_EQ(dup.responses[0].error_message, "Error due to duplicate config keys");
  EXPECT_TRUE(node_.topics->find("t")->configs.empty());

  auto empty = alter("", {{"retention.ms", "1000"}});
  EXPECT_EQ(empty.responses[0].error_code, error_code::invalid_request);
  EXPECT_EQ(empty.responses[0].error_message, "Default topic resources are not allowed.");
  auto bad_name = alter("bad name!", {{"retention.ms", "1000"}});
  EXPECT_EQ(bad_name.responses[0].error_code, error_code::invalid_topic_exception);
  auto null_value = alter("t", {{"retention.ms", std::nullopt}});
  EXPECT_EQ(null_value.responses[0].error_code, error_code::invalid_request);
  // The values are checked before the topic's existence, as Kafka's controller does.
  auto missing_bad = alter("missing", {{"retention.ms", "soon"}});
  EXPECT_EQ(missing_bad.responses[0].error_code, error_code::invalid_config);
  auto missing = alter("missing", {{"retention.ms", "1000"}});
  EXPECT_EQ(missing.responses[0].error_code, error_code::unknown_topic_or_partition);
  auto ok = alter("t", {{"retention.ms", "1000"}});
  EXPECT_EQ(ok.responses[0].error_code, error_code::none);
  EXPECT_EQ(node_.topics->find("t")->configs.at("retention.ms"), "1000");
}

TEST_F(AdminConfigsTest, AlterConfigsResourceTwice) {
  protocol::alter_configs_request req;
  for (int i = 0; i < 2; ++i) {
    protocol::alter_configs_request::alter_configs_resource r;
    r.resource_type = 2;
    r.resource_name = "t";
    req.resources.push_back(r);
  }
  auto resp = call<protocol::alter_configs_response>(33, 2, req, handlers::alter_configs);
  ASSERT_EQ(resp.responses.size(), 2u);
  for (const auto& r : resp.responses) EXPECT_EQ(r.error_code, error_code::invalid_request);
}

// B23, B24.
TEST_F(AdminConfigsTest, DescribeConfigsInvalidNameAndInvalidType) {
  protocol::describe_configs_request req;
  req.resources = {resource(2, "")};
  auto empty = describe(req);
  ASSERT_EQ(empty.results.size(), 1u);
  EXPECT_EQ(empty.results[0].error_code, error_code::invalid_topic_exception);

  req.resources = {resource(2, "t", std::vector<std::string>{"retention.ms"}), resource(99, "x")};
  auto mixed = describe(req);
  ASSERT_EQ(mixed.results.size(), 2u);
  for (const auto& r : mixed.results) {
    EXPECT_EQ(r.error_code, error_code::invalid_request) << r.resource_name;
    EXPECT_TRUE(r.configs.empty());
  }
  EXPECT_EQ(mixed.results[0].resource_name, "t");

  req.resources = {resource(2, "missing")};
  auto missing = describe(req);
  EXPECT_EQ(missing.results[0].error_code, error_code::unknown_topic_or_partition);
}

// B14, B20, B21.
TEST_F(AdminConfigsTest, DescribeConfigsTopicListSynonymsAndDocumentation) {
  ASSERT_EQ(alter("t", {{"retention.ms", "3600000"}}).responses[0].error_code, error_code::none);
  protocol::describe_configs_request req;
  req.resources = {resource(2, "t")};
  req.include_synonyms = true;
  auto resp = describe(req);
  ASSERT_EQ(resp.results.size(), 1u);
  ASSERT_EQ(resp.results[0].error_code, error_code::none);
  std::map<std::string, const protocol::describe_configs_response::describe_configs_resource_result*> by_name;
  for (const auto& c : resp.results[0].configs) by_name[c.name] = &c;
  EXPECT_EQ(by_name.size(), 37u);
  EXPECT_FALSE(by_name.contains("message.downconversion.enable"));
  EXPECT_FALSE(by_name.contains("internal.segment.bytes"));
  ASSERT_TRUE(by_name.contains("remote.copy.lag.bytes"));
  EXPECT_EQ(by_name["remote.copy.lag.bytes"]->value, "-1");
  EXPECT_EQ(by_name["remote.copy.lag.bytes"]->config_type, 5);
  ASSERT_TRUE(by_name.contains("errors.deadletterqueue.group.enable"));
  EXPECT_EQ(by_name["errors.deadletterqueue.group.enable"]->config_type, 1);
  EXPECT_TRUE(by_name["errors.deadletterqueue.group.enable"]->synonyms.empty());
  EXPECT_EQ(by_name["max.decompressed.message.bytes"]->value, "2147483639");
  // retention.ms: the topic's override only (log.retention.hours' default is not a synonym in Kafka's answer).
  const auto& retention = *by_name["retention.ms"];
  EXPECT_EQ(retention.config_source, 1);
  ASSERT_EQ(retention.synonyms.size(), 1u);
  EXPECT_EQ(retention.synonyms[0].name, "retention.ms");
  // segment.ms and flush.ms: no synonyms (log.roll.ms and log.flush.interval.ms are null), DEFAULT_CONFIG.
  EXPECT_TRUE(by_name["segment.ms"]->synonyms.empty());
  EXPECT_EQ(by_name["segment.ms"]->config_source, 5);
  EXPECT_TRUE(by_name["flush.ms"]->synonyms.empty());
  ASSERT_EQ(by_name["segment.bytes"]->synonyms.size(), 1u);
  EXPECT_EQ(by_name["segment.bytes"]->synonyms[0].name, "log.segment.bytes");
  EXPECT_EQ(by_name["segment.bytes"]->synonyms[0].source, 5);
  // documentation: null unless asked for.
  for (const auto& [name, c] : by_name) EXPECT_EQ(c->documentation, std::nullopt) << name;
}

// B22.
TEST_F(AdminConfigsTest, DescribeConfigsBrokerTypesAndSynonyms) {
  protocol::describe_configs_request req;
  req.resources = {resource(4, "1", std::vector<std::string>{"num.partitions", "message.max.bytes",
                                                              "auto.create.topics.enable", "log.retention.ms"})};
  req.include_synonyms = true;
  auto resp = describe(req);
  ASSERT_EQ(resp.results.size(), 1u);
  ASSERT_EQ(resp.results[0].error_code, error_code::none);
  std::map<std::string, const protocol::describe_configs_response::describe_configs_resource_result*> by_name;
  for (const auto& c : resp.results[0].configs) by_name[c.name] = &c;
  ASSERT_EQ(by_name.size(), 4u);
  const auto& parts = *by_name["num.partitions"];
  EXPECT_EQ(parts.config_type, 3);
  EXPECT_EQ(parts.config_source, 4);
  ASSERT_EQ(parts.synonyms.size(), 2u);
  EXPECT_EQ(parts.synonyms[0].source, 4);
  EXPECT_EQ(parts.synonyms[1].source, 5);
  EXPECT_EQ(parts.synonyms[1].value, "1");
  EXPECT_EQ(by_name["auto.create.topics.enable"]->config_type, 1);
  EXPECT_EQ(by_name["message.max.bytes"]->config_source, 5);
  EXPECT_EQ(by_name["log.retention.ms"]->value, std::nullopt);
  EXPECT_EQ(by_name["log.retention.ms"]->config_type, 5);
  EXPECT_TRUE(by_name["log.retention.ms"]->synonyms.empty());

  req.resources = {resource(4, "abc")};
  EXPECT_EQ(describe(req).results[0].error_code, error_code::invalid_request);
  req.resources = {resource(4, "7")};
  EXPECT_EQ(describe(req).results[0].error_code, error_code::invalid_request);
}

}  // namespace
}  // namespace sluice::broker
