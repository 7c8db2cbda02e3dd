// Admin APIs through librdkafka 2.0.2's C API against the real `sluice` binary: CreatePartitions (KIP-195)
// with Kafka's errors, validate_only, a manual assignment, persistence across a restart, and a producer and a
// subscribed consumer that pick up the new partitions after their metadata refresh. See README.md.
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <thread>

#include "admin_util.h"
#include "broker_process.h"
#include "rdkafka_util.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

constexpr int kBrokerId = 5;  // not the default: assignments must name this id

class AdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (broker_binary().empty()) GTEST_SKIP() << "no sluice binary: set SLUICE_BINARY";
    broker_ = std::make_unique<broker_process>(std::map<std::string, std::string>{
        {"broker.id", std::to_string(kBrokerId)},
        {"num.partitions", "1"},
        {"group.initial.rebalance.delay.ms", "0"}});
    broker_->start();
    admin_ = make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {}));
  }

  void TearDown() override {
    admin_.reset();
    if (!broker_) return;
    if (HasFailure()) {
      broker_->keep();
      const std::string log = broker_->log_text();
      std::cerr << "---- broker log (" << broker_->log_path() << ") ----\n"
                << (log.size() > 20000 ? log.substr(log.size() - 20000) : log) << "\n---- end ----\n";
    }
    if (broker_->running()) {
      int st = broker_->stop();
      EXPECT_TRUE(broker_process::exited_cleanly(st)) << broker_process::describe_status(st);
    }
  }

  void create_topic(const std::string& name, int partitions) {
    auto res = create_topics(admin_.get(), {{name, partitions}});
    ASSERT_EQ(res.size(), 1u);
    ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(res[0].err) << " " << res[0].msg;
  }

  // Partition count of `topic` in a fresh Metadata answer; every partition led by kBrokerId.
  int partition_count(const std::string& topic) {
    auto md = fetch_metadata(admin_.get(), topic);
    const auto* t = find_topic(md.get(), topic);
    if (!t || t->err) return -1;
    for (int i = 0; i < t->partition_cnt; ++i) {
      EXPECT_EQ(t->partitions[i].id, i);
      EXPECT_EQ(t->partitions[i].leader, kBrokerId);
      EXPECT_EQ(t->partitions[i].replica_cnt, 1);
    }
    return t->partition_cnt;
  }

  // Produces `n` records to each of `partitions` (explicit partitions) and waits for their reports.
  void produce_to(const std::string& topic, const std::vector<int32_t>& partitions, size_t n) {
    producer p(broker_->bootstrap(), {{"acks", "all"}, {"message.timeout.ms", "20000"}});
    size_t i = 0;
    for (int32_t part : partitions)
      for (size_t k = 0; k < n; ++k, ++i)
        ASSERT_EQ(p.produce(topic, part, i, "k" + std::to_string(i), "p" + std::to_string(part), {}),
                  RD_KAFKA_RESP_ERR_NO_ERROR);
    ASSERT_TRUE(p.flush(30s));
    for (const auto& r : p.reports()) ASSERT_EQ(r.err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(r.err);
  }

  std::unique_ptr<broker_process> broker_;
  rk_ptr admin_;
};

TEST_F(AdminTest, CreatePartitionsGrowsTopicAndSurvivesRestart) {
  const std::string topic = "grow";
  create_topic(topic, 2);
  produce_to(topic, {0, 1}, 10);

  auto res = create_partitions(admin_.get(), {{topic, 5, {}}});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].name, topic);
  ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << res[0].msg;
  EXPECT_EQ(partition_count(topic), 5);
  produce_to(topic, {2, 3, 4}, 7);

  broker_->restart();
  admin_ = make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {}));
  EXPECT_EQ(partition_count(topic), 5);
  auto got = consume_all(broker_->bootstrap(), topic, 5, 10 * 2 + 7 * 3, 30s);
  ASSERT_TRUE(got.errors.empty()) << got.errors.front();
  for (int32_t p = 0; p < 5; ++p) {
    const auto& recs = got.by_partition[p];
    ASSERT_EQ(recs.size(), p < 2 ? 10u : 7u) << "partition " << p;
    for (size_t i = 0; i < recs.size(); ++i) {
      EXPECT_EQ(recs[i].offset, static_cast<int64_t>(i));
      EXPECT_EQ(recs[i].value, "p" + std::to_string(p));
    }
  }
}

TEST_F(AdminTest, CreatePartitionsAnswersKafkasErrors) {
  for (const auto& [name, parts] : std::vector<std::pair<std::string, int>>{
           {"same", 2}, {"fewer", 3}, {"short-assign", 1}, {"bad-broker", 1}, {"twice-broker", 1},
           {"wide-assign", 1}, {"manual", 1}})
    create_topic(name, parts);

  auto res = create_partitions(
      admin_.get(), {{"no-such-topic", 3, {}},
                     {"same", 2, {}},
                     {"fewer", 2, {}},
                     {"short-assign", 3, {{kBrokerId}}},  // 2 new partitions, 1 assignment
                     {"bad-broker", 2, {{99}}},
                     {"twice-broker", 2, {{kBrokerId, kBrokerId}}},
                     {"wide-assign", 2, {{kBrokerId, 99}}},
                     {"manual", 3, {{kBrokerId}, {kBrokerId}}}});
  std::map<std::string, topic_result> by_name;
  for (const auto& r : res) by_name[r.name] = r;
  ASSERT_EQ(by_name.size(), 8u);
  auto expect = [&](const std::string& name, rd_kafka_resp_err_t err, const std::string& msg) {
    const auto& r = by_name[name];
    EXPECT_EQ(err_name(r.err), err_name(err)) << name << ": " << r.msg;
    if (!msg.empty()) {
      EXPECT_EQ(r.msg, msg) << name;
    }
  };
  expect("no-such-topic", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "The topic 'no-such-topic' does not exist.");
  expect("same", RD_KAFKA_RESP_ERR_INVALID_PARTITIONS, "Topic already has 2 partition(s).");
  expect("fewer", RD_KAFKA_RESP_ERR_INVALID_PARTITIONS,
         "The topic fewer currently has 3 partition(s); 2 would not be an increase.");
  expect("short-assign", RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.");
  expect("bad-broker", RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 99, but no such broker is registered.");
  expect("twice-broker", RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes the broker " + std::to_string(kBrokerId) + " more than once.");
  expect("wide-assign", RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT, "");
  expect("manual", RD_KAFKA_RESP_ERR_NO_ERROR, "");

  EXPECT_EQ(partition_count("same"), 2);
  EXPECT_EQ(partition_count("fewer"), 3);
  EXPECT_EQ(partition_count("short-assign"), 1);
  EXPECT_EQ(partition_count("bad-broker"), 1);
  EXPECT_EQ(partition_count("manual"), 3);

  // validate_only: answered as a real change would be, nothing changes.
  res = create_partitions(admin_.get(), {{"same", 4, {}}, {"fewer", 1, {}}}, /*validate_only=*/true);
  ASSERT_EQ(res.size(), 2u);
  for (const auto& r : res) {
    if (r.name == "same") EXPECT_EQ(r.err, RD_KAFKA_RESP_ERR_NO_ERROR) << r.msg;
    else EXPECT_EQ(r.err, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS) << r.msg;
  }
  EXPECT_EQ(partition_count("same"), 2);

  // Operation timeout 0 (librdkafka then sends TimeoutMs 0): Kafka 4.x's controller runs the request with the
  // deadline now + 0, which has passed, so it answers REQUEST_TIMED_OUT and changes nothing (compat/diff B16).
  // librdkafka hides REQUEST_TIMED_OUT from a non-blocking request (it expects the change to be under way, as
  // ZooKeeper-era Kafka did), so the application sees success, and the topic keeps its 2 partitions.
  res = create_partitions(admin_.get(), {{"same", 3, {}}}, false, 0);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << res[0].msg;
  EXPECT_EQ(partition_count("same"), 2);
}

// A producer and a subscribed consumer that exist before the topic grows see the new partitions after
// their periodic metadata refresh (topic.metadata.refresh.interval.ms), as with Kafka.
TEST_F(AdminTest, RunningClientsSeeNewPartitionsAfterMetadataRefresh) {
  const std::string topic = "grow-live";
  create_topic(topic, 1);

  producer prod(broker_->bootstrap(), {{"acks", "all"}, {"topic.metadata.refresh.interval.ms", "500"}});
  size_t index = 0;
  ASSERT_EQ(prod.produce(topic, 0, index++, "before", "p0", {}), RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_TRUE(prod.flush(20s));

  rk_ptr consumer = make_client(RD_KAFKA_CONSUMER, make_conf(broker_->bootstrap(),
                                                             {{"group.id", "grow-live-group"},
                                                              {"auto.offset.reset", "earliest"},
                                                              {"topic.metadata.refresh.interval.ms", "500"},
                                                              {"fetch.wait.max.ms", "100"},
                                                              {"session.timeout.ms", "6000"},
                                                              {"heartbeat.interval.ms", "300"}}));
  rd_kafka_poll_set_consumer(consumer.get());
  rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
  ASSERT_EQ(rd_kafka_subscribe(consumer.get(), sub), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(sub);

  std::map<int32_t, std::vector<std::string>> seen;  // partition -> values
  auto poll_for = [&](std::chrono::milliseconds d, auto done) {
    auto deadline = clock_type::now() + d;
    while (!done() && clock_type::now() < deadline) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 100);
      if (!m) continue;
      if (!m->err) seen[m->partition].emplace_back(static_cast<const char*>(m->payload), m->len);
      rd_kafka_message_destroy(m);
    }
    return done();
  };
  ASSERT_TRUE(poll_for(30s, [&] { return seen[0].size() == 1; })) << "the first record never arrived";

  auto res = create_partitions(admin_.get(), {{topic, 3, {}}});
  ASSERT_EQ(res.size(), 1u);
  ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << res[0].msg;

  // librdkafka answers __UNKNOWN_PARTITION at once for a partition its metadata does not have yet.
  auto deadline = clock_type::now() + 15s;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
  while (clock_type::now() < deadline) {
    err = prod.produce(topic, 2, index, "after", "p2", {});
    if (err != RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) break;
    prod.poll(100);
  }
  ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << "the producer never saw partition 2: " << err_name(err);
  ++index;
  ASSERT_TRUE(prod.flush(20s));
  EXPECT_EQ(prod.reports().back().err, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(prod.reports().back().partition, 2);

  // The consumer's refresh finds 3 partitions, the group rebalances, partition 2 is read from the start.
  EXPECT_TRUE(poll_for(45s, [&] { return seen[2].size() == 1; })) << "the consumer never read partition 2";
  EXPECT_EQ(seen[2], std::vector<std::string>{"p2"});
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  ASSERT_EQ(rd_kafka_assignment(consumer.get(), &assigned), RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(assigned->cnt, 3);
  rd_kafka_topic_partition_list_destroy(assigned);
  rd_kafka_consumer_close(consumer.get());
}

}  // namespace
}  // namespace sluice::itest
