// Consumer group integration tests: the real `sluice` binary driven by librdkafka's high-level consumer
// (rd_kafka_subscribe), see README.md. Every consumer commits each record synchronously after taking it,
// so after any rebalance a record may be seen twice only if its own commit failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "broker_process.h"
#include "rdkafka_util.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

constexpr int kPartitions = 6;
const std::string kGroup = "itest-group";

// One high-level consumer of `topic` in `group`. Not thread-safe: the test thread polls every consumer
// in turn (librdkafka runs the group protocol on its own threads; poll serves rebalances and records).
class group_consumer {
 public:
  struct delivery {
    int32_t partition;
    int64_t offset;
    std::string value;
  };

  group_consumer(const std::string& bootstrap, const std::string& group, const std::string& topic,
                 std::string name, std::vector<std::pair<std::string, std::string>> extra = {})
      : name_(std::move(name)) {
    std::vector<std::pair<std::string, std::string>> kv{
        {"group.id", group},
        {"client.id", name_},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"session.timeout.ms", "6000"},
        {"heartbeat.interval.ms", "300"},
        {"fetch.wait.max.ms", "100"},
        {"topic.metadata.refresh.interval.ms", "2000"},
    };
    kv.insert(kv.end(), extra.begin(), extra.end());
    rk_ = make_client(RD_KAFKA_CONSUMER, make_conf(bootstrap, kv));
    rd_kafka_poll_set_consumer(rk_.get());
    rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
    auto err = rd_kafka_subscribe(rk_.get(), sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) throw std::runtime_error("subscribe: " + err_name(err));
  }
  ~group_consumer() {
    if (rk_ && !closed_) rd_kafka_consumer_close(rk_.get());
  }

  const std::string& name() const { return name_; }
  rd_kafka_t* rk() const { return rk_.get(); }

  // Polls once; a record is kept and committed (synchronously) at once. Returns true if a record came.
  bool poll(int timeout_ms) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), timeout_ms);
    if (!m) return false;
    bool got = false;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      got = true;
      delivery d{m->partition, m->offset,
                 m->payload ? std::string(static_cast<const char*>(m->payload), m->len) : std::string()};
      // A record below what this consumer already took from the same partition: the client re-fetched
      // on its own (librdkafka < 2.4 with cooperative-sticky resumes kept partitions from a stale
      // position, confluentinc/librdkafka#4686). No broker answer is involved; kept apart.
      auto last = max_offset_.find(d.partition);
      // Like an application that drops what it already processed, the test neither counts nor commits
      // them (committing one would move the committed offset backwards).
      if (last != max_offset_.end() && d.offset <= last->second) {
        self_refetched_.push_back(d);
      } else {
        max_offset_[d.partition] = d.offset;
        deliveries_.push_back(d);
        auto err = rd_kafka_commit_message(rk_.get(), m, 0);
        if (err) failed_commits_.insert({m->partition, m->offset});
      }
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      errors_.push_back(err_name(m->err) + ": " + rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
    return got;
  }

  std::set<int32_t> assignment() const {
    rd_kafka_topic_partition_list_t* l = nullptr;
    std::set<int32_t> out;
    if (rd_kafka_assignment(rk_.get(), &l) == RD_KAFKA_RESP_ERR_NO_ERROR && l) {
      for (int i = 0; i < l->cnt; ++i) out.insert(l->elems[i].partition);
      rd_kafka_topic_partition_list_destroy(l);
    }
    return out;
  }

  std::string assignment_text() const {
    std::string s;
    for (auto p : assignment()) s += std::to_string(p) + " ";
    return s;
  }

  // rd_kafka_consumer_close: revokes, commits nothing (auto commit off), sends LeaveGroup.
  rd_kafka_resp_err_t close() {
    closed_ = true;
    return rd_kafka_consumer_close(rk_.get());
  }

  const std::vector<delivery>& deliveries() const { return deliveries_; }
  const std::set<std::pair<int32_t, int64_t>>& failed_commits() const { return failed_commits_; }
  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<delivery>& self_refetched() const { return self_refetched_; }

 private:
  std::string name_;
  rk_ptr rk_;
  bool closed_ = false;
  std::vector<delivery> deliveries_;
  std::set<std::pair<int32_t, int64_t>> failed_commits_;
  std::vector<std::string> errors_;
  std::map<int32_t, int64_t> max_offset_;
  std::vector<delivery> self_refetched_;
};

std::string to_string(const std::set<int32_t>& s) {
  std::ostringstream o;
  o << "{";
  for (auto p : s) o << (p == *s.begin() ? "" : ",") << p;
  o << "}";
  return o.str();
}

class GroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (broker_binary().empty()) GTEST_SKIP() << "no sluice binary: set SLUICE_BINARY";
    broker_ = std::make_unique<broker_process>(std::map<std::string, std::string>{
        {"group.initial.rebalance.delay.ms", "0"},
        {"offsets.topic.num.partitions", "10"},
        {"auto.create.topics.enable", "false"}});
    broker_->start();
  }

  void TearDown() override {
    consumers_.clear();
    if (!broker_) return;
    if (HasFailure()) {
      broker_->keep();
      const std::string log = broker_->log_text();
      std::cerr << "---- broker log (" << broker_->log_path() << ", data kept in " << broker_->dir() << ") ----\n"
                << (log.size() > 20000 ? "[...]\n" + log.substr(log.size() - 20000) : log)
                << "\n---- end of broker log ----\n";
    }
    if (broker_->running()) {
      int st = broker_->stop();
      EXPECT_TRUE(broker_process::exited_cleanly(st)) << broker_process::describe_status(st);
    }
    broker_.reset();
  }

  rk_ptr admin() { return make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {})); }

  void create_topic(const std::string& name, int partitions) {
    auto rk = admin();
    auto res = create_topics(rk.get(), {{name, partitions}});
    ASSERT_EQ(res.size(), 1u);
    ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(res[0].err) << " " << res[0].msg;
  }

  // Produces `per_partition` records to every partition, value "p<p>-<i>" with i counting on from
  // produced_[p]; waits for every delivery report.
  void produce(const std::string& topic, int per_partition) {
    producer p(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "5"}});
    size_t idx = 0;
    for (int part = 0; part < kPartitions; ++part) {
      for (int i = 0; i < per_partition; ++i) {
        std::string v = "p" + std::to_string(part) + "-" + std::to_string(produced_[part]++);
        ASSERT_EQ(p.produce(topic, part, idx++, std::nullopt, v, {}), RD_KAFKA_RESP_ERR_NO_ERROR);
      }
    }
    ASSERT_TRUE(p.flush(30s));
    for (const auto& r : p.reports()) ASSERT_EQ(r.err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(r.err);
  }

  group_consumer& add_consumer(const std::string& topic, const std::string& name,
                               std::vector<std::pair<std::string, std::string>> extra = {}) {
    consumers_.push_back(std::make_unique<group_consumer>(broker_->bootstrap(), kGroup, topic, name, extra));
    return *consumers_.back();
  }

  std::vector<group_consumer*> live() {
    std::vector<group_consumer*> out;
    for (auto& c : consumers_)
      if (!closed_.count(c.get())) out.push_back(c.get());
    return out;
  }

  // Polls every live consumer until each owns exactly `each` partitions and together all kPartitions.
  bool wait_balanced(size_t each, std::chrono::milliseconds timeout) {
    auto deadline = clock_type::now() + timeout;
    while (clock_type::now() < deadline) {
      std::set<int32_t> all;
      bool ok = true;
      for (auto* c : live()) {
        c->poll(50);
        auto a = c->assignment();
        if (a.size() != each) ok = false;
        all.insert(a.begin(), a.end());
      }
      if (ok && all.size() == static_cast<size_t>(kPartitions)) return true;
    }
    for (auto* c : live()) std::cerr << c->name() << " owns " << to_string(c->assignment()) << "\n";
    return false;
  }

  size_t delivered() const {
    size_t n = 0;
    for (auto& c : consumers_) n += c->deliveries().size();
    return n;
  }

  // Polls the live consumers until every produced record was delivered at least once.
  bool consume_until_all(std::chrono::milliseconds timeout) {
    auto deadline = clock_type::now() + timeout;
    while (clock_type::now() < deadline) {
      for (auto* c : live())
        for (int i = 0; i < 200 && c->poll(i == 0 ? 20 : 0); ++i) {
        }
      if (distinct_delivered() == total_produced()) return true;
    }
    return false;
  }

  size_t total_produced() const {
    size_t n = 0;
    for (auto& [p, c] : produced_) n += c;
    return n;
  }

  size_t distinct_delivered() const {
    std::set<std::pair<int32_t, int64_t>> s;
    for (auto& c : consumers_)
      for (auto& d : c->deliveries()) s.insert({d.partition, d.offset});
    return s.size();
  }

  // Every produced record delivered, with the value produced at that offset; a record delivered more
  // than once only if one of its commits failed (it was consumed "beyond the last commit").
  void expect_exactly_once_beyond_commits() {
    std::map<std::pair<int32_t, int64_t>, int> seen;
    std::map<std::pair<int32_t, int64_t>, std::string> who;
    std::set<std::pair<int32_t, int64_t>> failed;
    for (auto& c : consumers_) {
      EXPECT_TRUE(c->errors().empty()) << c->name() << ": " << c->errors().front();
      failed.insert(c->failed_commits().begin(), c->failed_commits().end());
      for (auto& d : c->deliveries()) {
        ++seen[{d.partition, d.offset}];
        who[{d.partition, d.offset}] += " " + c->name();
        EXPECT_EQ(d.value, "p" + std::to_string(d.partition) + "-" + std::to_string(d.offset))
            << c->name() << " p" << d.partition << "@" << d.offset;
      }
    }
    size_t dups = 0;
    for (auto& [p, n] : produced_)
      for (int64_t o = 0; o < n; ++o) {
        auto it = seen.find({p, o});
        EXPECT_TRUE(it != seen.end()) << "lost p" << p << "@" << o;
        if (it != seen.end() && it->second > 1) {
          ++dups;
          EXPECT_TRUE(failed.count({p, o})) << "p" << p << "@" << o << " delivered " << it->second
                                            << " times though its commit succeeded, by" << who[{p, o}];
        }
      }
    EXPECT_EQ(seen.size(), total_produced());
    std::cerr << "delivered " << delivered() << " (distinct " << seen.size() << ", duplicates " << dups
              << ", failed commits " << failed.size() << ")\n";
  }

  // The group's committed offsets of `topic` as a group-less reader sees them (OffsetFetch).
  std::map<int32_t, int64_t> committed(const std::string& topic) {
    auto rk = make_client(RD_KAFKA_CONSUMER, make_conf(broker_->bootstrap(), {{"group.id", kGroup}}));
    rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(kPartitions);
    for (int p = 0; p < kPartitions; ++p) rd_kafka_topic_partition_list_add(l, topic.c_str(), p);
    std::map<int32_t, int64_t> out;
    auto err = rd_kafka_committed(rk.get(), l, 15000);
    EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err);
    for (int i = 0; i < l->cnt; ++i) {
      EXPECT_EQ(l->elems[i].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(l->elems[i].err);
      out[l->elems[i].partition] = l->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk.get());
    return out;
  }

  std::map<int32_t, int64_t> produced_as_map() const {
    std::map<int32_t, int64_t> m;
    for (int p = 0; p < kPartitions; ++p) {
      auto it = produced_.find(p);
      m[p] = it == produced_.end() ? 0 : it->second;
    }
    return m;
  }

  // ListGroups + DescribeGroups of kGroup: state and member count ("" when absent).
  std::pair<std::string, int> describe_group() {
    auto rk = admin();
    const rd_kafka_group_list* gl = nullptr;
    auto err = rd_kafka_list_groups(rk.get(), kGroup.c_str(), &gl, 10000);
    if (err || !gl) return {"error " + err_name(err), -1};
    std::pair<std::string, int> out{"", 0};
    for (int i = 0; i < gl->group_cnt; ++i)
      if (kGroup == gl->groups[i].group) out = {gl->groups[i].state, gl->groups[i].member_cnt};
    rd_kafka_group_list_destroy(gl);
    return out;
  }

  // Polls DescribeGroups until kGroup is in `state` (bounded); returns the last state seen.
  std::string wait_state(const std::string& state, std::chrono::milliseconds timeout) {
    auto deadline = clock_type::now() + timeout;
    std::string last;
    while (clock_type::now() < deadline) {
      last = describe_group().first;
      if (last == state) break;
      std::this_thread::sleep_for(200ms);
    }
    return last;
  }

  size_t self_refetched() const {
    size_t n = 0;
    for (auto& c : consumers_) n += c->self_refetched().size();
    return n;
  }

  void close_consumer(group_consumer& c) {
    EXPECT_EQ(c.close(), RD_KAFKA_RESP_ERR_NO_ERROR) << c.name();
    closed_.insert(&c);
  }

  std::unique_ptr<broker_process> broker_;
  std::vector<std::unique_ptr<group_consumer>> consumers_;
  std::set<group_consumer*> closed_;
  std::map<int32_t, int64_t> produced_;
};

// Acceptance 1: three consumers share six partitions, one leaves, two take over; the broker restarts and
// a new consumer resumes at the committed offsets. Run with the eager (range) and the cooperative-sticky
// assignor.
class GroupRebalanceTest : public GroupTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(GroupRebalanceTest, ThreeConsumersShareLeaveAndResumeAfterRestart) {
  const std::string topic = "grp-topic";
  create_topic(topic, kPartitions);
  ASSERT_FALSE(HasFailure());
  const bool cooperative = std::string(GetParam()) == "cooperative-sticky";
  std::vector<std::pair<std::string, std::string>> conf{{"partition.assignment.strategy", GetParam()}};
  if (const char* d = std::getenv("ITEST_RDKAFKA_DEBUG")) { conf.push_back({"debug", d}); conf.push_back({"log_level", "7"}); }
  add_consumer(topic, "c1", conf);
  add_consumer(topic, "c2", conf);
  add_consumer(topic, "c3", conf);
  ASSERT_TRUE(wait_balanced(2, 40s)) << "three consumers did not get 2 partitions each";
  auto [state, members] = describe_group();
  EXPECT_EQ(state, "Stable");
  EXPECT_EQ(members, 3);

  produce(topic, 50);
  ASSERT_TRUE(consume_until_all(30s)) << distinct_delivered() << " of " << total_produced();
  // Each consumer read exactly its own partitions.
  for (auto* c : live()) {
    std::set<int32_t> read;
    for (auto& d : c->deliveries()) read.insert(d.partition);
    EXPECT_EQ(read, c->assignment()) << c->name();
  }
  std::set<int32_t> left_partitions = consumers_[2]->assignment();
  close_consumer(*consumers_[2]);

  produce(topic, 50);
  ASSERT_TRUE(wait_balanced(3, 40s)) << "two consumers did not take over all six partitions";
  for (int32_t p : left_partitions) {
    bool taken = consumers_[0]->assignment().count(p) || consumers_[1]->assignment().count(p);
    EXPECT_TRUE(taken) << "partition " << p << " of the leaver not taken over";
  }
  ASSERT_TRUE(consume_until_all(30s)) << distinct_delivered() << " of " << total_produced();
  expect_exactly_once_beyond_commits();

  for (auto* c : live()) close_consumer(*c);
  EXPECT_EQ(committed(topic), produced_as_map());
  // librdkafka 2.0.2 sends LeaveGroup on close with the eager protocol only; with cooperative-sticky the
  // members leave by session timeout (6 s).
  EXPECT_EQ(wait_state("Empty", cooperative ? 12s : 3s), "Empty");
  std::cerr << "records re-fetched by the same consumer (client side): " << self_refetched() << "\n";
  if (!cooperative) {
    EXPECT_EQ(self_refetched(), 0u);
  }

  int st = broker_->stop();
  EXPECT_TRUE(broker_process::exited_cleanly(st)) << broker_process::describe_status(st);
  broker_->start();
  EXPECT_EQ(committed(topic), produced_as_map()) << "committed offsets after restart";

  produce(topic, 10);
  auto& resumed = add_consumer(topic, "c4", conf);
  ASSERT_TRUE(wait_balanced(kPartitions, 40s));
  ASSERT_TRUE(consume_until_all(30s)) << distinct_delivered() << " of " << total_produced();
  // Resumed at the committed offset: only the 10 new records of each partition.
  EXPECT_EQ(resumed.deliveries().size(), static_cast<size_t>(10 * kPartitions));
  for (auto& d : resumed.deliveries()) EXPECT_GE(d.offset, 100) << "p" << d.partition;
  expect_exactly_once_beyond_commits();
  close_consumer(resumed);
  EXPECT_EQ(committed(topic), produced_as_map());
  if (!cooperative) {
    EXPECT_EQ(self_refetched(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Assignors, GroupRebalanceTest, ::testing::Values("range,roundrobin", "cooperative-sticky"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Eager" : "CooperativeSticky");
                         });

// Acceptance 4: group metadata and committed offsets survive kill -9 of the broker; the running consumers
// carry on without reading anything twice beyond their last commit.
TEST_F(GroupTest, GroupAndOffsetsSurviveBrokerKill9) {
  const std::string topic = "grp-kill9";
  create_topic(topic, kPartitions);
  ASSERT_FALSE(HasFailure());
  add_consumer(topic, "k1");
  add_consumer(topic, "k2");
  ASSERT_TRUE(wait_balanced(3, 40s));
  produce(topic, 40);
  ASSERT_TRUE(consume_until_all(30s)) << distinct_delivered() << " of " << total_produced();
  auto before = committed(topic);
  EXPECT_EQ(before, produced_as_map());

  broker_->kill9();
  broker_->start();
  // Replayed from __consumer_offsets: the group (members from the last SyncGroup) and its offsets.
  EXPECT_EQ(committed(topic), before) << "committed offsets after kill -9";
  auto [state, members] = describe_group();
  EXPECT_TRUE(state == "Stable" || state == "PreparingRebalance" || state == "CompletingRebalance") << state;

  produce(topic, 40);
  ASSERT_TRUE(consume_until_all(60s)) << distinct_delivered() << " of " << total_produced();
  ASSERT_TRUE(wait_balanced(3, 40s));
  expect_exactly_once_beyond_commits();
  EXPECT_EQ(self_refetched(), 0u);
  for (auto* c : live()) close_consumer(*c);
  EXPECT_EQ(committed(topic), produced_as_map());
  EXPECT_EQ(wait_state("Empty", 3s), "Empty");

  // And an Empty group's offsets survive a second kill -9 too.
  broker_->kill9();
  broker_->start();
  EXPECT_EQ(committed(topic), produced_as_map());
  EXPECT_EQ(describe_group().first, "Empty");
}

}  // namespace
}  // namespace sluice::itest
