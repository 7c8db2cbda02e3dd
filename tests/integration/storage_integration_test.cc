// Storage engine acceptance with real clients (issue "Storage engine: Kafka's log semantics, durability
// and zero-copy reads"): recovery after the tail of the active segment and the index files were
// damaged while the broker was down, kcat -o s@<timestamp>, retention while a producer and a consumer
// run, DescribeConfigs / AlterConfigs / DeleteRecords through librdkafka's Admin API. See README.md.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "admin_util.h"
#include "broker_process.h"
#include "rdkafka_util.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------
// Fixture: one broker per test, started by the test with its own overrides.

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (broker_binary().empty()) GTEST_SKIP() << "no sluice binary: set SLUICE_BINARY";
  }

  void start_broker(std::map<std::string, std::string> overrides) {
    overrides.emplace("broker.id", "1");
    overrides.emplace("num.partitions", "1");
    broker_ = std::make_unique<broker_process>(std::move(overrides));
    broker_->start();
  }

  void TearDown() override {
    if (!broker_) return;
    if (HasFailure()) {
      broker_->keep();
      std::string log = broker_->log_text();
      std::cerr << "---- broker log (" << broker_->log_path() << ", data kept in " << broker_->dir() << ") ----\n"
                << (log.size() > 20000 ? log.substr(log.size() - 20000) : log) << "\n---- end of broker log ----\n";
    }
    if (broker_->running()) {
      int st = broker_->stop();
      EXPECT_TRUE(broker_process::exited_cleanly(st)) << broker_process::describe_status(st);
    }
    broker_.reset();
  }

  rk_ptr admin() { return make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {})); }

  void create_topic(const std::string& name, int partitions,
                    const std::vector<std::pair<std::string, std::string>>& configs = {}) {
    auto rk = admin();
    std::string msg;
    auto err = create_topic_with_configs(rk.get(), name, partitions, configs, &msg);
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err) << " " << msg;
  }

  std::pair<int64_t, int64_t> watermarks(const std::string& topic, int32_t partition) {
    auto rk = admin();
    int64_t lo = -9, hi = -9;
    auto err = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), partition, &lo, &hi, 10000);
    EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(err);
    return {lo, hi};
  }

  // Produces values[i] to `partition`, `per_batch` records per produce call group (flush between groups so
  // that each group becomes its own batch). Returns the reported offsets; asserts every report succeeded.
  std::vector<int64_t> produce(const std::string& topic, int32_t partition, const std::vector<std::string>& values,
                               const std::vector<int64_t>& timestamps = {}, size_t per_batch = 50,
                               std::vector<std::pair<std::string, std::string>> conf = {}) {
    conf.insert(conf.begin(), {{"acks", "all"}, {"linger.ms", "5"}, {"enable.idempotence", "false"}});
    producer prod(broker_->bootstrap(), conf);
    for (size_t i = 0; i < values.size(); ++i) {
      auto e = prod.produce(topic, partition, i, std::nullopt, values[i], {}, timestamps.empty() ? 0 : timestamps[i]);
      EXPECT_EQ(e, RD_KAFKA_RESP_ERR_NO_ERROR);
      if ((i + 1) % per_batch == 0) {
        EXPECT_TRUE(prod.flush(20s));
      }
    }
    EXPECT_TRUE(prod.flush(30s)) << prod.outstanding() << " records without delivery report";
    std::vector<int64_t> offsets;
    for (const auto& r : prod.reports()) {
      EXPECT_EQ(r.err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(r.err);
      offsets.push_back(r.offset);
    }
    return offsets;
  }

  fs::path partition_dir(const std::string& topic, int32_t p) const {
    return fs::path(broker_->data_dir()) / (topic + "-" + std::to_string(p));
  }

  // Segment files of one partition with extension `ext` (".log", ".index", ".timeindex"), sorted.
  std::vector<fs::path> segment_files(const std::string& topic, int32_t p, const std::string& ext) const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(partition_dir(topic, p), ec))
      if (e.path().extension() == ext) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<broker_process> broker_;
};

std::string padded_value(size_t i, size_t size = 120) {
  std::string v = "v" + std::to_string(i) + ":";
  v.resize(size, static_cast<char>('a' + i % 26));
  return v;
}

// The v2 record batches of a .log file, walked from the file itself.
struct batch_pos {
  int64_t position;
  int64_t base_offset;
  int64_t size;  // 12 + batch_length
  int32_t last_offset_delta;
};

uint64_t be(const std::string& s, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  return v;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<batch_pos> batches_of(const fs::path& log) {
  const std::string s = read_file(log);
  std::vector<batch_pos> out;
  size_t pos = 0;
  while (s.size() - pos >= 61) {
    batch_pos b;
    b.position = static_cast<int64_t>(pos);
    b.base_offset = static_cast<int64_t>(be(s, pos, 8));
    b.size = 12 + static_cast<int64_t>(be(s, pos + 8, 4));
    b.last_offset_delta = static_cast<int32_t>(be(s, pos + 23, 4));
    if (pos + static_cast<size_t>(b.size) > s.size()) break;
    out.push_back(b);
    pos += static_cast<size_t>(b.size);
  }
  return out;
}

// Checks that partition 0 of `topic` holds exactly `values[0..count)` at offsets 0..count-1.
void expect_prefix(const std::string& bootstrap, const std::string& topic, const std::vector<std::string>& values,
                   size_t count) {
  consumed c = consume_all(bootstrap, topic, 1, count, 30s);
  ASSERT_TRUE(c.errors.empty()) << c.errors.front();
  const auto& recs = c.by_partition[0];
  ASSERT_EQ(recs.size(), count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(recs[i].offset, static_cast<int64_t>(i));
    ASSERT_EQ(recs[i].value, values[i]) << "offset " << i;
  }
}

// ---------------------------------------------------------------------------------------------------
// Recovery: kill -9, damage files under the data dir, restart.

enum class damage { cut_mid_last_batch, flip_byte_in_last_batch, flip_byte_in_earlier_batch, garble_last_length };

class TailDamageTest : public StorageTest, public ::testing::WithParamInterface<std::tuple<damage, bool>> {};

// Param: what to damage in the active segment, and whether a clean restart wrote checkpoints (recovery
// point) before the records of the damaged tail were produced. Also deletes the active segment's indexes.
TEST_P(TailDamageTest, RecoveryEndsAtLastWholeValidBatchAndAppendsContinue) {
  const auto [what, checkpointed] = GetParam();
  // Segments below Kafka 4's 1 MiB segment.bytes minimum: its internal.segment.bytes topic config.
  start_broker({{"log.index.interval.bytes", "1024"}});
  const std::string topic = "rec";
  create_topic(topic, 1, {{"internal.segment.bytes", "65536"}});
  std::vector<std::string> values;
  for (size_t i = 0; i < 1600; ++i) values.push_back(padded_value(i));
  std::vector<std::string> first(values.begin(), values.begin() + 800), second(values.begin() + 800, values.end());
  auto offs = produce(topic, 0, first, {}, 40);
  ASSERT_EQ(offs.back(), 799);
  if (checkpointed) {
    int st = broker_->stop();
    ASSERT_TRUE(broker_process::exited_cleanly(st));
    broker_->start();
  }
  offs = produce(topic, 0, second, {}, 40);
  ASSERT_EQ(offs.back(), 1599);
  broker_->kill9();

  auto logs = segment_files(topic, 0, ".log");
  ASSERT_GE(logs.size(), 2u) << "expected rolled segments with internal.segment.bytes=65536";
  const fs::path active = logs.back();
  auto batches = batches_of(active);
  ASSERT_GE(batches.size(), 3u);
  ASSERT_EQ(batches.back().base_offset + batches.back().last_offset_delta, 1599);
  std::string bytes = read_file(active);
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), batches.back().position + batches.back().size);
  const batch_pos& last = batches.back();
  const batch_pos& earlier = batches[batches.size() - 3];
  int64_t expected_leo = last.base_offset;
  switch (what) {
    case damage::cut_mid_last_batch:
      bytes.resize(static_cast<size_t>(last.position + last.size / 2));
      break;
    case damage::flip_byte_in_last_batch:  // a byte of the records: only the CRC32C can tell
      bytes[static_cast<size_t>(last.position + last.size - 10)] ^= 0x5a;
      break;
    case damage::flip_byte_in_earlier_batch:  // recovery cuts at the first bad batch, later ones go too
      bytes[static_cast<size_t>(earlier.position + 70)] ^= 0x01;
      expected_leo = earlier.base_offset;
      break;
    case damage::garble_last_length:  // batch_length pointing far past the end of the file
      bytes[static_cast<size_t>(last.position + 8)] = 0x10;
      break;
  }
  write_file(active, bytes);
  fs::path idx = active, tidx = active;
  idx.replace_extension(".index");
  tidx.replace_extension(".timeindex");
  fs::remove(idx);
  fs::remove(tidx);

  broker_->start();
  auto [lo, hi] = watermarks(topic, 0);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, expected_leo) << "log end offset must be the end of the last whole valid batch";
  expect_prefix(broker_->bootstrap(), topic, values, static_cast<size_t>(expected_leo));
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(active)), (what == damage::flip_byte_in_earlier_batch ? earlier : last).position)
      << "the torn/corrupt tail is cut at the first bad batch";

  // New appends continue at the recovered log end offset, and everything reads back.
  std::vector<std::string> more;
  for (size_t i = 0; i < 100; ++i) more.push_back("after-" + std::to_string(i));
  auto more_offs = produce(topic, 0, more, {}, 25);
  ASSERT_EQ(more_offs.front(), expected_leo);
  ASSERT_EQ(more_offs.back(), expected_leo + 99);
  std::vector<std::string> all(values.begin(), values.begin() + expected_leo);
  all.insert(all.end(), more.begin(), more.end());
  expect_prefix(broker_->bootstrap(), topic, all, all.size());
  // And it survives one more clean restart unchanged.
  int st = broker_->stop();
  EXPECT_TRUE(broker_process::exited_cleanly(st));
  broker_->start();
  EXPECT_EQ(watermarks(topic, 0).second, expected_leo + 100);
}

std::string tail_damage_name(const ::testing::TestParamInfo<TailDamageTest::ParamType>& info) {
  static const char* names[] = {"CutMidLastBatch", "FlipByteInLastBatch", "FlipByteInEarlierBatch",
                                "GarbleLastBatchLength"};
  return std::string(names[static_cast<int>(std::get<0>(info.param))]) +
         (std::get<1>(info.param) ? "_AfterCheckpoint" : "_NoCheckpoint");
}

INSTANTIATE_TEST_SUITE_P(Storage, TailDamageTest,
                         ::testing::Combine(::testing::Values(damage::cut_mid_last_batch, damage::flip_byte_in_last_batch,
                                                              damage::flip_byte_in_earlier_batch,
                                                              damage::garble_last_length),
                                            ::testing::Bool()),
                         tail_damage_name);

// Every segment's .index and .timeindex deleted, garbled with random bytes, cut to an odd size or
// filled with plausible-looking but wrong entries: the broker rebuilds them (reads from any offset
// and ListOffsets by timestamp still answer exactly).
TEST_F(StorageTest, GarbledAndMissingIndexFilesAreRebuilt) {
  start_broker({{"log.index.interval.bytes", "512"}});
  const std::string topic = "idx";
  create_topic(topic, 1, {{"internal.segment.bytes", "32768"}});
  const int64_t t0 = 1'700'000'000'000;
  std::vector<std::string> values;
  std::vector<int64_t> ts;
  for (size_t i = 0; i < 1200; ++i) {
    values.push_back(padded_value(i, 100));
    ts.push_back(t0 + static_cast<int64_t>(i) * 1000);
  }
  auto offs = produce(topic, 0, values, ts, 20);
  ASSERT_EQ(offs.back(), 1199);
  // Checkpoints now cover every segment (trusted segments must still be checked), then kill -9.
  int st = broker_->stop();
  ASSERT_TRUE(broker_process::exited_cleanly(st));
  broker_->start();
  broker_->kill9();

  auto logs = segment_files(topic, 0, ".log");
  ASSERT_GE(logs.size(), 4u);
  std::mt19937 rng(12345);
  for (size_t i = 0; i < logs.size(); ++i) {
    fs::path idx = logs[i], tidx = logs[i];
    idx.replace_extension(".index");
    tidx.replace_extension(".timeindex");
    std::string ib = read_file(idx), tb = read_file(tidx);
    switch (i % 4) {
      case 0:  // random bytes, same sizes
        for (auto& c : ib) c = static_cast<char>(rng());
        for (auto& c : tb) c = static_cast<char>(rng());
        break;
      case 1:  // deleted
        fs::remove(idx);
        fs::remove(tidx);
        continue;
      case 2:  // cut to a size that is not a whole number of entries
        ib.resize(ib.size() > 5 ? ib.size() - 5 : 3);
        tb.resize(tb.size() > 7 ? tb.size() - 7 : 5);
        break;
      case 3:  // plausible entries (increasing) with wrong positions and timestamps
        for (size_t e = 0; e + 8 <= ib.size(); e += 8) ib[e + 7] = static_cast<char>(ib[e + 7] + 3);
        for (size_t e = 0; e + 12 <= tb.size(); e += 12) tb[e + 6] = static_cast<char>(tb[e + 6] + 1);
        break;
    }
    write_file(idx, ib);
    write_file(tidx, tb);
  }

  broker_->start();
  EXPECT_EQ(watermarks(topic, 0), std::make_pair(int64_t{0}, int64_t{1200}));
  expect_prefix(broker_->bootstrap(), topic, values, 1200);
  // Reads starting inside every segment.
  for (int64_t from : {1, 137, 400, 555, 801, 1000, 1199}) {
    consumed c = consume_all(broker_->bootstrap(), topic, 1, static_cast<size_t>(1200 - from), 30s, from);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();
    ASSERT_FALSE(c.by_partition[0].empty()) << "from " << from;
    EXPECT_EQ(c.by_partition[0].front().offset, from);
    EXPECT_EQ(c.by_partition[0].front().value, values[static_cast<size_t>(from)]);
    EXPECT_EQ(c.by_partition[0].size(), static_cast<size_t>(1200 - from));
  }
  // ListOffsets by timestamp through the rebuilt time indexes.
  auto rk = admin();
  for (int64_t i : {0, 1, 333, 334, 700, 1199}) {
    for (int64_t delta : {0, -500}) {
      rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(l, topic.c_str(), 0)->offset = t0 + i * 1000 + delta;
      auto err = rd_kafka_offsets_for_times(rk.get(), l, 10000);
      EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR);
      EXPECT_EQ(l->elems[0].offset, i) << "timestamp t0+" << i * 1000 + delta;
      rd_kafka_topic_partition_list_destroy(l);
    }
  }
  // Appends continue.
  auto more = produce(topic, 0, {"x", "y"}, {t0 + 1'300'000, t0 + 1'301'000}, 2);
  EXPECT_EQ(more, (std::vector<int64_t>{1200, 1201}));
}

// ---------------------------------------------------------------------------------------------------
// kcat -C -o s@<timestamp> (ListOffsets by timestamp, KIP-79).

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

TEST_F(StorageTest, KcatOffsetByTimestampLandsOnTheRightOffset) {
  if (run_command("command -v kcat").empty()) GTEST_SKIP() << "kcat not installed";
  start_broker({});
  const std::string topic = "ts";
  create_topic(topic, 1, {{"internal.segment.bytes", "16384"}});
  // 300 records, timestamps t0 + 1000*i (explicit, RD_KAFKA_V_TIMESTAMP), 10 records per batch, several
  // segments; record 150 carries an older timestamp (t0) to check "first offset with timestamp >= T".
  const int64_t t0 = 1'600'000'000'000;
  std::vector<std::string> values;
  std::vector<int64_t> ts;
  for (size_t i = 0; i < 300; ++i) {
    values.push_back(padded_value(i, 150));
    ts.push_back(i == 150 ? t0 : t0 + static_cast<int64_t>(i) * 1000);
  }
  auto offs = produce(topic, 0, values, ts, 10);
  ASSERT_EQ(offs.back(), 299);
  ASSERT_GE(segment_files(topic, 0, ".log").size(), 3u);

  auto first_offset_at = [&](int64_t t) {
    std::string cmd = "timeout 20 kcat -C -b " + broker_->bootstrap() + " -t " + topic + " -p 0 -o s@" +
                      std::to_string(t) + " -c 1 -e -q -f '%o %T\\n' 2>&1";
    return run_command(cmd);
  };
  struct probe {
    int64_t t;
    std::string expect;  // "<offset> <timestamp>\n", or "" when no record has timestamp >= t
  };
  std::vector<probe> probes = {
      {t0 - 5000, "0 " + std::to_string(t0) + "\n"},
      {t0, "0 " + std::to_string(t0) + "\n"},
      {t0 + 1, "1 " + std::to_string(t0 + 1000) + "\n"},
      {t0 + 37'000, "37 " + std::to_string(t0 + 37'000) + "\n"},        // inside a batch (30..39)
      {t0 + 36'500, "37 " + std::to_string(t0 + 37'000) + "\n"},
      {t0 + 150'000, "151 " + std::to_string(t0 + 151'000) + "\n"},     // 150 has an older timestamp
      {t0 + 148'500, "149 " + std::to_string(t0 + 149'000) + "\n"},
      {t0 + 149'999, "151 " + std::to_string(t0 + 151'000) + "\n"},    // 150 (t0) is older than T
      {t0 + 299'000, "299 " + std::to_string(t0 + 299'000) + "\n"},
      {t0 + 299'001, ""},                                                // after the last: ListOffsets -1
  };
  for (const auto& p : probes) {
    EXPECT_EQ(first_offset_at(p.t), p.expect) << "kcat -o s@" << p.t << " (t0+" << p.t - t0 << ")";
  }
}

// ---------------------------------------------------------------------------------------------------
// Acceptance 2: retention.ms=1000, segment.ms=200, log.retention.check.interval.ms=200 while a producer
// and a consumer keep running.

TEST_F(StorageTest, RetentionDeletesOldSegmentsWhileProducerAndConsumerRun) {
  start_broker({{"log.retention.check.interval.ms", "200"}});
  const std::string topic = "ret";
  create_topic(topic, 1, {{"retention.ms", "1000"}, {"segment.ms", "200"}});
  const std::string bootstrap = broker_->bootstrap();

  std::atomic<bool> stop_producer{false};
  std::atomic<int64_t> produced_acked{0};
  std::atomic<int64_t> last_acked_offset{-1};
  std::thread prod_thread([&] {
    producer prod(bootstrap, {{"acks", "all"}, {"linger.ms", "5"}, {"enable.idempotence", "false"}});
    const auto deadline = clock_type::now() + 30s;
    size_t i = 0;
    while (!stop_producer && clock_type::now() < deadline) {
      prod.produce(topic, 0, i, std::nullopt, "r" + std::to_string(i), {});
      ++i;
      prod.poll(2);
      if (prod.acked() > 0) {
        produced_acked = static_cast<int64_t>(prod.acked());
      }
    }
    prod.flush(10s);
    produced_acked = static_cast<int64_t>(prod.acked());
    for (const auto& r : prod.reports())
      if (r.err == RD_KAFKA_RESP_ERR_NO_ERROR) last_acked_offset = std::max<int64_t>(last_acked_offset, r.offset);
  });

  // Consumer: group-less, auto.offset.reset=earliest; phase 1 reads from the beginning, phase 2 restarts
  // at offset 0, which retention has deleted by then (OFFSET_OUT_OF_RANGE -> reset to earliest).
  struct consumer_state {
    std::vector<int64_t> phase1, phase2;
    std::vector<std::string> errors;
    std::vector<std::string> values_mismatch;
  } cs;
  std::atomic<bool> phase2_go{false}, stop_consumer{false};
  std::thread cons_thread([&] {
    // fetch.error.backoff.ms: with retention.ms=1000 and segment.ms=200 the oldest segment (where
    // auto.offset.reset=earliest lands) lives only ~200 ms; librdkafka's default 500 ms backoff after
    // OFFSET_OUT_OF_RANGE would land on an already deleted offset every time while the producer runs.
    std::vector<std::pair<std::string, std::string>> kv{
        {"fetch.wait.max.ms", "100"}, {"fetch.error.backoff.ms", "50"}, {"log_level", "3"}};
    if (const char* d = std::getenv("SLUICE_RDKAFKA_DEBUG")) kv.insert(kv.end(), {{"debug", d}, {"log_level", "7"}});
    rk_ptr rk = make_client(RD_KAFKA_CONSUMER, make_conf(bootstrap, kv));
    rd_kafka_topic_conf_t* tconf = rd_kafka_topic_conf_new();
    char errstr[256];
    rd_kafka_topic_conf_set(tconf, "auto.offset.reset", "earliest", errstr, sizeof errstr);
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), tconf);
    auto run_phase = [&](int64_t start, std::vector<int64_t>& got, std::atomic<bool>& until) {
      rd_kafka_consume_start(rkt, 0, start);
      const auto deadline = clock_type::now() + 40s;
      while (!until && clock_type::now() < deadline) {
        rd_kafka_message_t* m = rd_kafka_consume(rkt, 0, 100);
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          got.push_back(m->offset);
          std::string v(static_cast<const char*>(m->payload), m->len);
          if (v != "r" + std::to_string(m->offset) && cs.values_mismatch.size() < 5)
            cs.values_mismatch.push_back("offset " + std::to_string(m->offset) + " holds " + v);
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          cs.errors.push_back(std::string(rd_kafka_err2name(m->err)) + " at " + std::to_string(m->offset));
        }
        rd_kafka_message_destroy(m);
      }
      rd_kafka_consume_stop(rkt, 0);
    };
    run_phase(RD_KAFKA_OFFSET_BEGINNING, cs.phase1, phase2_go);
    run_phase(0, cs.phase2, stop_consumer);
    rd_kafka_topic_destroy(rkt);
  });

  // Watch: log start offset (ListOffsets earliest) and the segment files, every 200 ms for 6 s.
  std::vector<int64_t> lows;
  size_t max_segments = 0;
  bool first_segment_gone = false;
  const auto watch_start = clock_type::now();
  while (clock_type::now() < watch_start + 6s) {
    std::this_thread::sleep_for(200ms);
    auto [lo, hi] = watermarks(topic, 0);
    lows.push_back(lo);
    auto logs = segment_files(topic, 0, ".log");
    max_segments = std::max(max_segments, logs.size());
    if (!logs.empty() && logs.front().filename() != "00000000000000000000.log") first_segment_gone = true;
    if (clock_type::now() > watch_start + 3s) phase2_go = true;
  }
  stop_producer = true;
  prod_thread.join();
  // Let the consumer catch up with the last acknowledged record (it polls with fetch.wait.max.ms=100).
  std::this_thread::sleep_for(2s);
  stop_consumer = true;
  cons_thread.join();

  auto [lo_end, hi_end] = watermarks(topic, 0);
  std::cout << "retention: log start offsets seen " << lows.front() << " .. " << lows.back() << " (" << lows.size()
            << " samples), max segments " << max_segments << ", final watermarks " << lo_end << "/" << hi_end
            << ", consumer phase1 " << cs.phase1.size() << " records, phase2 " << cs.phase2.size() << " records"
            << (cs.phase2.empty() ? std::string() : " from offset " + std::to_string(cs.phase2.front()) + " to " +
                                                        std::to_string(cs.phase2.back()))
            << std::endl;
  EXPECT_GT(produced_acked.load(), 500);
  EXPECT_TRUE(first_segment_gone) << "segment 0 was never deleted";
  EXPECT_LE(max_segments, 20u) << "old segments pile up";
  ASSERT_GE(lows.size(), 10u);
  EXPECT_TRUE(std::is_sorted(lows.begin(), lows.end())) << "log start offset went backwards";
  std::set<int64_t> distinct(lows.begin(), lows.end());
  EXPECT_GE(distinct.size(), 4u) << "ListOffsets earliest did not keep advancing";
  EXPECT_GT(lows.back(), 0);
  EXPECT_EQ(hi_end, last_acked_offset.load() + 1);
  EXPECT_LE(lo_end, hi_end);
  EXPECT_TRUE(cs.errors.empty()) << cs.errors.front();
  EXPECT_TRUE(cs.values_mismatch.empty()) << cs.values_mismatch.front();
  EXPECT_TRUE(std::is_sorted(cs.phase1.begin(), cs.phase1.end()) &&
              std::adjacent_find(cs.phase1.begin(), cs.phase1.end()) == cs.phase1.end());
  EXPECT_TRUE(std::is_sorted(cs.phase2.begin(), cs.phase2.end()) &&
              std::adjacent_find(cs.phase2.begin(), cs.phase2.end()) == cs.phase2.end());
  ASSERT_FALSE(cs.phase1.empty());
  ASSERT_FALSE(cs.phase2.empty()) << "the consumer stopped receiving after OFFSET_OUT_OF_RANGE";
  EXPECT_GT(cs.phase2.front(), 0) << "offset 0 should have been deleted: reset to earliest expected";
  EXPECT_EQ(cs.phase2.back(), hi_end - 1) << "the consumer must keep receiving new records to the end";
}

// Kafka deletes the active segment too once it breaches retention and lies wholly below the high
// watermark (UnifiedLog.deletableSegments, then roll()): an idle topic empties, the log end offset stays.
TEST_F(StorageTest, RetentionDeletesTheBreachedActiveSegmentOfAnIdleTopic) {
  start_broker({{"log.retention.check.interval.ms", "200"}});
  create_topic("idle", 1, {{"retention.ms", "1000"}});
  std::vector<std::string> values(100, "x");
  ASSERT_EQ(produce("idle", 0, values, {}, 100).back(), 99);
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(watermarks("idle", 0), std::make_pair(int64_t{100}, int64_t{100}));
  EXPECT_EQ(produce("idle", 0, {"y"}, {}, 1).front(), 100);
}

// ---------------------------------------------------------------------------------------------------
// Acceptance 4: DescribeConfigs / AlterConfigs / DeleteRecords through librdkafka.

// Kafka 4.4's topic configs (TopicConfig / LogConfig, internal.segment.bytes aside: listed only when set) and
// their defaults with no broker override.
const std::map<std::string, std::string>& kafka44_topic_defaults() {
  static const std::map<std::string, std::string> m = {
      {"cleanup.policy", "delete"},
      {"compression.gzip.level", "-1"},
      {"compression.lz4.level", "9"},
      {"compression.type", "producer"},
      {"compression.zstd.level", "3"},
      {"delete.retention.ms", "86400000"},
      {"errors.deadletterqueue.group.enable", "false"},
      {"file.delete.delay.ms", "60000"},
      {"flush.messages", "9223372036854775807"},
      {"flush.ms", "9223372036854775807"},
      {"follower.replication.throttled.replicas", ""},
      {"index.interval.bytes", "4096"},
      {"leader.replication.throttled.replicas", ""},
      {"local.retention.bytes", "-2"},
      {"local.retention.ms", "-2"},
      {"max.compaction.lag.ms", "9223372036854775807"},
      {"max.decompressed.message.bytes", "2147483639"},
      {"max.message.bytes", "1048588"},
      {"message.timestamp.after.max.ms", "3600000"},
      {"message.timestamp.before.max.ms", "9223372036854775807"},
      {"message.timestamp.type", "CreateTime"},
      {"min.cleanable.dirty.ratio", "0.5"},
      {"min.compaction.lag.ms", "0"},
      {"min.insync.replicas", "1"},
      {"preallocate", "false"},
      {"remote.copy.lag.bytes", "-1"},
      {"remote.copy.lag.ms", "0"},
      {"remote.log.copy.disable", "false"},
      {"remote.log.delete.on.disable", "false"},
      {"remote.storage.enable", "false"},
      {"retention.bytes", "-1"},
      {"retention.ms", "604800000"},
      {"segment.bytes", "1073741824"},
      {"segment.index.bytes", "10485760"},
      {"segment.jitter.ms", "0"},
      {"segment.ms", "604800000"},
      {"unclean.leader.election.enable", "false"},
  };
  return m;
}

TEST_F(StorageTest, DescribeConfigsListsEveryTopicConfigWithValueSourceAndDefault) {
  // A broker-level setting so one key shows STATIC_BROKER_CONFIG.
  start_broker({{"log.retention.bytes", "1073741824"}});
  create_topic("cfg", 1, {{"retention.ms", "3600000"}, {"cleanup.policy", "delete"}});
  auto rk = admin();
  describe_result d = describe_topic_configs(rk.get(), "cfg");
  ASSERT_EQ(d.err, RD_KAFKA_RESP_ERR_NO_ERROR) << d.msg;

  std::vector<std::string> missing;
  for (const auto& [name, def] : kafka44_topic_defaults())
    if (!d.entries.count(name)) missing.push_back(name);
  EXPECT_TRUE(missing.empty()) << "Kafka 4.4 topic configs missing from DescribeConfigs: " << ::testing::PrintToString(missing);
  for (const auto& [name, e] : d.entries) {
    EXPECT_TRUE(kafka44_topic_defaults().count(name)) << "not a Kafka 4.4 topic config: " << name;
    EXPECT_TRUE(e.value.has_value()) << name << " has a null value";
    EXPECT_FALSE(e.sensitive) << name;
  }

  // The override.
  ASSERT_TRUE(d.entries.count("retention.ms"));
  EXPECT_EQ(d.entries["retention.ms"].value, "3600000");
  EXPECT_EQ(d.entries["retention.ms"].source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
  EXPECT_FALSE(d.entries["retention.ms"].is_default);
  // Synonyms (DescribeConfigs v1+, include_synonyms): the topic override first, then the broker default.
  if (!d.entries["retention.ms"].synonyms.empty()) {
    EXPECT_EQ(d.entries["retention.ms"].synonyms.front().name, "retention.ms");
    EXPECT_EQ(d.entries["retention.ms"].synonyms.front().source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
  }
  // The broker-level setting.
  ASSERT_TRUE(d.entries.count("retention.bytes"));
  EXPECT_EQ(d.entries["retention.bytes"].value, "1073741824");
  EXPECT_EQ(d.entries["retention.bytes"].source, RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
  // Every other key: DEFAULT_CONFIG with Kafka's default value.
  for (const auto& [name, def] : kafka44_topic_defaults()) {
    if (name == "retention.ms" || name == "retention.bytes" || name == "cleanup.policy" || !d.entries.count(name))
      continue;
    const auto& e = d.entries[name];
    EXPECT_EQ(e.value, def) << name;
    EXPECT_EQ(e.source, RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG) << name << " source " << rd_kafka_ConfigSource_name(e.source);
    EXPECT_TRUE(e.is_default) << name;
  }
  EXPECT_EQ(d.entries["cleanup.policy"].source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);

  // Unknown topic.
  describe_result u = describe_topic_configs(rk.get(), "no-such-topic");
  EXPECT_EQ(u.err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) << err_name(u.err);
}

TEST_F(StorageTest, AlterConfigsReplacesOverridesAndTakesEffect) {
  start_broker({});
  create_topic("alt", 1, {{"retention.ms", "3600000"}});
  auto rk = admin();

  // Invalid values and unknown keys: INVALID_CONFIG, nothing changes.
  auto [e1, m1] = alter_topic_configs(rk.get(), "alt", {{"retention.ms", "abc"}});
  EXPECT_EQ(e1, RD_KAFKA_RESP_ERR_INVALID_CONFIG) << err_name(e1) << " " << m1;
  auto [e2, m2] = alter_topic_configs(rk.get(), "alt", {{"no.such.config", "1"}});
  EXPECT_EQ(e2, RD_KAFKA_RESP_ERR_INVALID_CONFIG) << err_name(e2) << " " << m2;
  // validate_only: accepted, not applied.
  auto [e3, m3] = alter_topic_configs(rk.get(), "alt", {{"max.message.bytes", "2000"}}, true);
  EXPECT_EQ(e3, RD_KAFKA_RESP_ERR_NO_ERROR) << m3;
  auto d = describe_topic_configs(rk.get(), "alt");
  EXPECT_EQ(d.entries["retention.ms"].value, "3600000");
  EXPECT_EQ(d.entries["max.message.bytes"].value, "1048588");
  auto [e4, m4] = alter_topic_configs(rk.get(), "no-such-topic", {{"retention.ms", "1"}});
  EXPECT_EQ(e4, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) << err_name(e4) << " " << m4;

  // AlterConfigs replaces the whole set: retention.ms goes back to its default.
  auto [e5, m5] = alter_topic_configs(rk.get(), "alt", {{"max.message.bytes", "2000"}});
  ASSERT_EQ(e5, RD_KAFKA_RESP_ERR_NO_ERROR) << m5;
  d = describe_topic_configs(rk.get(), "alt");
  EXPECT_EQ(d.entries["max.message.bytes"].value, "2000");
  EXPECT_EQ(d.entries["max.message.bytes"].source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
  EXPECT_EQ(d.entries["retention.ms"].value, "604800000");
  EXPECT_EQ(d.entries["retention.ms"].source, RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);

  // It takes effect: a 5000-byte record is now too large, a 500-byte one is fine.
  producer prod(broker_->bootstrap(), {{"acks", "all"}, {"linger.ms", "0"}, {"message.timeout.ms", "10000"}});
  prod.produce("alt", 0, 0, std::nullopt, std::string(5000, 'x'), {});
  ASSERT_TRUE(prod.flush(15s));
  EXPECT_EQ(prod.reports()[0].err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) << err_name(prod.reports()[0].err);
  prod.produce("alt", 0, 1, std::nullopt, std::string(500, 'y'), {});
  ASSERT_TRUE(prod.flush(15s));
  EXPECT_EQ(prod.reports()[1].err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(prod.reports()[1].err);
  EXPECT_EQ(prod.reports()[1].offset, 0);

  // And it survives a restart (kill -9 too).
  broker_->kill9();
  broker_->start();
  auto rk2 = admin();
  d = describe_topic_configs(rk2.get(), "alt");
  EXPECT_EQ(d.entries["max.message.bytes"].value, "2000");
  EXPECT_EQ(d.entries["max.message.bytes"].source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
  EXPECT_EQ(d.entries["retention.ms"].source, RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
}

TEST_F(StorageTest, DeleteRecordsMovesLowWatermarkAndPersistsAcrossKill9) {
  start_broker({});
  const std::string topic = "del";
  create_topic(topic, 2, {{"internal.segment.bytes", "16384"}});
  std::vector<std::string> values;
  for (size_t i = 0; i < 1000; ++i) values.push_back(padded_value(i, 100));
  ASSERT_EQ(produce(topic, 0, values, {}, 50).back(), 999);
  ASSERT_EQ(produce(topic, 1, values, {}, 50).back(), 999);
  const size_t segments_before = segment_files(topic, 0, ".log").size();
  ASSERT_GE(segments_before, 4u);

  auto rk = admin();
  auto out = delete_records(rk.get(), topic, {{0, 400}, {1, -1}});
  ASSERT_EQ(out.err, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(out.err);
  ASSERT_EQ(out.partitions.size(), 2u);
  EXPECT_EQ(out.partitions[0].first, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(out.partitions[0].first);
  EXPECT_EQ(out.partitions[0].second, 400);
  EXPECT_EQ(out.partitions[1].first, RD_KAFKA_RESP_ERR_NO_ERROR) << err_name(out.partitions[1].first);
  EXPECT_EQ(out.partitions[1].second, 1000);
  EXPECT_EQ(watermarks(topic, 0), std::make_pair(int64_t{400}, int64_t{1000}));
  EXPECT_EQ(watermarks(topic, 1), std::make_pair(int64_t{1000}, int64_t{1000}));
  EXPECT_LT(segment_files(topic, 0, ".log").size(), segments_before) << "whole segments below 400 are deleted";

  // Beyond the high watermark: OFFSET_OUT_OF_RANGE; the low watermark does not move backwards.
  auto bad = delete_records(rk.get(), topic, {{0, 5000}});
  EXPECT_EQ(bad.partitions[0].first, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) << err_name(bad.partitions[0].first);
  auto back = delete_records(rk.get(), topic, {{0, 100}});
  EXPECT_EQ(back.partitions[0].first, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(back.partitions[0].second, 400) << "DeleteRecords below the log start offset leaves it";

  auto check_after = [&](const char* when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(watermarks(topic, 0), std::make_pair(int64_t{400}, int64_t{1000}));
    EXPECT_EQ(watermarks(topic, 1), std::make_pair(int64_t{1000}, int64_t{1000}));
    consumed c = consume_all(broker_->bootstrap(), topic, 1, 600, 30s);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();  // auto.offset.reset=error: BEGINNING is 400
    ASSERT_EQ(c.by_partition[0].size(), 600u);
    EXPECT_EQ(c.by_partition[0].front().offset, 400);
    EXPECT_EQ(c.by_partition[0].front().value, values[400]);
    // Fetching below the log start offset: OFFSET_OUT_OF_RANGE.
    consumed below = consume_all(broker_->bootstrap(), topic, 1, 1, 10s, 100);
    ASSERT_FALSE(below.errors.empty());
    const std::string& e = below.errors.front();
    EXPECT_TRUE(e.find("OFFSET_OUT_OF_RANGE") != std::string::npos || e.find("ffset out of range") != std::string::npos)
        << e;
  };
  check_after("before the kill");
  broker_->kill9();
  broker_->start();
  check_after("after kill -9 and restart");
  // Appends continue at 1000 on both partitions.
  EXPECT_EQ(produce(topic, 0, {"a"}, {}, 1).front(), 1000);
  EXPECT_EQ(produce(topic, 1, {"b"}, {}, 1).front(), 1000);
}

}  // namespace
}  // namespace sluice::itest
