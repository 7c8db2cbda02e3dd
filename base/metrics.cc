#include "base/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::metrics {

histogram::histogram(std::span<const double> upper_bounds)
    : bounds_(upper_bounds.begin(), upper_bounds.end()),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(upper_bounds.size() + 1)) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);  // first bound >= value: le semantics
  buckets_[static_cast<size_t>(it - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

histogram::snapshot histogram::read() const {
  snapshot s;
  s.upper_bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::span<const double> latency_ms_buckets() {
  static const double b[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
  return b;
}

namespace {

void escape_into(std::string& out, std::string_view v, bool label_value) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && label_value) out += "\\\"";
    else out += c;
  }
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string key_of(std::string_view family, const labels& l) { return std::string(family) + render_labels(l); }

const char* type_name(type t) {
  switch (t) {
    case type::counter: return "counter";
    case type::gauge: return "gauge";
    case type::histogram: return "histogram";
  }
  return "untyped";
}

/// Gathers samples by family so each gets one header, whichever collector wrote them.
struct family_text {
  type t = type::gauge;
  std::string help;
  std::vector<std::string> lines;
};

class gathering_sink final : public sample_sink {
 public:
  std::map<std::string, family_text, std::less<>> families;
  void sample(std::string_view family, type t, std::string_view help, const labels& l, double value) override {
    auto& f = entry(family, t, help);
    f.lines.push_back(std::string(family) + render_labels(l) + " " + number(value));
  }
  family_text& entry(std::string_view family, type t, std::string_view help) {
    auto it = families.find(family);
    if (it == families.end()) {
      it = families.emplace(std::string(family), family_text{}).first;
      it->second.t = t;
      it->second.help = std::string(help);
    }
    return it->second;
  }
};

}  // namespace

std::string render_labels(const labels& l) {
  if (l.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out += ',';
    out += l[i].first;
    out += "=\"";
    escape_into(out, l[i].second, true);
    out += '"';
  }
  out += '}';
  return out;
}

counter& registry::counter(std::string_view family, std::string_view help, labels l) {
  std::lock_guard lock(mutex_);
  auto key = key_of(family, l);
  auto it = counters_.find(key);
  if (it == counters_.end() || it->second.removed) {
    counter_series s{std::string(family), std::string(help), std::move(l), std::make_shared<metrics::counter>()};
    if (it != counters_.end()) {
      // A removed series that comes back (a topic created again) starts from zero, as Kafka's new MBean.
      retired_.push_back(std::move(it->second.c));
      it->second = std::move(s);
    } else {
      it = counters_.emplace(std::move(key), std::move(s)).first;
    }
  }
  return *it->second.c;
}

histogram& registry::histogram(std::string_view family, std::string_view help, labels l,
                               std::span<const double> upper_bounds) {
  std::lock_guard lock(mutex_);
  auto key = key_of(family, l);
  auto it = histograms_.find(key);
  if (it == histograms_.end() || it->second.removed) {
    histogram_series s{std::string(family), std::string(help), std::move(l),
                       std::make_shared<metrics::histogram>(upper_bounds)};
    if (it != histograms_.end()) {
      retired_histograms_.push_back(std::move(it->second.h));
      it->second = std::move(s);
    } else {
      it = histograms_.emplace(std::move(key), std::move(s)).first;
    }
  }
  return *it->second.h;
}

gauge& registry::gauge(std::string_view family, std::string_view help, labels l) {
  std::lock_guard lock(mutex_);
  auto key = key_of(family, l);
  auto it = gauges_.find(key);
  if (it == gauges_.end())
    it = gauges_.emplace(std::move(key), gauge_series{std::string(family), std::string(help), std::move(l),
                                                      std::make_shared<metrics::gauge>()}).first;
  return *it->second.g;
}

void registry::remove(std::string_view name, std::string_view value) {
  std::lock_guard lock(mutex_);
  auto has = [&](const labels& l) {
    return std::any_of(l.begin(), l.end(), [&](const auto& p) { return p.first == name && p.second == value; });
  };
  for (auto& [k, s] : counters_)
    if (has(s.l)) s.removed = true;
  for (auto& [k, s] : histograms_)
    if (has(s.l)) s.removed = true;
}

int registry::add_collector(collector c) {
  std::lock_guard lock(mutex_);
  const int id = next_collector_++;
  collectors_.emplace(id, std::move(c));
  return id;
}

void registry::remove_collector(int handle) {
  std::lock_guard lock(mutex_);
  collectors_.erase(handle);
}

std::string registry::prometheus_text(const collector& extra) const {
  gathering_sink sink;
  std::vector<collector> run;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [k, s] : counters_) {
      if (s.removed) continue;
      sink.sample(s.family, type::counter, s.help, s.l, static_cast<double>(s.c->value()));
    }
    for (const auto& [k, s] : histograms_) {
      if (s.removed) continue;
      auto& f = sink.entry(s.family, type::histogram, s.help);
      const auto snap = s.h->read();
      for (size_t i = 0; i < snap.cumulative.size(); ++i) {
        labels l = s.l;
        l.emplace_back("le", i < snap.upper_bounds.size() ? number(snap.upper_bounds[i]) : "+Inf");
        f.lines.push_back(s.family + "_bucket" + render_labels(l) + " " + std::to_string(snap.cumulative[i]));
      }
      f.lines.push_back(s.family + "_sum" + render_labels(s.l) + " " + number(snap.sum));
      f.lines.push_back(s.family + "_count" + render_labels(s.l) + " " + std::to_string(snap.count));
    }
    for (const auto& [k, s] : gauges_) sink.sample(s.family, type::gauge, s.help, s.l, static_cast<double>(s.g->value()));
    for (const auto& [id, c] : collectors_) run.push_back(c);
  }
  for (const auto& c : run) c(sink);
  if (extra) extra(sink);
  std::string out;
  for (const auto& [name, f] : sink.families) {
    out += "# HELP " + name + " ";
    escape_into(out, f.help, false);
    out += "\n# TYPE " + name + " " + type_name(f.t) + "\n";
    for (const auto& line : f.lines) {
      out += line;
      out += '\n';
    }
  }
  return out;
}

registry& process_registry() {
  static registry r;
  return r;
}

void add_process_metrics(registry& r) {
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  static const long page = ::sysconf(_SC_PAGESIZE);
  r.add_collector([](sample_sink& sink) {
    // /proc/self/stat: utime and stime (fields 14, 15) in clock ticks, starttime (22) in ticks since boot,
    // rss (24) in pages. The command name (field 2) may hold spaces: parse after its closing parenthesis.
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close != std::string::npos) {
      std::istringstream fields(text.substr(close + 2));
      std::vector<std::string> f;
      for (std::string x; fields >> x;) f.push_back(x);
      // f[0] is field 3 (state).
      if (f.size() > 21) {
        const double cpu = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(ticks);
        sink.counter_value("process_cpu_seconds_total", "User and system CPU time of the process, in seconds.", {},
                           cpu);
        sink.gauge("process_resident_memory_bytes", "Resident set size of the process, in bytes.", {},
                   std::stod(f[21]) * static_cast<double>(page));
        sink.gauge("process_virtual_memory_bytes", "Virtual memory size of the process, in bytes.", {},
                   std::stod(f[20]));
        std::ifstream stat("/proc/stat");
        double boot_time = 0;
        for (std::string line; std::getline(stat, line);)
          if (line.rfind("btime ", 0) == 0) boot_time = std::stod(line.substr(6));
        if (boot_time > 0)
          sink.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", {},
                     boot_time + std::stod(f[19]) / static_cast<double>(ticks));
      }
    }
    size_t fds = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
    sink.gauge("process_open_fds", "Open file descriptors of the process.", {}, static_cast<double>(fds));
    sink.gauge("process_max_fds", "The process' limit of open file descriptors.", {},
               static_cast<double>(::sysconf(_SC_OPEN_MAX)));
  });
}

}  // namespace sluice::metrics
