#include "bench/load/load_report.h"

#include <boost/json.hpp>
#include <cstdio>
#include <iostream>

#include "protocol/error_code.h"
#include "storage/compression.h"

namespace sluice::bench {
namespace {

std::string mode_name(load_mode m) { return m == load_mode::produce ? "produce" : "fetch"; }

double per_million(double cpu_s, int64_t records) {
  return records > 0 ? cpu_s * 1e6 / static_cast<double>(records) : 0.0;
}

double rate(double n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

std::string bootstrap_text(const load_options& o) {
  std::string s;
  for (const auto& b : o.bootstrap) s += (s.empty() ? "" : ",") + b.text();
  return s;
}

std::string error_text(int16_t code) { return std::string(protocol::error_name(static_cast<protocol::error_code>(code))); }

}  // namespace

void print_report(const load_result& r) {
  const auto& o = *r.opts;
  const auto& c = r.counters;
  const bool produce = o.mode == load_mode::produce;
  std::printf("sluice_load %s: %s topic=%s partitions=%d brokers=%d connections=%d threads=%d %s_v%d\n",
              mode_name(o.mode).c_str(), bootstrap_text(o).c_str(), r.topic.c_str(), r.partitions, r.brokers,
              r.connections, r.threads, produce ? "produce" : "fetch", r.api_version);
  if (produce) {
    std::printf("  record_size=%d batch_records=%d batch_bytes=%lld compression=%s acks=%d inflight=%d rate=%s\n",
                o.record_size, o.batch_records, static_cast<long long>(r.batch_bytes),
                std::string(storage::codec_name(o.compression)).c_str(), o.acks, o.inflight,
                o.rate > 0 ? (std::to_string(static_cast<long long>(o.rate)) + "/s (open loop)").c_str()
                           : "max (closed loop)");
  }
  std::printf("  measured %.3f s after %.1f s warm-up (set-up %.2f s)\n", r.seconds, o.warmup(), r.setup_s);
  if (o.idle_connections > 0)
    std::printf("  idle connections: %d asked, %d negotiated, %d failed, %d still answered after the run\n",
                o.idle_connections, r.idle_ready, r.idle_failed, r.idle_alive);
  std::printf("  throughput: %.0f records/s", rate(static_cast<double>(c.records), r.seconds));
  if (produce) std::printf(", %.2f MB/s of values", rate(static_cast<double>(c.value_bytes), r.seconds) / 1e6);
  std::printf(", %.2f MB/s of batches; %lld records, %lld requests (%.0f/s)\n",
              rate(static_cast<double>(c.batch_bytes), r.seconds) / 1e6, static_cast<long long>(c.records),
              static_cast<long long>(c.requests), rate(static_cast<double>(c.requests), r.seconds));
  if (c.latency.count() > 0) {
    auto ms = [&](double p) { return static_cast<double>(c.latency.value_at_percentile(p)) / 1000.0; };
    std::printf("  latency ms (%s, n=%llu): p50=%.3f p99=%.3f p99.9=%.3f max=%.3f mean=%.3f\n",
                produce ? (o.rate > 0 ? "intended send to response" : "send to response") : "fetch round trip",
                static_cast<unsigned long long>(c.latency.count()), ms(50), ms(99), ms(99.9),
                static_cast<double>(c.latency.max()) / 1000.0, c.latency.mean() / 1000.0);
  }
  std::printf("  errors:");
  if (c.errors.empty()) std::printf(" none");
  for (const auto& [code, n] : c.errors) std::printf(" %s=%lld", error_text(code).c_str(), static_cast<long long>(n));
  if (c.unanswered) std::printf(" unanswered_requests=%lld", static_cast<long long>(c.unanswered));
  if (r.failed_connections) std::printf(" failed_connections=%d", r.failed_connections);
  if (c.late_sends) std::printf(" late_sends=%lld", static_cast<long long>(c.late_sends));
  std::printf("\n");
  for (const auto& e : r.connection_errors) std::printf("    connection: %s\n", e.c_str());
  std::printf("  cpu: client %.2f s = %.3f s per million records (%.0f%% of a core)", r.client_cpu_s,
              per_million(r.client_cpu_s, c.records), 100.0 * rate(r.client_cpu_s, r.seconds));
  if (r.broker_cpu_s)
    std::printf("; broker %.2f s = %.3f s per million records (%.0f%% of a core)", *r.broker_cpu_s,
                per_million(*r.broker_cpu_s, c.records), 100.0 * rate(*r.broker_cpu_s, r.seconds));
  else if (!o.broker_pids.empty())
    std::printf("; broker: /proc unreadable");
  std::printf("\n");
}

void print_json(const load_result& r) {
  const auto& o = *r.opts;
  const auto& c = r.counters;
  boost::json::object j;
  j["mode"] = mode_name(o.mode);
  j["bootstrap"] = bootstrap_text(o);
  j["topic"] = r.topic;
  j["partitions"] = r.partitions;
  j["brokers"] = r.brokers;
  j["connections"] = r.connections;
  j["threads"] = r.threads;
  j["api_version"] = r.api_version;
  if (o.mode == load_mode::produce) {
    j["record_size"] = o.record_size;
    j["batch_records"] = o.batch_records;
    j["batch_bytes"] = r.batch_bytes;
    j["compression"] = std::string(storage::codec_name(o.compression));
    j["acks"] = o.acks;
    j["inflight"] = o.inflight;
    j["rate"] = o.rate;
  }
  j["warmup_s"] = o.warmup();
  j["seconds"] = r.seconds;
  j["requests"] = c.requests;
  j["records"] = c.records;
  j["records_per_s"] = rate(static_cast<double>(c.records), r.seconds);
  j["value_mb_per_s"] = rate(static_cast<double>(c.value_bytes), r.seconds) / 1e6;
  j["batch_mb_per_s"] = rate(static_cast<double>(c.batch_bytes), r.seconds) / 1e6;
  j["requests_per_s"] = rate(static_cast<double>(c.requests), r.seconds);
  boost::json::object lat;
  lat["count"] = c.latency.count();
  lat["p50"] = c.latency.value_at_percentile(50);
  lat["p99"] = c.latency.value_at_percentile(99);
  lat["p999"] = c.latency.value_at_percentile(99.9);
  lat["max"] = c.latency.max();
  lat["mean"] = c.latency.mean();
  j["latency_us"] = std::move(lat);
  boost::json::object errs;
  for (const auto& [code, n] : c.errors) errs[error_text(code)] = n;
  j["errors"] = std::move(errs);
  j["unanswered_requests"] = c.unanswered;
  j["late_sends"] = c.late_sends;
  j["failed_connections"] = r.failed_connections;
  j["setup_s"] = r.setup_s;
  j["idle_connections"] = o.idle_connections;
  j["idle_ready"] = r.idle_ready;
  j["idle_failed"] = r.idle_failed;
  j["idle_alive"] = r.idle_alive;
  boost::json::array ce;
  for (const auto& e : r.connection_errors) ce.emplace_back(e);
  j["connection_errors"] = std::move(ce);
  j["client_cpu_s"] = r.client_cpu_s;
  j["client_cpu_per_million"] = per_million(r.client_cpu_s, c.records);
  if (r.broker_cpu_s) {
    j["broker_cpu_s"] = *r.broker_cpu_s;
    j["broker_cpu_per_million"] = per_million(*r.broker_cpu_s, c.records);
  } else {
    j["broker_cpu_s"] = nullptr;
    j["broker_cpu_per_million"] = nullptr;
  }
  std::cout << boost::json::serialize(j) << "\n";
}

}  // namespace sluice::bench
