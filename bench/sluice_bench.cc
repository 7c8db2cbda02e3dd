// sluice_bench: produce / consume / end-to-end latency benchmark on librdkafka's C API, in the spirit
// of Kafka's kafka-producer-perf-test / EndToEndLatency and librdkafka's rdkafka_performance.
//
// Targets: a running broker (--bootstrap HOST:PORT) or librdkafka's own in-process mock cluster
// (--mock, rd_kafka_mock_cluster_new from rdkafka_mock.h) so both can be measured side by side with
// the same client code and settings.
//
// Modes (--mode):
//   produce   N records of S bytes to a fresh topic of P partitions (record i -> partition i % P);
//             time from the first produce call to the last delivery report.
//   consume   produce (unmeasured unless --mode produce,consume) then read all N back with the
//             legacy (group-less) consumer from the beginning of every partition. With --topic and
//             without produce: no fill, read the first N records of that existing topic (P partitions).
//   latency   a consumer tails a fresh topic while a producer sends R records/s for D seconds; each
//             value starts with the send time (steady clock, ns); latency = receive - send.
//   create    only create --topic with --partitions partitions (setup for other probes).
//   Modes combine: --mode produce,consume.
//
// Output: one human line per mode and, with --json, one JSON object per mode on stdout (the bench
// script parses those). Exit status 0 when every record was delivered / received, 1 otherwise,
// 2 on bad arguments.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

int64_t now_ns() {
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

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: sluice_bench (--bootstrap HOST:PORT | --mock [--mock-brokers N]) [options]\n"
               "  --mode produce|consume|latency|create[,...]   default produce\n"
               "  --records N        records to produce/consume (default 100000)\n"
               "  --size S           value size in bytes (default 100)\n"
               "  --acks A           0, 1, -1/all (default 1)\n"
               "  --linger-ms L      producer linger.ms (default: librdkafka's, 5 in 2.0.2)\n"
               "  --compression C    none, gzip, snappy, lz4, zstd (default none)\n"
               "  --partitions P     partitions of the fresh topic (default 1)\n"
               "  --replication-factor F  replication factor of the fresh topic (default 1)\n"
               "  --topic-config k=v topic config of the fresh topic (repeatable), e.g. min.insync.replicas=2\n"
               "  --rate R           latency mode: records per second (default 1000)\n"
               "  --duration D       latency mode: seconds of sending (default 5)\n"
               "  --topic T          topic name (default: generated, fresh per mode); consume alone reads it as is\n"
               "  --timeout SEC      bound on each phase (default 60)\n"
               "  --label TEXT       copied to the output\n"
               "  -X key=value       any librdkafka property, for all clients\n"
               "  --json             also print one JSON object per mode\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(2);
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bootstrap") o.bootstrap = need(i);
    else if (a == "--mock") o.mock = true;
    else if (a == "--mock-brokers") o.mock_brokers = std::stoi(need(i));
    else if (a == "--mode") {
      o.modes.clear();
      std::string m = need(i);
      for (size_t p = 0; p <= m.size();) {
        size_t c = m.find(',', p);
        if (c == std::string::npos) c = m.size();
        if (c > p) o.modes.push_back(m.substr(p, c - p));
        p = c + 1;
      }
    } else if (a == "--records") o.records = std::stol(need(i));
    else if (a == "--size") o.size = std::stoi(need(i));
    else if (a == "--acks") o.acks = need(i);
    else if (a == "--linger-ms") o.linger_ms = need(i);
    else if (a == "--compression") o.compression = need(i);
    else if (a == "--partitions") o.partitions = std::stoi(need(i));
    else if (a == "--replication-factor") o.replication_factor = std::stoi(need(i));
    else if (a == "--topic-config") {
      std::string kv = need(i);
      auto eq = kv.find('=');
      if (eq == std::string::npos) usage(2);
      o.topic_configs.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    else if (a == "--rate") o.rate = std::stod(need(i));
    else if (a == "--duration") o.duration = std::stod(need(i));
    else if (a == "--topic") o.topic = need(i);
    else if (a == "--timeout") o.timeout = std::stod(need(i));
    else if (a == "--label") o.label = need(i);
    else if (a == "--json") o.json = true;
    else if (a == "-X") {
      std::string kv = need(i);
      auto eq = kv.find('=');
      if (eq == std::string::npos) usage(2);
      o.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "-h" || a == "--help") usage(0);
    else {
      std::fprintf(stderr, "unknown argument: %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.mock == !o.bootstrap.empty()) {
    std::fprintf(stderr, "give exactly one of --bootstrap and --mock\n");
    usage(2);
  }
  if (o.acks == "all") o.acks = "-1";
  if (o.records <= 0 || o.size < 0 || o.partitions <= 0 || o.rate <= 0) usage(2);
  for (auto& m : o.modes)
    if (m != "produce" && m != "consume" && m != "latency" && m != "create") usage(2);
  return o;
}

void conf_set(rd_kafka_conf_t* conf, const std::string& k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
    throw std::runtime_error("config " + k + "=" + v + ": " + err);
}

// Holds the in-process mock cluster (and the handle it needs) when --mock is given.
struct target {
  rd_kafka_t* mock_owner = nullptr;
  rd_kafka_mock_cluster_t* mcluster = nullptr;
  std::string bootstrap;

  explicit target(const options& o) {
    if (!o.mock) {
      bootstrap = o.bootstrap;
      return;
    }
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    conf_set(conf, "log_level", "3");
    char err[512];
    mock_owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (mock_owner == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
    mcluster = rd_kafka_mock_cluster_new(mock_owner, o.mock_brokers);
    if (mcluster == nullptr) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    bootstrap = rd_kafka_mock_cluster_bootstraps(mcluster);
  }
  ~target() {
    if (mcluster != nullptr) rd_kafka_mock_cluster_destroy(mcluster);
    if (mock_owner != nullptr) rd_kafka_destroy(mock_owner);
  }
  target(const target&) = delete;
  target& operator=(const target&) = delete;

  // A fresh topic with `partitions` partitions, `replication_factor` replicas, `topic_configs`.
  void create_topic(const options& o, const std::string& topic) {
    if (mcluster != nullptr) {
      auto e = rd_kafka_mock_topic_create(mcluster, topic.c_str(), o.partitions,
                                          o.replication_factor);
      if (e) throw std::runtime_error("mock topic create: " + std::string(rd_kafka_err2str(e)));
      return;
    }
    rd_kafka_conf_t* conf = base_conf(o);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), o.partitions, o.replication_factor,
                                                    err, sizeof err);
    if (nt == nullptr) throw std::runtime_error(std::string("NewTopic: ") + err);
    for (auto& [k, v] : o.topic_configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t* ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(ao, 10000, err, sizeof err);
    rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, static_cast<int>(o.timeout * 1000));
    std::string problem;
    if (ev == nullptr) problem = "CreateTopics timed out";
    else if (rd_kafka_event_error(ev)) problem = rd_kafka_event_error_string(ev);
    else {
      size_t n = 0;
      const rd_kafka_topic_result_t** res =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      if (n == 1 && rd_kafka_topic_result_error(res[0]) &&
          rd_kafka_topic_result_error(res[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
        problem = rd_kafka_err2str(rd_kafka_topic_result_error(res[0]));
    }
    if (ev != nullptr) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_destroy(rk);
    if (!problem.empty()) throw std::runtime_error("CreateTopics " + topic + ": " + problem);
  }

  rd_kafka_conf_t* base_conf(const options& o) const {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", bootstrap);
    conf_set(conf, "log_level", "3");
    for (auto& [k, v] : o.extra) conf_set(conf, k, v);
    return conf;
  }
};

struct dr_state {
  std::atomic<long> ok{0}, failed{0};
  // latency mode: produce-to-ack times (ns) of records sent with their send time as msg_opaque;
  // delivery reports run on the thread calling rd_kafka_poll/flush (the sending thread).
  std::vector<int64_t> ack_lat;
  std::string first_error;
  steady::time_point last_dr{};
};

void dr_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<dr_state*>(opaque);
  if (m->err) {
    if (st->failed.fetch_add(1) == 0) st->first_error = rd_kafka_err2str(m->err);
  } else {
    st->ok.fetch_add(1);
    if (m->_private != nullptr)
      st->ack_lat.push_back(now_ns() - static_cast<int64_t>(reinterpret_cast<intptr_t>(m->_private)));
  }
  st->last_dr = steady::now();
}

rd_kafka_t* make_producer(const options& o, const target& t, dr_state* st) {
  rd_kafka_conf_t* conf = t.base_conf(o);
  conf_set(conf, "acks", o.acks);
  conf_set(conf, "compression.type", o.compression);
  if (!o.linger_ms.empty()) conf_set(conf, "linger.ms", o.linger_ms);
  // Let the producer queue hold the whole run so produce() rarely sees QUEUE_FULL (as
  // rdkafka_performance does); the broker, not the local queue, is what is measured.
  conf_set(conf, "queue.buffering.max.messages", "1000000");
  conf_set(conf, "queue.buffering.max.kbytes", "1048576");
  for (auto& [k, v] : o.extra) conf_set(conf, k, v);  // -X wins
  rd_kafka_conf_set_opaque(conf, st);
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  return rk;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) r += ' ';
    else r += c;
  }
  return r;
}

// Fields of one result line, in order.
struct result {
  std::vector<std::pair<std::string, std::string>> f;
  void add(const std::string& k, const std::string& v) { f.emplace_back(k, v); }
  void add(const std::string& k, double v, int prec = 1) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    f.emplace_back(k, b);
  }
  void print(bool json) const {
    std::string line;
    for (auto& [k, v] : f) line += (line.empty() ? "" : " ") + k + "=" + v;
    std::printf("%s\n", line.c_str());
    if (json) {
      std::string j = "{";
      for (auto& [k, v] : f) {
        bool num = !v.empty() && v.find_first_not_of("0123456789.-e") == std::string::npos;
        j += (j.size() > 1 ? ", " : "") + ("\"" + k + "\": ") + (num ? v : "\"" + json_escape(v) + "\"");
      }
      std::printf("JSON %s}\n", j.c_str());
    }
    std::fflush(stdout);
  }
};

result common_fields(const options& o, const char* mode, const std::string& topic) {
  result r;
  r.add("mode", mode);
  r.add("label", o.label.empty() ? (o.mock ? "mock" : "broker") : o.label);
  r.add("target", o.mock ? "mock(" + std::to_string(o.mock_brokers) + ")" : o.bootstrap);
  r.add("topic", topic);
  r.add("partitions", std::to_string(o.partitions));
  r.add("replication_factor", std::to_string(o.replication_factor));
  r.add("size", std::to_string(o.size));
  r.add("acks", o.acks);
  r.add("linger_ms", o.linger_ms.empty() ? "default" : o.linger_ms);
  r.add("compression", o.compression);
  return r;
}

std::string fresh_topic(const options& o, const char* mode) {
  if (!o.topic.empty()) return o.topic;
  return std::string("bench-") + mode + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000000);
}

std::string make_payload(int size) {
  // Random letters: compressible a little, like kafka-producer-perf-test's payload.
  std::mt19937 rng(42);
  std::string p(static_cast<size_t>(size), 'x');
  for (auto& c : p) c = static_cast<char>('A' + rng() % 26);
  return p;
}

// Produce o.records records; returns true when all were delivered.
bool run_produce(const options& o, target& t, const std::string& topic) {
  dr_state st;
  rd_kafka_t* rk = make_producer(o, t, &st);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  std::string payload = make_payload(o.size);
  // Warm up: metadata and connection before the clock starts.
  rd_kafka_metadata_t const* md = nullptr;
  rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  if (md != nullptr) rd_kafka_metadata_destroy(md);

  auto t0 = steady::now();
  long queue_full = 0;
  bool timed_out = false;
  for (long i = 0; i < o.records; ++i) {
    char key[24];
    int klen = std::snprintf(key, sizeof key, "%ld", i);
    for (;;) {
      if (rd_kafka_produce(rkt, static_cast<int32_t>(i % o.partitions), 0 /* no copy: shared */,
                           payload.data(), payload.size(), key, klen, nullptr) == 0)
        break;
      if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::fprintf(stderr, "produce: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
        st.failed++;
        break;
      }
      ++queue_full;
      rd_kafka_poll(rk, 1);
      if (seconds_since(t0) > o.timeout) { timed_out = true; break; }
    }
    if (timed_out) break;
    if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  while (st.ok + st.failed < o.records && !timed_out) {
    rd_kafka_poll(rk, 10);
    if (seconds_since(t0) > o.timeout) timed_out = true;
  }
  double secs = std::chrono::duration<double>(st.last_dr - t0).count();
  if (secs <= 0) secs = seconds_since(t0);
  result r = common_fields(o, "produce", topic);
  r.add("records", std::to_string(st.ok.load()));
  r.add("failed", std::to_string(st.failed.load()));
  r.add("seconds", secs, 3);
  r.add("records_per_s", st.ok / secs, 0);
  r.add("mb_per_s", st.ok * static_cast<double>(o.size) / secs / 1e6, 2);
  r.add("queue_full_waits", std::to_string(queue_full));
  if (timed_out) r.add("error", "timed out");
  else if (st.failed) r.add("error", st.first_error);
  r.print(o.json);
  rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_flush(rk, 1000);
  rd_kafka_destroy(rk);
  return !timed_out && st.failed == 0 && st.ok == o.records;
}

// A legacy (group-less) consumer on every partition of `topic` from `start[p]`, into one queue.
struct tail_consumer {
  rd_kafka_t* rk = nullptr;
  rd_kafka_topic_t* rkt = nullptr;
  rd_kafka_queue_t* q = nullptr;
  int partitions = 0;

  tail_consumer(const options& o, const target& t, const std::string& topic,
                const std::vector<int64_t>& start) {
    rd_kafka_conf_t* conf = t.base_conf(o);
    conf_set(conf, "enable.partition.eof", "true");
    conf_set(conf, "fetch.wait.max.ms", "100");
    for (auto& [k, v] : o.extra) conf_set(conf, k, v);
    char err[512];
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
    rd_kafka_topic_conf_t* tc = rd_kafka_topic_conf_new();
    rd_kafka_topic_conf_set(tc, "auto.offset.reset", "earliest", err, sizeof err);
    rkt = rd_kafka_topic_new(rk, topic.c_str(), tc);
    q = rd_kafka_queue_new(rk);
    partitions = static_cast<int>(start.size());
    for (int p = 0; p < partitions; ++p)
      if (rd_kafka_consume_start_queue(rkt, p, start[p], q) != 0)
        throw std::runtime_error("consume_start: " +
                                 std::string(rd_kafka_err2str(rd_kafka_last_error())));
  }
  ~tail_consumer() {
    for (int p = 0; p < partitions; ++p) rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
  }
  tail_consumer(const tail_consumer&) = delete;
  tail_consumer& operator=(const tail_consumer&) = delete;
};

bool run_consume(const options& o, target& t, const std::string& topic) {
  std::vector<int64_t> start(static_cast<size_t>(o.partitions), RD_KAFKA_OFFSET_BEGINNING);
  auto t0 = steady::now();
  tail_consumer c(o, t, topic, start);
  std::vector<rd_kafka_message_t*> batch(10000);
  long got = 0;
  int64_t bytes = 0;
  std::string error;
  steady::time_point first{}, last{};
  while (got < o.records) {
    if (seconds_since(t0) > o.timeout) { error = "timed out"; break; }
    // Ask for no more than what is left: a batch call waits its whole timeout for a full batch.
    size_t want = std::min(batch.size(), static_cast<size_t>(o.records - got));
    ssize_t n = rd_kafka_consume_batch_queue(c.q, 100, batch.data(), want);
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = batch[static_cast<size_t>(i)];
      if (m->err == 0) {
        if (got == 0) first = steady::now();
        ++got;
        bytes += static_cast<int64_t>(m->len);
        last = steady::now();
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && error.empty()) {
        error = rd_kafka_message_errstr(m);
      }
      rd_kafka_message_destroy(m);
    }
  }
  double secs = std::chrono::duration<double>(last - t0).count();
  if (secs <= 0) secs = seconds_since(t0);
  result r = common_fields(o, "consume", topic);
  r.add("records", std::to_string(got));
  r.add("seconds", secs, 3);
  r.add("records_per_s", got / secs, 0);
  r.add("mb_per_s", static_cast<double>(bytes) / secs / 1e6, 2);
  if (!error.empty()) r.add("error", error);
  r.print(o.json);
  return got >= o.records && error.empty();
}

// End-to-end latency at a fixed rate: producer and consumer in this process, same clock.
bool run_latency(const options& o, target& t, const std::string& topic) {
  // The topic is fresh, so every partition starts at offset 0: the consumer starts there before
  // the first send, and only latency-stamped records exist.
  std::vector<int64_t> start(static_cast<size_t>(o.partitions), 0);
  tail_consumer c(o, t, topic, start);
  const long total = static_cast<long>(o.rate * o.duration);
  std::vector<int64_t> lat;
  lat.reserve(static_cast<size_t>(total));
  std::atomic<bool> stop{false};
  std::atomic<long> received{0};
  std::atomic<int> eofs{0};
  std::string cerror;
  std::thread consumer([&] {
    while (!stop.load()) {
      // One message at a time: rd_kafka_consume_batch_queue would hold received messages until
      // its batch is full or its timeout passes, which would be measured as latency.
      rd_kafka_message_t* m = rd_kafka_consume_queue(c.q, 50);
      if (m == nullptr) continue;
      int64_t now = now_ns();
      {
        if (m->err == 0 && m->len >= 8) {
          int64_t sent;
          std::memcpy(&sent, m->payload, 8);
          lat.push_back(now - sent);
          received.fetch_add(1);
        } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          eofs.fetch_add(1);
        } else if (m->err && cerror.empty()) {
          cerror = rd_kafka_message_errstr(m);
        }
        rd_kafka_message_destroy(m);
      }
    }
  });
  // Start measuring once the consumer has fetched every partition (a partition EOF each: its metadata
  // and first Fetch went through) and the producer knows every leader. In a cluster a fresh topic
  // reaches the other brokers' metadata a little later than CreateTopics answers; a client that asks
  // one of them first backs off (~500 ms in librdkafka), which is not what this mode measures.
  auto tready = steady::now();
  while (eofs.load() < o.partitions && seconds_since(tready) < 15)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  dr_state st;
  rd_kafka_t* rk = make_producer(o, t, &st);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  while (seconds_since(tready) < 15) {
    const rd_kafka_metadata_t* md = nullptr;
    bool ready = false;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr) {
      ready = md->topic_cnt == 1 && md->topics[0].err == 0 && md->topics[0].partition_cnt == o.partitions;
      for (int p = 0; ready && p < md->topics[0].partition_cnt; ++p)
        ready = md->topics[0].partitions[p].err == 0 && md->topics[0].partitions[p].leader >= 0;
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    if (ready) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string payload = make_payload(std::max(o.size, 8));
  auto t0 = steady::now();
  const auto interval = std::chrono::duration<double>(1.0 / o.rate);
  long sent = 0;
  for (long i = 0; i < total; ++i) {
    auto due = t0 + std::chrono::duration_cast<steady::duration>(interval * static_cast<double>(i));
    while (steady::now() < due) {
      rd_kafka_poll(rk, 0);
      auto left = due - steady::now();
      if (left > std::chrono::microseconds(200)) std::this_thread::sleep_for(left / 2);
    }
    int64_t ts = now_ns();
    std::memcpy(payload.data(), &ts, 8);
    if (rd_kafka_produce(rkt, static_cast<int32_t>(i % o.partitions), RD_KAFKA_MSG_F_COPY,
                         payload.data(), payload.size(), nullptr, 0,
                         reinterpret_cast<void*>(static_cast<intptr_t>(ts))) == 0)
      ++sent;
    if (seconds_since(t0) > o.timeout) break;
  }
  double send_secs = seconds_since(t0);
  rd_kafka_flush(rk, static_cast<int>(o.timeout * 1000));
  // Wait (bounded) until everything sent has been consumed.
  auto tw = steady::now();
  while (seconds_since(tw) < std::min(o.timeout, 30.0)) {
    if (received.load() >= st.ok.load()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  consumer.join();
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);

  std::vector<int64_t> s = lat;
  std::sort(s.begin(), s.end());
  auto pct = [&](double q) -> double {
    if (s.empty()) return -1;
    size_t idx = static_cast<size_t>(q * static_cast<double>(s.size() - 1) + 0.5);
    return static_cast<double>(s[std::min(idx, s.size() - 1)]) / 1e6;
  };
  result r = common_fields(o, "latency", topic);
  r.add("rate", o.rate, 0);
  r.add("achieved_rate", sent / send_secs, 0);
  r.add("sent", std::to_string(sent));
  r.add("delivered", std::to_string(st.ok.load()));
  r.add("received", std::to_string(s.size()));
  r.add("p50_ms", pct(0.50), 3);
  r.add("p99_ms", pct(0.99), 3);
  r.add("p99_9_ms", pct(0.999), 3);
  r.add("max_ms", s.empty() ? -1.0 : static_cast<double>(s.back()) / 1e6, 3);
  // Produce-to-ack: send to delivery report (the broker's Produce response, acks as given).
  std::vector<int64_t> a = st.ack_lat;
  std::sort(a.begin(), a.end());
  auto apct = [&](double q) -> double {
    if (a.empty()) return -1;
    size_t idx = static_cast<size_t>(q * static_cast<double>(a.size() - 1) + 0.5);
    return static_cast<double>(a[std::min(idx, a.size() - 1)]) / 1e6;
  };
  r.add("ack_p50_ms", apct(0.50), 3);
  r.add("ack_p99_ms", apct(0.99), 3);
  r.add("ack_p99_9_ms", apct(0.999), 3);
  r.add("ack_max_ms", a.empty() ? -1.0 : static_cast<double>(a.back()) / 1e6, 3);
  if (!cerror.empty()) r.add("error", cerror);
  else if (st.failed) r.add("error", st.first_error);
  else if (static_cast<long>(s.size()) < sent) r.add("error", "not all records received");
  r.print(o.json);
  return cerror.empty() && st.failed == 0 && static_cast<long>(s.size()) >= sent;
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  try {
    target t(o);
    bool ok = true;
    bool has_produce = std::find(o.modes.begin(), o.modes.end(), "produce") != o.modes.end();
    std::string data_topic;  // the produce topic, reused by consume
    for (auto& m : o.modes) {
      if (m == "create") {  // just the topic (--topic, --partitions): e.g. for an idle-RSS probe
        if (o.topic.empty()) usage(2);
        t.create_topic(o, o.topic);
        std::printf("mode=create topic=%s partitions=%d\n", o.topic.c_str(), o.partitions);
      } else if (m == "produce") {
        data_topic = fresh_topic(o, "data");
        t.create_topic(o, data_topic);
        ok = run_produce(o, t, data_topic) && ok;
      } else if (m == "consume") {
        if (!has_produce && !o.topic.empty()) {
          data_topic = o.topic;  // an existing topic: read it as it is
        } else if (!has_produce) {
          // Unmeasured fill, then the measured read.
          data_topic = fresh_topic(o, "data");
          t.create_topic(o, data_topic);
          options quiet = o;
          quiet.json = false;
          quiet.label += "(fill)";
          ok = run_produce(quiet, t, data_topic) && ok;
        }
        ok = run_consume(o, t, data_topic) && ok;
      } else if (m == "latency") {
        std::string lt = fresh_topic(o, "latency");
        t.create_topic(o, lt);
        ok = run_latency(o, t, lt) && ok;
      }
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_bench: %s\n", e.what());
    return 1;
  }
}
