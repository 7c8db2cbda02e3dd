#pragma once
// Metrics (issue #18): counters and histograms cheap enough for the request path, and a registry that renders
// them, with the gauges other layers compute at scrape time, in Prometheus' text exposition format (0.0.4).
//
// Writers (net, partition, storage, groups) hold a `counter&` / `histogram&` taken once from the registry, or
// own a `counter` member themselves, and only ever do relaxed atomic adds: no lock, no allocation, no lookup on
// the hot path. The registry's mutex is taken when a series is created and when the registry is rendered.
// Uses nothing of ours above base.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::metrics {

/// Label pairs of one series, in the order they are rendered.
using labels = std::vector<std::pair<std::string, std::string>>;

/// The process-wide switch of the request-path series (sluice.metrics.enable, default on): off, the writers that
/// check it (request counts and latencies, per-partition traffic, fsync times) skip their updates, so a benchmark
/// can compare the broker with and without them. Relaxed atomic load.
inline std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{true};
  return on;
}
inline bool enabled() { return enabled_flag().load(std::memory_order_relaxed); }
inline void set_enabled(bool on) { enabled_flag().store(on, std::memory_order_relaxed); }

/// A monotonic count (Prometheus counter). Thread-safe; add() is one relaxed atomic add.
class counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

/// A level that goes up and down (Prometheus gauge): connections open, requests parked. Thread-safe; add() and
/// sub() are one relaxed atomic add each.
class gauge {
 public:
  void add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  void sub(int64_t n = 1) { value_.fetch_sub(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

/// A distribution over fixed upper bounds (Prometheus histogram; `le` buckets are cumulative when rendered).
/// Thread-safe; observe() finds the bucket (binary search over at most a few dozen bounds) and does three
/// relaxed atomic adds.
class histogram {
 public:
  /// `upper_bounds`: increasing, in the unit the family's name says (e.g. ms); +Inf is implied.
  explicit histogram(std::span<const double> upper_bounds);
  void observe(double value);

  struct snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  snapshot read() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (the last is +Inf)
  std::atomic<double> sum_{0};
};

/// Bucket bounds in milliseconds for request and I/O latencies: 0.05 ms to 10 s.
std::span<const double> latency_ms_buckets();

enum class type { counter, gauge, histogram };

/// Where a collector writes the samples it computes at scrape time. Samples of one family may come in any
/// order and from several collectors; the registry groups them under one HELP/TYPE header.
class sample_sink {
 public:
  virtual ~sample_sink() = default;
  virtual void sample(std::string_view family, type t, std::string_view help, const labels& l, double value) = 0;
  void gauge(std::string_view family, std::string_view help, const labels& l, double value) {
    sample(family, type::gauge, help, l, value);
  }
  /// A counter someone else keeps (e.g. per-partition counts summed per topic): `family` ends in `_total`.
  void counter_value(std::string_view family, std::string_view help, const labels& l, double value) {
    sample(family, type::counter, help, l, value);
  }
};

/// The series of a process, rendered by `prometheus_text()`. Thread-safe.
///
/// Family names follow the JMX exporter's mapping of Kafka's MBeans where Kafka has the metric
/// (`kafka_server_brokertopicmetrics_messagesin_total` for kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec),
/// Prometheus' `process_*` names for the process, and `sluice_*` for what only Sluice has.
class registry {
 public:
  /// The series `family{labels}`, created at the first call; the same object on every later call (the
  /// reference stays valid for the registry's lifetime, even after remove()). `family` ends in `_total`.
  metrics::counter& counter(std::string_view family, std::string_view help, labels l = {});
  metrics::histogram& histogram(std::string_view family, std::string_view help, labels l,
                                std::span<const double> upper_bounds);
  /// The gauge `family{labels}`, created at the first call; the same object on every later call (valid for the
  /// registry's lifetime). Not removed by remove().
  metrics::gauge& gauge(std::string_view family, std::string_view help, labels l = {});
  /// Drops from the output every series created here with label `name`=`value` (a deleted topic's series).
  void remove(std::string_view name, std::string_view value);

  using collector = std::function<void(sample_sink&)>;
  /// `c` runs at every prometheus_text(), on the scraping thread, outside the registry's lock; it must only
  /// read thread-safe state (atomics, snapshots). Returns a handle for remove_collector.
  int add_collector(collector c);
  void remove_collector(int handle);

  /// Every series in the text exposition format 0.0.4: families sorted by name, `# HELP` and `# TYPE` once
  /// each, label values escaped (\\, \", \n), histograms as `_bucket{le=...}`, `_sum`, `_count`.
  /// `extra`, when set, runs after the collectors (samples computed by the caller, e.g. asynchronously).
  std::string prometheus_text(const collector& extra = {}) const;

 private:
  struct counter_series {
    std::string family, help;
    labels l;
    std::shared_ptr<metrics::counter> c;
    bool removed = false;
  };
  struct histogram_series {
    std::string family, help;
    labels l;
    std::shared_ptr<metrics::histogram> h;
    bool removed = false;
  };
  mutable std::mutex mutex_;
  std::map<std::string, counter_series> counters_;      // by family + rendered labels
  std::map<std::string, histogram_series> histograms_;  // by family + rendered labels
  struct gauge_series {
    std::string family, help;
    labels l;
    std::shared_ptr<metrics::gauge> g;
  };
  std::map<std::string, gauge_series> gauges_;  // by family + rendered labels
  std::map<int, collector> collectors_;
  int next_collector_ = 1;
  // Series replaced after remove(): kept alive, since writers may still hold references to them.
  std::vector<std::shared_ptr<metrics::counter>> retired_;
  std::vector<std::shared_ptr<metrics::histogram>> retired_histograms_;
};

/// The process' registry: what every layer writes to and `/metrics` renders.
registry& process_registry();

/// Adds Prometheus' process family to `r`, read from /proc at each scrape: process_cpu_seconds_total,
/// process_resident_memory_bytes, process_virtual_memory_bytes, process_start_time_seconds, process_open_fds,
/// process_max_fds.
void add_process_metrics(registry& r);

/// Renders `{a="x",b="y"}` (empty string for no labels), values escaped as the text format wants.
std::string render_labels(const labels& l);

}  // namespace sluice::metrics
