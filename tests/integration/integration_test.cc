// Integration tests: the real `sluice` binary driven by librdkafka's C API (see README.md).
// No consumer groups and no idempotence: consumers assign partitions explicitly.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include "admin_util.h"
#include "broker_process.h"
#include "rdkafka_util.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

constexpr int kPartitions = 3;
constexpr int kBrokerId = 3;         // not the default, so Metadata must report what was configured
constexpr int kDefaultPartitions = 2;  // num.partitions: not the default 1

// The record we produce as number i: key "k<i>", value "v<i>", headers that vary with i
// (a null header value every 10th, a repeated header name every 7th).
std::vector<header> headers_for(size_t i) {
  std::vector<header> h{{"h-index", std::to_string(i)}, {"h-fixed", std::string("fixed")}};
  if (i % 10 == 0) h.push_back({"h-null", std::nullopt});
  if (i % 7 == 0) {
    h.push_back({"dup", std::string("first")});
    h.push_back({"dup", std::string("second")});
  }
  return h;
}
std::string key_for(size_t i) { return "k" + std::to_string(i); }
std::string value_for(size_t i) { return "v" + std::to_string(i); }

std::string describe(const record& r) {
  std::string s = "p" + std::to_string(r.partition) + "@" + std::to_string(r.offset) + " key=" +
                  (r.key ? *r.key : "<null>") + " value=" + (r.value ? r.value->substr(0, 40) : "<null>");
  return s;
}

class BrokerTest : public ::testing::Test {
 protected:
  // Subclasses may add overrides before SetUp.
  virtual std::map<std::string, std::string> overrides() {
    return {{"broker.id", std::to_string(kBrokerId)},
            {"num.partitions", std::to_string(kDefaultPartitions)},
            {"auto.create.topics.enable", "true"}};
  }

  void SetUp() override {
    if (broker_binary().empty()) GTEST_SKIP() << "no sluice binary: set SLUICE_BINARY";
    broker_ = std::make_unique<broker_process>(overrides());
    broker_->start();
  }

  void TearDown() override {
    if (!broker_) return;
    if (HasFailure()) {
      broker_->keep();
      std::cerr << "---- broker log (" << broker_->log_path() << ", data kept in " << broker_->dir()
                << ") ----\n"
                << tail(broker_->log_text(), 20000) << "\n---- end of broker log ----\n";
    }
    if (broker_->running()) {
      int st = broker_->stop();
      EXPECT_TRUE(broker_process::exited_cleanly(st))
          << "broker did not exit 0 on SIGTERM: " << broker_process::describe_status(st);
    }
    broker_.reset();
  }

  static std::string tail(const std::string& s, size_t n) {
    return s.size() <= n ? s : "[...]\n" + s.substr(s.size() - n);
  }

  rk_ptr admin() { return make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {})); }

  void create_topic(const std::string& name, int partitions) {
    auto rk = admin();
    auto res = create_topics(rk.get(), {{name, partitions}});
    ASSERT_EQ(res.size(), 1u);
    ASSERT_EQ(res[0].name, name);
    ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(res[0].err) << " " << res[0].msg;
  }
  void create_topic(const std::string& name, int partitions,
                    const std::vector<std::pair<std::string, std::string>>& configs) {
    auto rk = admin();
    std::string msg;
    auto err = create_topic_with_configs(rk.get(), name, partitions, configs, &msg);
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err) << " " << msg;
  }

  // Produces records 0..n-1 (keyed, default partitioner) with acks=all and waits for every delivery
  // report. Returns the reports, all successful.
  std::vector<record> produce_keyed(const std::string& topic, size_t n, size_t first = 0) {
    // batch.num.messages 1000: on a quiet machine all 10,000 records are enqueued within one linger.ms, and
    // with librdkafka's defaults (10,000 messages, 1 MB) each partition then got one batch, so a 65,536-byte
    // segment could not roll before it (SmallSegmentTest saw one 163 KB batch and one segment).
    producer p(broker_->bootstrap(),
               {{"acks", "all"}, {"linger.ms", "5"}, {"message.timeout.ms", "30000"}, {"batch.num.messages", "1000"}});
    for (size_t i = first; i < first + n; ++i) {
      auto err = p.produce(topic, RD_KAFKA_PARTITION_UA, i - first, key_for(i), value_for(i), headers_for(i));
      EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << "enqueue " << i << ": " << err_name(err);
      if (err) break;
      if (i % 1000 == 0) p.poll(0);
    }
    EXPECT_TRUE(p.flush(60s)) << p.outstanding() << " records without delivery report";
    std::vector<record> out = p.reports();
    size_t failed = 0;
    for (size_t j = 0; j < out.size(); ++j) {
      out[j].key = key_for(first + j);
      out[j].value = value_for(first + j);
      out[j].headers = headers_for(first + j);
      if (out[j].err && failed++ < 5)
        ADD_FAILURE() << "delivery of record " << first + j << " failed: " << err_name(out[j].err);
    }
    EXPECT_EQ(failed, 0u);
    EXPECT_EQ(p.acked(), n);
    return out;
  }

  // Asserts that `got` (consumed by assignment) holds exactly the records of `reports`, each at the
  // partition and offset its delivery report gave, and nothing else.
  void expect_same(const std::vector<record>& reports, const consumed& got, int partitions) {
    EXPECT_TRUE(got.errors.empty()) << "consumer errors, first: " << got.errors.front();
    std::map<int32_t, std::vector<const record*>> want;
    for (const auto& r : reports) want[r.partition].push_back(&r);
    for (auto& [p, v] : want)
      std::sort(v.begin(), v.end(), [](const record* a, const record* b) { return a->offset < b->offset; });
    EXPECT_EQ(got.total(), reports.size());
    for (int p = 0; p < partitions; ++p) {
      const auto& w = want[p];
      auto it = got.by_partition.find(p);
      const std::vector<record> empty;
      const auto& g = it == got.by_partition.end() ? empty : it->second;
      ASSERT_EQ(g.size(), w.size()) << "partition " << p;
      size_t mismatches = 0;
      for (size_t i = 0; i < g.size() && mismatches < 5; ++i) {
        const record& e = *w[i];
        const record& a = g[i];
        bool same = a.partition == p && a.offset == e.offset && a.key == e.key && a.value == e.value &&
                    a.headers == e.headers;
        if (!same) {
          ++mismatches;
          ADD_FAILURE() << "partition " << p << " position " << i << ": expected " << describe(e) << " ("
                        << e.headers.size() << " headers), got " << describe(a) << " (" << a.headers.size()
                        << " headers)";
        }
      }
      EXPECT_EQ(mismatches, 0u) << "partition " << p;
    }
  }

  // Per partition, the delivery-report offsets of a fresh topic are exactly 0..n-1, and increase in
  // produce order (one producer, in order per partition).
  void expect_dense_offsets(const std::vector<record>& reports, int partitions) {
    std::map<int32_t, std::vector<int64_t>> offs;
    for (const auto& r : reports) {
      ASSERT_GE(r.partition, 0);
      ASSERT_LT(r.partition, partitions);
      offs[r.partition].push_back(r.offset);
    }
    for (auto& [p, v] : offs) {
      for (size_t i = 0; i < v.size(); ++i)
        ASSERT_EQ(v[i], static_cast<int64_t>(i)) << "partition " << p << ": produce order vs offsets";
    }
    // A keyed 10k load spreads over all partitions.
    if (reports.size() >= 1000) {
      EXPECT_EQ(static_cast<int>(offs.size()), partitions);
    }
  }

  void expect_watermarks(const std::string& topic, const std::map<int32_t, int64_t>& high) {
    auto rk = admin();
    for (const auto& [p, h] : high) {
      int64_t lo = -99, hi = -99;
      auto err = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &lo, &hi, 10000);
      ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err);
      EXPECT_EQ(lo, 0) << "partition " << p;
      EXPECT_EQ(hi, h) << "partition " << p;
    }
  }

  static std::map<int32_t, int64_t> counts(const std::vector<record>& reports, int partitions) {
    std::map<int32_t, int64_t> c;
    for (int p = 0; p < partitions; ++p) c[p] = 0;
    for (const auto& r : reports) c[r.partition]++;
    return c;
  }

  std::unique_ptr<broker_process> broker_;
};

// --- produce / consume ----------------------------------------------------------------------------

TEST_F(BrokerTest, Produce10kKeyedRecordsAndConsumeByAssignment) {
  const std::string topic = "roundtrip";
  create_topic(topic, kPartitions);
  auto reports = produce_keyed(topic, 10000);
  ASSERT_FALSE(HasFailure());
  expect_dense_offsets(reports, kPartitions);
  // Same key, same partition (librdkafka's default partitioner is deterministic per key).
  auto got = consume_all(broker_->bootstrap(), topic, kPartitions, reports.size());
  expect_same(reports, got, kPartitions);
  expect_watermarks(topic, counts(reports, kPartitions));
}

TEST_F(BrokerTest, FetchFromMiddleOffsetReturnsTheRest) {
  const std::string topic = "middle";
  create_topic(topic, 1);
  producer p(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "5"}});
  for (size_t i = 0; i < 2000; ++i) p.produce(topic, 0, i, key_for(i), value_for(i), headers_for(i));
  ASSERT_TRUE(p.flush(30s));
  ASSERT_EQ(p.acked(), 2000u);
  // Start inside a batch: the broker returns whole batches, the client skips records before 1234.
  auto got = consume_all(broker_->bootstrap(), topic, 1, 2000 - 1234, 30s, 1234);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.by_partition[0].size(), 2000u - 1234u);
  for (size_t i = 0; i < got.by_partition[0].size(); ++i) {
    const auto& r = got.by_partition[0][i];
    ASSERT_EQ(r.offset, static_cast<int64_t>(1234 + i));
    ASSERT_EQ(r.key, key_for(1234 + i));
    ASSERT_EQ(r.value, value_for(1234 + i));
  }
}

TEST_F(BrokerTest, AcksZeroAndOneAreStoredInOrder) {
  const std::string topic = "acks";
  create_topic(topic, 1);
  {
    producer p0(broker_->bootstrap(), {{"acks", "0"}, {"linger.ms", "5"}});
    for (size_t i = 0; i < 500; ++i) p0.produce(topic, 0, i, key_for(i), value_for(i), {});
    ASSERT_TRUE(p0.flush(30s));
    for (const auto& r : p0.reports()) ASSERT_EQ(r.err, RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  // acks=0 has no response: wait (bounded) until the broker has appended all 500.
  {
    auto rk = admin();
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < 100 && hi < 500; ++i) {
      rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), 0, &lo, &hi, 5000);
      if (hi < 500) std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(hi, 500);
  }
  producer p1(broker_->bootstrap(), {{"acks", "1"}, {"linger.ms", "5"}});
  for (size_t i = 500; i < 1000; ++i) p1.produce(topic, 0, i - 500, key_for(i), value_for(i), {});
  ASSERT_TRUE(p1.flush(30s));
  ASSERT_EQ(p1.acked(), 500u);
  for (size_t j = 0; j < 500; ++j) EXPECT_EQ(p1.reports()[j].offset, static_cast<int64_t>(500 + j));
  auto got = consume_all(broker_->bootstrap(), topic, 1, 1000, 30s);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.by_partition[0].size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(got.by_partition[0][i].offset, static_cast<int64_t>(i));
    EXPECT_EQ(got.by_partition[0][i].key, key_for(i));
    EXPECT_EQ(got.by_partition[0][i].value, value_for(i));
  }
}

TEST_F(BrokerTest, CompressedBatchesRoundTrip) {
  for (const std::string codec : {"gzip", "snappy", "lz4", "zstd"}) {
    SCOPED_TRACE(codec);
    const std::string topic = "compressed-" + codec;
    create_topic(topic, 1);
    producer p(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "20"}, {"compression.codec", codec}});
    // Compressible values so every codec really produces a compressed batch.
    for (size_t i = 0; i < 1000; ++i)
      p.produce(topic, 0, i, key_for(i), value_for(i) + std::string(200, 'x'), headers_for(i));
    ASSERT_TRUE(p.flush(30s));
    ASSERT_EQ(p.acked(), 1000u);
    auto got = consume_all(broker_->bootstrap(), topic, 1, 1000, 30s);
    EXPECT_TRUE(got.errors.empty()) << got.errors.front();
    ASSERT_EQ(got.by_partition[0].size(), 1000u);
    for (size_t i = 0; i < 1000; ++i) {
      const auto& r = got.by_partition[0][i];
      ASSERT_EQ(r.offset, static_cast<int64_t>(i));
      ASSERT_EQ(r.offset, p.reports()[i].offset);
      ASSERT_EQ(r.key, key_for(i));
      ASSERT_EQ(r.value, value_for(i) + std::string(200, 'x'));
      ASSERT_EQ(r.headers, headers_for(i));
    }
  }
}

// KIP-74: Fetch returns at least the first whole batch even when it is larger than the fetch limits.
TEST_F(BrokerTest, BatchLargerThanFetchMaxBytesIsStillReturned) {
  const std::string topic = "large";
  create_topic(topic, 1);
  producer p(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "0"}});
  std::string big(600000, 'L');
  for (size_t i = 0; i < 3; ++i) {
    big[0] = static_cast<char>('0' + i);
    p.produce(topic, 0, i, key_for(i), big, headers_for(i));
    ASSERT_TRUE(p.flush(20s));  // one batch per record
  }
  ASSERT_EQ(p.acked(), 3u);
  auto got = consume_all(broker_->bootstrap(), topic, 1, 3, 30s, RD_KAFKA_OFFSET_BEGINNING,
                         {{"message.max.bytes", "1000"}, {"fetch.max.bytes", "1024"}, {"max.partition.fetch.bytes", "1024"},
                          {"receive.message.max.bytes", "2000000"}});
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.by_partition[0].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    big[0] = static_cast<char>('0' + i);
    EXPECT_EQ(got.by_partition[0][i].offset, static_cast<int64_t>(i));
    EXPECT_EQ(got.by_partition[0][i].key, key_for(i));
    EXPECT_TRUE(got.by_partition[0][i].value == big) << "value of record " << i;
    EXPECT_EQ(got.by_partition[0][i].headers, headers_for(i));
  }
}

class SmallMessageMaxTest : public BrokerTest {
  std::map<std::string, std::string> overrides() override {
    auto o = BrokerTest::overrides();
    o["message.max.bytes"] = "100000";
    return o;
  }
};

TEST_F(SmallMessageMaxTest, BatchLargerThanMessageMaxBytesIsRejected) {
  const std::string topic = "big";
  create_topic(topic, 1);
  producer p(broker_->bootstrap(), {{"acks", "all"}, {"message.timeout.ms", "20000"}, {"retries", "0"}});
  p.produce(topic, 0, 0, std::string("small"), std::string(1000, 's'), {});
  ASSERT_TRUE(p.flush(20s));
  p.produce(topic, 0, 1, std::string("big"), std::string(200000, 'b'), {});
  ASSERT_TRUE(p.flush(20s));
  EXPECT_EQ(p.reports()[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(p.reports()[1].err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) << err_name(p.reports()[1].err);
  // The rejected batch must not be in the log.
  expect_watermarks(topic, {{0, 1}});
}

// --- restart and crash ----------------------------------------------------------------------------

class SmallSegmentTest : public BrokerTest {};

TEST_F(SmallSegmentTest, DataSurvivesCleanRestartAndKill9) {
  const std::string topic = "durable";
  // 10k records span several segments: 64 KiB, below Kafka 4's 1 MiB segment.bytes minimum, through Kafka's
  // internal.segment.bytes topic config.
  create_topic(topic, kPartitions, {{"internal.segment.bytes", "65536"}});
  auto reports = produce_keyed(topic, 10000);
  ASSERT_FALSE(HasFailure());
  expect_dense_offsets(reports, kPartitions);
  expect_same(reports, consume_all(broker_->bootstrap(), topic, kPartitions, reports.size()), kPartitions);

  // Kafka's layout: <log.dir>/<topic>-<partition>/<20-digit base offset>.log, rolled by size.
  size_t logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(broker_->data_dir() + "/" + topic + "-0"))
    if (e.path().extension() == ".log") ++logs;
  EXPECT_GE(logs, 2u) << "expected several segments with internal.segment.bytes=65536";
  EXPECT_TRUE(std::filesystem::exists(broker_->data_dir() + "/" + topic + "-0/00000000000000000000.log"));

  // Clean restart.
  int st = broker_->stop();
  ASSERT_TRUE(broker_process::exited_cleanly(st)) << broker_process::describe_status(st);
  broker_->start();
  expect_same(reports, consume_all(broker_->bootstrap(), topic, kPartitions, reports.size()), kPartitions);
  expect_watermarks(topic, counts(reports, kPartitions));

  // kill -9 and restart.
  broker_->kill9();
  broker_->start();
  expect_same(reports, consume_all(broker_->bootstrap(), topic, kPartitions, reports.size()), kPartitions);
  expect_watermarks(topic, counts(reports, kPartitions));

  // Appends after recovery continue at the old log end offsets.
  auto more = produce_keyed(topic, 300, 10000);
  ASSERT_FALSE(HasFailure());
  auto before = counts(reports, kPartitions);
  std::map<int32_t, int64_t> next = before;
  for (const auto& r : more) {
    EXPECT_EQ(r.offset, next[r.partition]) << "partition " << r.partition;
    next[r.partition] = r.offset + 1;
  }
  std::vector<record> all = reports;
  all.insert(all.end(), more.begin(), more.end());
  expect_same(all, consume_all(broker_->bootstrap(), topic, kPartitions, all.size()), kPartitions);
}

TEST_F(BrokerTest, Kill9DuringProduceLosesNoAcknowledgedRecord) {
  const std::string topic = "crash";
  create_topic(topic, kPartitions);
  constexpr size_t kKillAfterAcked = 3000;
  constexpr size_t kMaxRecords = 300000;
  // retries=0: a record is never written twice, so "exactly once" is a fair assertion without
  // idempotence. Record n goes to partition n % 3, so we know the send order per partition.
  producer p(broker_->bootstrap(), {{"acks", "all"},
                                    {"linger.ms", "2"},
                                    {"batch.num.messages", "200"},
                                    {"retries", "0"},
                                    {"message.timeout.ms", "10000"}});
  size_t sent = 0;
  bool killed = false;
  auto deadline = clock_type::now() + 60s;
  while (sent < kMaxRecords && clock_type::now() < deadline) {
    auto err = p.produce(topic, static_cast<int32_t>(sent % kPartitions), sent, key_for(sent),
                         "n" + std::to_string(sent), {{"n", std::to_string(sent)}});
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err);
    ++sent;
    if (sent % 50 == 0) p.poll(0);
    if (p.acked() >= kKillAfterAcked) {
      broker_->kill9();
      killed = true;
      break;
    }
  }
  ASSERT_TRUE(killed) << "only " << p.acked() << " acknowledged before the deadline";
  // Everything still queued or in flight fails now; none of it is acknowledged.
  rd_kafka_purge(p.rk(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  ASSERT_TRUE(p.flush(30s)) << p.outstanding() << " records without delivery report";
  const auto& reports = p.reports();
  ASSERT_EQ(reports.size(), sent);
  size_t acked = 0;
  for (const auto& r : reports) acked += r.err == RD_KAFKA_RESP_ERR_NO_ERROR;
  ASSERT_GE(acked, kKillAfterAcked);
  std::cerr << "sent " << sent << ", acknowledged " << acked << " before kill -9\n";

  broker_->start();
  auto got = consume_all(broker_->bootstrap(), topic, kPartitions, acked, 60s);
  EXPECT_TRUE(got.errors.empty()) << got.errors.size() << " consumer errors, first: " << got.errors.front();

  std::set<size_t> seen;
  for (int part = 0; part < kPartitions; ++part) {
    const auto& recs = got.by_partition[part];
    // Dense offsets, each record intact, numbers a prefix of what was sent to this partition.
    for (size_t i = 0; i < recs.size(); ++i) {
      const auto& r = recs[i];
      size_t expected_n = part + i * kPartitions;
      ASSERT_EQ(r.offset, static_cast<int64_t>(i)) << "partition " << part;
      ASSERT_EQ(r.value, "n" + std::to_string(expected_n)) << "partition " << part << " offset " << i;
      ASSERT_EQ(r.key, key_for(expected_n));
      ASSERT_EQ(r.headers, (std::vector<header>{{"n", std::to_string(expected_n)}}));
      ASSERT_TRUE(seen.insert(expected_n).second) << "record " << expected_n << " twice";
      if (reports[expected_n].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ASSERT_EQ(reports[expected_n].partition, part);
        ASSERT_EQ(reports[expected_n].offset, r.offset) << "acknowledged offset of record " << expected_n;
      }
    }
  }
  size_t missing = 0;
  for (size_t n = 0; n < reports.size(); ++n) {
    if (reports[n].err == RD_KAFKA_RESP_ERR_NO_ERROR && !seen.count(n)) {
      if (missing++ < 5) ADD_FAILURE() << "acknowledged record " << n << " lost (acked at p" << reports[n].partition
                                       << "@" << reports[n].offset << ")";
    }
  }
  EXPECT_EQ(missing, 0u);
  std::cerr << "after restart the log holds " << seen.size() << " records (" << acked << " acknowledged)\n";

  // The recovered log accepts new appends at its end.
  producer p2(broker_->bootstrap(), {{"acks", "all"}});
  p2.produce(topic, 0, 0, std::string("after"), std::string("crash"), {});
  ASSERT_TRUE(p2.flush(20s));
  ASSERT_EQ(p2.reports()[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(p2.reports()[0].offset, static_cast<int64_t>(got.by_partition[0].size()));
}

// --- metadata, admin, list offsets -----------------------------------------------------------------

TEST_F(BrokerTest, MetadataListsBrokerAndTopic) {
  create_topic("meta", kPartitions);
  auto rk = admin();
  rd_kafka_resp_err_t err;
  auto md = fetch_metadata(rk.get(), "", 10000, &err);
  ASSERT_TRUE(md) << err_name(err);
  ASSERT_EQ(md->broker_cnt, 1);
  EXPECT_EQ(md->brokers[0].id, kBrokerId);
  EXPECT_STREQ(md->brokers[0].host, "127.0.0.1");
  EXPECT_EQ(md->brokers[0].port, broker_->port());
  const auto* t = find_topic(md.get(), "meta");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->err, RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(t->partition_cnt, kPartitions);
  std::set<int32_t> ids;
  for (int i = 0; i < t->partition_cnt; ++i) {
    const auto& p = t->partitions[i];
    ids.insert(p.id);
    EXPECT_EQ(p.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(p.leader, kBrokerId);
    ASSERT_EQ(p.replica_cnt, 1);
    EXPECT_EQ(p.replicas[0], kBrokerId);
    ASSERT_EQ(p.isr_cnt, 1);
    EXPECT_EQ(p.isrs[0], kBrokerId);
  }
  EXPECT_EQ(ids, (std::set<int32_t>{0, 1, 2}));

  // Creating it again: TOPIC_ALREADY_EXISTS.
  auto res = create_topics(rk.get(), {{"meta", kPartitions}});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) << err_name(res[0].err);

  // Metadata survives a restart.
  rk.reset();
  broker_->restart();
  rk = admin();
  md = fetch_metadata(rk.get(), "", 10000, &err);
  ASSERT_TRUE(md) << err_name(err);
  t = find_topic(md.get(), "meta");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->partition_cnt, kPartitions);
}

TEST_F(BrokerTest, ProducingToUnknownTopicAutoCreatesWithNumPartitions) {
  const std::string topic = "auto-created";
  producer p(broker_->bootstrap(), {{"acks", "all"}, {"message.timeout.ms", "20000"}});
  for (size_t i = 0; i < 10; ++i) p.produce(topic, RD_KAFKA_PARTITION_UA, i, key_for(i), value_for(i), {});
  ASSERT_TRUE(p.flush(30s));
  EXPECT_EQ(p.acked(), 10u) << "first error: " << err_name(p.reports()[0].err);
  rd_kafka_resp_err_t err;
  auto md = fetch_metadata(p.rk(), "", 10000, &err);
  ASSERT_TRUE(md) << err_name(err);
  const auto* t = find_topic(md.get(), topic);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->err, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(t->partition_cnt, kDefaultPartitions);
}

TEST_F(BrokerTest, InvalidTopicNamesAreRejected) {
  auto rk = admin();
  const std::vector<std::string> bad{"bad topic!", std::string(250, 'a'), ".", "..", "a/b"};
  for (const auto& name : bad) {
    auto res = create_topics(rk.get(), {{name, 1}});
    ASSERT_EQ(res.size(), 1u);
    EXPECT_EQ(res[0].err, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION)
        << "CreateTopics '" << name.substr(0, 30) << "' (len " << name.size() << "): " << err_name(res[0].err);
  }
  // 249 characters is the longest legal name.
  auto ok = create_topics(rk.get(), {{std::string(249, 'b'), 1}});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(ok[0].err) << " " << ok[0].msg;

  // Metadata for an invalid name (auto-creation allowed): the topic carries INVALID_TOPIC_EXCEPTION.
  rd_kafka_resp_err_t err;
  auto md = fetch_metadata(rk.get(), "bad topic!", 10000, &err);
  ASSERT_TRUE(md) << err_name(err);
  const auto* t = find_topic(md.get(), "bad topic!");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->err, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION) << err_name(t->err);
  md.reset();
  // and no such topic was created.
  md = fetch_metadata(rk.get(), "", 10000, &err);
  ASSERT_TRUE(md);
  EXPECT_EQ(find_topic(md.get(), "bad topic!"), nullptr);
}

TEST_F(BrokerTest, WatermarksAndOffsetsForTimes) {
  const std::string topic = "offsets";
  create_topic(topic, kPartitions);
  auto rk = admin();
  for (int p = 0; p < kPartitions; ++p) {
    int64_t lo = -99, hi = -99;
    ASSERT_EQ(rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &lo, &hi, 10000),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(lo, 0);
    EXPECT_EQ(hi, 0) << "empty partition " << p;
  }
  // Partition p gets 100 * (p + 1) records with increasing CreateTime timestamps.
  const int64_t base_ts = 1700000000000;  // fixed, ms
  producer pr(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "5"}});
  size_t idx = 0;
  for (int p = 0; p < kPartitions; ++p)
    for (int i = 0; i < 100 * (p + 1); ++i, ++idx)
      pr.produce(topic, p, idx, key_for(idx), value_for(idx), {}, base_ts + i * 10);
  ASSERT_TRUE(pr.flush(30s));
  ASSERT_EQ(pr.acked(), idx);
  expect_watermarks(topic, {{0, 100}, {1, 200}, {2, 300}});

  // ListOffsets by timestamp: first offset with timestamp >= t.
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(3);
  rd_kafka_topic_partition_list_add(l, topic.c_str(), 0)->offset = base_ts + 55 * 10;      // exact: 55
  rd_kafka_topic_partition_list_add(l, topic.c_str(), 1)->offset = base_ts + 120 * 10 - 5;  // between: 120
  rd_kafka_topic_partition_list_add(l, topic.c_str(), 2)->offset = base_ts + 10 * 1000;    // after all: -1
  auto err = rd_kafka_offsets_for_times(rk.get(), l, 10000);
  ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err);
  auto* e0 = rd_kafka_topic_partition_list_find(l, topic.c_str(), 0);
  auto* e1 = rd_kafka_topic_partition_list_find(l, topic.c_str(), 1);
  auto* e2 = rd_kafka_topic_partition_list_find(l, topic.c_str(), 2);
  EXPECT_EQ(e0->err, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(e0->offset, 55);
  EXPECT_EQ(e1->offset, 120);
  EXPECT_EQ(e2->offset, -1) << "no record at or after the timestamp: offset -1 (KIP-79)";
  rd_kafka_topic_partition_list_destroy(l);
}

TEST_F(BrokerTest, DeleteTopicRemovesItFromMetadata) {
  create_topic("doomed", 2);
  create_topic("kept", 1);
  auto rk = admin();
  auto res = delete_topics(rk.get(), {"doomed"});
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(res[0].err) << " " << res[0].msg;
  // Deletion may complete asynchronously: poll metadata, bounded.
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    auto md = fetch_metadata(rk.get());
    ASSERT_TRUE(md);
    gone = find_topic(md.get(), "doomed") == nullptr;
    EXPECT_NE(find_topic(md.get(), "kept"), nullptr);
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone) << "topic still listed 5 s after DeleteTopics";

  auto again = delete_topics(rk.get(), {"doomed"});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) << err_name(again[0].err);

  // Still gone after a restart, and the name can be reused from offset 0.
  rk.reset();
  broker_->restart();
  rk = admin();
  auto md = fetch_metadata(rk.get());
  ASSERT_TRUE(md);
  EXPECT_EQ(find_topic(md.get(), "doomed"), nullptr);
  EXPECT_NE(find_topic(md.get(), "kept"), nullptr);
  md.reset();
  rk.reset();
  create_topic("doomed", 1);
  expect_watermarks("doomed", {{0, 0}});
}

}  // namespace
}  // namespace sluice::itest
