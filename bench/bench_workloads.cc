// sluice_bench's measured modes (bench.h): produce, consume and end-to-end latency (bench/README.md,
// "What is measured").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace sluice::bench {
namespace {

std::string make_payload(int size) {
  // Random letters: compressible a little, like kafka-producer-perf-test's payload.
  std::mt19937 rng(42);
  std::string p(static_cast<size_t>(size), 'x');
  for (auto& c : p) c = static_cast<char>('A' + rng() % 26);
  return p;
}

}  // namespace

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
    int klen = std::snprintf(key, sizeof key, "%ld", o.keys > 0 ? i % o.keys : i);
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

}  // namespace sluice::bench
