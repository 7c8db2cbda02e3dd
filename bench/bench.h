// sluice_bench's shared declarations (the program: sluice_bench.cc; bench/README.md). Everything here
// is the librdkafka C API (Debian's 2.0.2) plus the standard library; one process, no broker code.
//
//   bench_options.cc    options, usage(), parse()
//   bench_clients.cc    target (a broker or the in-process mock cluster), producer and tail consumer
//   bench_report.cc     result: one output line (and JSON object) per mode; fresh topic names
//   bench_workloads.cc  run_produce, run_consume, run_latency
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace sluice::bench {

using steady = std::chrono::steady_clock;

inline double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

/// The steady clock in nanoseconds (the latency mode's send stamp).
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

struct options {
  std::string bootstrap;          // empty with --mock
  bool mock = false;
  int mock_brokers = 1;
  std::vector<std::string> modes{"produce"};
  std::string topic;              // default: generated, unique per run and mode
  long records = 100000;
  int size = 100;
  long keys = 0;                  // produce: key i % keys (0: every record its own key, i)
  std::string acks = "1";
  std::string linger_ms;          // empty: librdkafka's default
  std::string compression = "none";
  int partitions = 1;
  int replication_factor = 1;     // of the fresh topics
  std::vector<std::pair<std::string, std::string>> topic_configs;  // --topic-config key=value
  double rate = 1000;             // latency mode: records/s
  double duration = 5;            // latency mode: seconds of sending
  double timeout = 60;            // bound on any one phase, seconds
  std::string label;              // free text copied into the output (e.g. "sluice", "mock")
  bool json = false;
  std::vector<std::pair<std::string, std::string>> extra;  // -X key=value
};

/// Prints the usage (stdout for code 0, else stderr) and exits with `code`.
[[noreturn]] void usage(int code);
/// The command line as options; bad or missing arguments exit 2 through usage().
options parse(int argc, char** argv);

/// rd_kafka_conf_set; throws std::runtime_error naming the property when librdkafka refuses it.
void conf_set(rd_kafka_conf_t* conf, const std::string& k, const std::string& v);

// Holds the in-process mock cluster (and the handle it needs) when --mock is given.
struct target {
  rd_kafka_t* mock_owner = nullptr;
  rd_kafka_mock_cluster_t* mcluster = nullptr;
  std::string bootstrap;

  explicit target(const options& o);  // throws std::runtime_error when the mock cannot be made
  ~target();
  target(const target&) = delete;
  target& operator=(const target&) = delete;

  // A fresh topic with `partitions` partitions, `replication_factor` replicas, `topic_configs`.
  void create_topic(const options& o, const std::string& topic);
  // bootstrap.servers, log_level 3 and every -X property; the caller owns the result.
  rd_kafka_conf_t* base_conf(const options& o) const;
};

struct dr_state {
  std::atomic<long> ok{0}, failed{0};
  // latency mode: produce-to-ack times (ns) of records sent with their send time as msg_opaque;
  // delivery reports run on the thread calling rd_kafka_poll/flush (the sending thread).
  std::vector<int64_t> ack_lat;
  std::string first_error;
  steady::time_point last_dr{};
};

/// A producer (acks, compression, linger.ms of `o`, a queue big enough for the run) whose delivery
/// reports count into `st`; throws std::runtime_error when librdkafka refuses the configuration.
rd_kafka_t* make_producer(const options& o, const target& t, dr_state* st);

// A legacy (group-less) consumer on every partition of `topic` from `start[p]`, into one queue.
struct tail_consumer {
  rd_kafka_t* rk = nullptr;
  rd_kafka_topic_t* rkt = nullptr;
  rd_kafka_queue_t* q = nullptr;
  int partitions = 0;

  tail_consumer(const options& o, const target& t, const std::string& topic,
                const std::vector<int64_t>& start);
  ~tail_consumer();
  tail_consumer(const tail_consumer&) = delete;
  tail_consumer& operator=(const tail_consumer&) = delete;
};

// Fields of one result line, in order.
struct result {
  std::vector<std::pair<std::string, std::string>> f;
  void add(const std::string& k, const std::string& v) { f.emplace_back(k, v); }
  void add(const std::string& k, double v, int prec = 1) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    f.emplace_back(k, b);
  }
  // `k=v ...` on one line; with json also `JSON {...}` (numbers bare, text quoted); flushes stdout.
  void print(bool json) const;
};

/// The fields every mode prints first: mode, label, target, topic and the client settings.
result common_fields(const options& o, const char* mode, const std::string& topic);

/// --topic when given, else `bench-<mode>-<pid>-<time>` (fresh per run and mode).
std::string fresh_topic(const options& o, const char* mode);

// Each mode prints its result line and returns true when every record was delivered / received.
// Produce o.records records; returns true when all were delivered.
bool run_produce(const options& o, target& t, const std::string& topic);
bool run_consume(const options& o, target& t, const std::string& topic);
// End-to-end latency at a fixed rate: producer and consumer in this process, same clock.
bool run_latency(const options& o, target& t, const std::string& topic);

}  // namespace sluice::bench
