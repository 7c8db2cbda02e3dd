// Idempotent producer (KIP-98) against the real broker: librdkafka with enable.idempotence=true produces
// 100,000 numbered records while the broker drops Produce responses on purpose (a fault rule of the HTTP
// side, POST /v1/faults {"api":"Produce","action":"close","rate":0.15}, closes the connection after the
// append, before the response), so the client retries batches that are already in the log. Then everything is consumed:
// every number must appear exactly once, in order per partition. The second test adds a kill -9 and a
// restart of the broker in the middle: retries of batches written before the kill must be deduplicated
// by the producer state the broker rebuilds from its log.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <iostream>
#include <regex>
#include <set>

#include "broker_process.h"
#include "rdkafka_util.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

constexpr int kPartitions = 3;
constexpr int kRecords = 100'000;
constexpr const char* kDropRate = "0.15";
constexpr const char* kSeed = "20240607";

// Delivery and statistics of one idempotent producer (callbacks run on the polling thread).
struct producer_run {
  size_t acked = 0;
  size_t failed = 0;
  std::map<std::string, size_t> errors;
  std::string last_stats;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* run = static_cast<producer_run*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++run->acked;
  } else {
    ++run->failed;
    ++run->errors[rd_kafka_err2name(m->err)];
  }
}

int on_stats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  static_cast<producer_run*>(opaque)->last_stats.assign(json, len);
  return 0;  // librdkafka frees json
}

// Retry figures from a librdkafka statistics JSON. librdkafka does not count a batch re-sent after a
// disconnect in "txretries" (that is for retriable error responses): it shows as messages transmitted
// more than once (partition "txmsgs" above "msgs") and as broker "disconnects".
struct retry_figures {
  int64_t messages_transmitted = 0;  // sum of partition "txmsgs" (retransmissions included)
  int64_t request_retries = 0;       // sum of broker "txretries"
  int64_t disconnects = 0;           // sum of broker "disconnects"
  int64_t produce_requests_sent = 0; // sum of broker "tx"
  int64_t responses_received = 0;    // sum of broker "rx"
};

retry_figures parse_stats(const std::string& stats) {
  retry_figures f;
  if (stats.empty()) return f;
  boost::system::error_code ec;
  auto root = boost::json::parse(stats, ec);
  if (ec || !root.is_object()) return f;
  auto num = [](const boost::json::object& o, const char* k) -> int64_t {
    const auto* v = o.if_contains(k);
    return v && v->is_number() ? v->to_number<int64_t>() : 0;
  };
  if (const auto* brokers = root.as_object().if_contains("brokers"); brokers && brokers->is_object()) {
    for (const auto& [name, b] : brokers->as_object()) {
      f.request_retries += num(b.as_object(), "txretries");
      f.disconnects += num(b.as_object(), "disconnects");
      f.produce_requests_sent += num(b.as_object(), "tx");
      f.responses_received += num(b.as_object(), "rx");
    }
  }
  if (const auto* topics = root.as_object().if_contains("topics"); topics && topics->is_object()) {
    for (const auto& [tname, t] : topics->as_object()) {
      const auto* parts = t.as_object().if_contains("partitions");
      if (!parts || !parts->is_object()) continue;
      for (const auto& [pname, p] : parts->as_object()) {
        if (num(p.as_object(), "partition") < 0) continue;  // the unassigned pseudo-partition -1
        f.messages_transmitted += num(p.as_object(), "txmsgs");
      }
    }
  }
  return f;
}

// Batches written before the restart (last offset < the log end offset the restarted broker loaded) whose
// retry the restarted broker deduplicated: parsed from the broker log after the "(run 2)" marker.
size_t pre_restart_duplicates(const std::string& log) {
  const auto run2 = log.find("(run 2)");
  if (run2 == std::string::npos) return 0;
  const std::string tail = log.substr(run2);
  std::map<std::string, int64_t> loaded_leo;  // partition dir -> LEO at load
  static const std::regex loaded(R"(loaded (\S+): .*log end offset (\d+))");
  for (auto it = std::sregex_iterator(tail.begin(), tail.end(), loaded); it != std::sregex_iterator(); ++it)
    loaded_leo.emplace((*it)[1].str(), std::stoll((*it)[2].str()));
  static const std::regex dup(R"(storage: (\S+): duplicate of batch \[(\d+), (\d+)\])");
  size_t n = 0;
  for (auto it = std::sregex_iterator(tail.begin(), tail.end(), dup); it != std::sregex_iterator(); ++it) {
    auto l = loaded_leo.find((*it)[1].str());
    if (l != loaded_leo.end() && std::stoll((*it)[3].str()) < l->second) ++n;
  }
  return n;
}

size_t count_occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

class IdempotenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (broker_binary().empty()) GTEST_SKIP() << "no sluice binary: set SLUICE_BINARY";
    broker_ = std::make_unique<broker_process>(std::map<std::string, std::string>{
        {"sluice.test.faults.enable", "true"},
        {"sluice.test.faults.seed", kSeed},
        {"auto.create.topics.enable", "false"},
        {"sluice.log.level", "debug"}});  // the log counts dropped responses and deduplicated batches
    broker_->start();
    add_close_fault();
  }
  /// Makes a fraction kDropRate of the Produce requests close their connection after the append (faults are
  /// in memory: again after a restart).
  void add_close_fault() {
    std::string body;
    const int status = broker_->http("POST", "/v1/faults",
                                     std::string("{\"api\":\"Produce\",\"action\":\"close\",\"rate\":") + kDropRate + "}", &body);
    ASSERT_EQ(status, 201) << body;
    std::cout << "fault rule: " << body;
  }
  void TearDown() override {
    if (broker_ && HasFailure()) {
      broker_->keep();
      std::cout << "broker data kept in " << broker_->dir() << "\n";
    }
  }

  void create_topic(const std::string& topic) {
    rk_ptr admin = make_client(RD_KAFKA_PRODUCER, make_conf(broker_->bootstrap(), {}));
    auto res = create_topics(admin.get(), {{topic, kPartitions}});
    ASSERT_EQ(res.size(), 1u);
    ASSERT_EQ(res[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << res[0].msg;
  }

  // Produces numbers [0, kRecords) to partition n % kPartitions. `midway` runs once after half the
  // records were enqueued (and the producer was polled), e.g. to kill and restart the broker.
  producer_run produce_numbers(const std::string& topic, const std::function<void()>& midway = {}) {
    producer_run run;
    rd_kafka_conf_t* conf = make_conf(broker_->bootstrap(), {{"enable.idempotence", "true"},
                                                             {"acks", "all"},
                                                             {"linger.ms", "5"},
                                                             {"batch.num.messages", "500"},
                                                             {"message.timeout.ms", "120000"},
                                                             {"retry.backoff.ms", "20"},
                                                             {"statistics.interval.ms", "100"}});
    rd_kafka_conf_set_opaque(conf, &run);
    rd_kafka_conf_set_dr_msg_cb(conf, &on_delivery);
    rd_kafka_conf_set_stats_cb(conf, &on_stats);
    rk_ptr rk = make_client(RD_KAFKA_PRODUCER, conf);
    for (int n = 0; n < kRecords; ++n) {
      const std::string value = std::to_string(n);
      for (int attempt = 0; attempt < 100000; ++attempt) {
        auto err = rd_kafka_producev(rk.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(n % kPartitions),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                     RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          ADD_FAILURE() << "produce " << n << ": " << rd_kafka_err2name(err);
          return run;
        }
        rd_kafka_poll(rk.get(), 10);
      }
      if (n % 1000 == 0) rd_kafka_poll(rk.get(), 0);
      if (n == kRecords / 2 && midway) {
        // Let a good part of what was enqueued reach the log first.
        for (int i = 0; i < 100 && run.acked < static_cast<size_t>(kRecords / 4); ++i) rd_kafka_poll(rk.get(), 50);
        midway();
      }
    }
    const auto deadline = clock_type::now() + 180s;
    while (rd_kafka_outq_len(rk.get()) > 0 && clock_type::now() < deadline) rd_kafka_poll(rk.get(), 100);
    EXPECT_EQ(rd_kafka_outq_len(rk.get()), 0) << "producer did not finish within 180 s";
    for (int i = 0; i < 5; ++i) rd_kafka_poll(rk.get(), 100);  // a last statistics callback
    return run;
  }

  // Consumes everything and checks each number exactly once, increasing within each partition.
  void verify_exactly_once(const std::string& topic) {
    auto got = consume_all(broker_->bootstrap(), topic, kPartitions, kRecords, 120s);
    ASSERT_TRUE(got.errors.empty()) << got.errors.front();
    std::vector<int> seen(kRecords, 0);
    size_t duplicates = 0, out_of_order = 0, foreign = 0, wrong_partition = 0;
    for (const auto& [p, records] : got.by_partition) {
      int64_t prev = -1;
      for (const auto& r : records) {
        const int64_t n = r.value ? std::stoll(*r.value) : -1;
        if (n < 0 || n >= kRecords) {
          ++foreign;
          continue;
        }
        if (n % kPartitions != p) ++wrong_partition;
        if (seen[static_cast<size_t>(n)]++ > 0) ++duplicates;
        if (n <= prev) ++out_of_order;
        prev = n;
      }
    }
    const auto missing = static_cast<size_t>(std::count(seen.begin(), seen.end(), 0));
    std::cout << "consumed " << got.total() << " records: duplicates " << duplicates << ", missing (gaps) "
              << missing << ", out of order " << out_of_order << "\n";
    EXPECT_EQ(got.total(), static_cast<size_t>(kRecords));
    EXPECT_EQ(duplicates, 0u);
    EXPECT_EQ(missing, 0u);
    EXPECT_EQ(out_of_order, 0u);
    EXPECT_EQ(foreign, 0u);
    EXPECT_EQ(wrong_partition, 0u);
  }

  void report(const producer_run& run) {
    if (std::getenv("SLUICE_IDEM_DUMP_STATS")) std::cout << "last librdkafka stats: " << run.last_stats << "\n";
    const auto dropped = count_occurrences(broker_->log_text(), ": close Produce v");
    const auto f = parse_stats(run.last_stats);
    std::cout << "producer: acked " << run.acked << ", failed " << run.failed << "\n"
              << "broker: Produce responses dropped by the fault rule " << dropped << ", batches deduplicated "
              << count_occurrences(broker_->log_text(), "not written") << "\n"
              << "librdkafka: requests sent " << f.produce_requests_sent << ", responses received "
              << f.responses_received << ", disconnects " << f.disconnects << ", txretries " << f.request_retries
              << ", messages transmitted " << f.messages_transmitted << " for " << kRecords << " records ("
              << (f.messages_transmitted - kRecords) << " re-sent)\n";
    for (const auto& [e, n] : run.errors) std::cout << "  delivery error " << e << " x" << n << "\n";
    EXPECT_EQ(run.acked, static_cast<size_t>(kRecords));
    EXPECT_EQ(run.failed, 0u);
    EXPECT_GT(dropped, 0u) << "the fault hook provoked no retry";
    EXPECT_GT(count_occurrences(broker_->log_text(), "not written"), 0u) << "no retry reached the broker as a duplicate";
    EXPECT_GT(f.disconnects, 0);
  }

  std::unique_ptr<broker_process> broker_;
};

TEST_F(IdempotenceTest, ExactlyOnceWhileResponsesAreDropped) {
  const std::string topic = "idem-drop";
  create_topic(topic);
  auto run = produce_numbers(topic);
  report(run);
  verify_exactly_once(topic);
}

TEST_F(IdempotenceTest, ExactlyOnceAcrossKill9AndRestart) {
  const std::string topic = "idem-kill";
  create_topic(topic);
  bool restarted = false;
  auto run = produce_numbers(topic, [&] {
    broker_->kill9();
    std::this_thread::sleep_for(300ms);  // in-flight requests fail; the client queues retries
    broker_->start();
    add_close_fault();
    restarted = true;
  });
  ASSERT_TRUE(restarted);
  report(run);
  verify_exactly_once(topic);
  // The restart rebuilt the producer state from the log (no clean-close snapshot after kill -9). Whether a
  // batch in flight at the kill was already written depends on timing: printed, not asserted (the wire
  // test idempotence_wire_test.py checks a retry after kill -9 deterministically).
  std::cout << "retries of batches written before the kill, deduplicated after the restart: "
            << pre_restart_duplicates(broker_->log_text()) << "\n";
}

}  // namespace
}  // namespace sluice::itest
