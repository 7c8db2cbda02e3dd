#include "broker/log_cleaner_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <future>
#include <optional>

#include "base/logging.h"
#include "base/metrics.h"
#include "broker/partition.h"
#include "broker/topic_config.h"
#include "storage/log_cleaner.h"

namespace sluice::broker {

namespace {

constexpr const char* checkpoint_file = "cleaner-offset-checkpoint";

std::string broker_value(const broker_config& c, const char* key, const char* fallback) {
  auto it = c.values.find(key);
  return it == c.values.end() || it->second.empty() ? std::string(fallback) : it->second;
}

double parse_double(const std::string& s, double fallback) {
  double v = fallback;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : fallback;
}

int64_t parse_long(const std::string& s, int64_t fallback) { return parse_config_long(s).value_or(fallback); }

// A topic's value of `name`: its override, else the broker's default (log.cleaner.* synonyms).
std::string topic_value(const broker_config& c, const topic& t, const char* name) {
  if (auto it = t.configs.find(name); it != t.configs.end()) return it->second;
  if (const auto* key = find_topic_config_key(name)) return topic_config_default(c, *key);
  return "";
}

bool compacts(const broker_config& c, const topic& t) {
  return topic_value(c, t, "cleanup.policy").find("compact") != std::string::npos;
}

// Runs `f` on the partition's strand from a cleaner thread and waits; nullopt when stopping first.
template <typename F>
auto on_strand(partition& p, const std::atomic<bool>& stopping, F f) -> std::optional<std::invoke_result_t<F&>> {
  using R = std::invoke_result_t<F&>;
  auto done = std::make_shared<std::promise<R>>();
  auto future = done->get_future();
  asio::post(p.strand(), [done, f = std::move(f)]() mutable { done->set_value(f()); });
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (stopping.load()) return std::nullopt;
  }
  return future.get();
}

}  // namespace

struct log_cleaner_manager::candidate {
  std::shared_ptr<partition> part;
  storage::topic_partition tp;
  coordination::topic_id topic{};
  storage::cleaning_plan plan;
  double ratio = 0;
  int64_t delete_retention_ms = 0;
};

log_cleaner_manager::log_cleaner_manager(const broker_config& config, topic_registry& topics, sluice::clock& clock)
    : config_(config), topics_(topics), clock_(clock) {}

log_cleaner_manager::~log_cleaner_manager() { stop(); }

void log_cleaner_manager::start() {
  load_checkpoints();
  // /metrics: Kafka's LogCleaner / LogCleanerManager gauges under the JMX exporter's names, and totals of ours.
  collector_ = metrics::process_registry().add_collector([this](metrics::sample_sink& out) {
    const auto t = stats();
    out.gauge("kafka_log_logcleanermanager_max_dirty_percent", "Largest dirty ratio of a compacted log, in percent",
              {}, t.max_dirty_ratio * 100.0);
    out.gauge("kafka_log_logcleaner_max_compaction_delay_secs",
              "Longest time a compacted log's dirty records waited past max.compaction.lag.ms", {},
              static_cast<double>(t.max_compaction_delay_ms) / 1000.0);
    out.counter_value("sluice_log_cleaner_passes_total", "Cleaning passes installed", {}, static_cast<double>(t.passes));
    out.counter_value("sluice_log_cleaner_bytes_read_total", "Bytes the cleaner read from segments", {},
                      static_cast<double>(t.bytes_read));
    out.counter_value("sluice_log_cleaner_bytes_written_total", "Bytes the cleaner wrote to cleaned segments", {},
                      static_cast<double>(t.bytes_written));
    out.counter_value("sluice_log_cleaner_bytes_freed_total", "Bytes freed by installed passes", {},
                      static_cast<double>(t.bytes_freed));
    out.counter_value("sluice_log_cleaner_records_removed_total", "Records removed by compaction", {},
                      static_cast<double>(t.records_removed));
  });
  if (broker_value(config_, "log.cleaner.enable", "true") != "true") return;
  const int64_t n = std::clamp<int64_t>(parse_long(broker_value(config_, "log.cleaner.threads", "1"), 1), 1, 64);
  for (int64_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

void log_cleaner_manager::stop() {
  if (collector_ != 0) metrics::process_registry().remove_collector(std::exchange(collector_, 0));
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

log_cleaner_manager::totals log_cleaner_manager::stats() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

void log_cleaner_manager::run() {
  const int64_t backoff_ms = std::max<int64_t>(1, parse_long(broker_value(config_, "log.cleaner.backoff.ms", "15000"), 15000));
  while (!stopping_) {
    bool cleaned = false;
    try {
      cleaned = clean_filthiest();
    } catch (const std::exception& e) {  // a bug: keep the broker serving, say so
      log::error("log cleaner: {}", e.what());
    }
    if (cleaned) continue;
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [this] { return stopping_.load(); });
  }
}

bool log_cleaner_manager::clean_filthiest() {
  const int64_t now = clock_.now_ms();
  std::optional<candidate> best;
  double max_ratio = 0;
  int64_t max_delay = 0;
  const auto topics = topics_.all();
  {
    // Entries of logs that are gone go (Kafka drops a deleted log's checkpoint); an entry read from the file is
    // bound to the topic id it is first seen with, and one seen with another id (the topic was made again) resets.
    std::lock_guard lock(mutex_);
    std::map<storage::topic_partition, coordination::topic_id> live;
    for (const auto& t : topics)
      for (const auto& p : t->partitions)
        if (p) live[{t->name, p->index()}] = t->id;
    for (auto it = checkpoints_.begin(); it != checkpoints_.end();) {
      auto l = live.find(it->first);
      if (l == live.end() || (it->second.topic && *it->second.topic != l->second)) {
        delete_horizons_.erase(it->first);
        it = checkpoints_.erase(it);
        continue;
      }
      it->second.topic = l->second;
      ++it;
    }
  }
  for (const auto& t : topics) {
    if (!compacts(config_, *t)) continue;
    const double min_ratio = parse_double(topic_value(config_, *t, "min.cleanable.dirty.ratio"), 0.5);
    const int64_t min_lag = parse_long(topic_value(config_, *t, "min.compaction.lag.ms"), 0);
    const int64_t max_lag = parse_long(topic_value(config_, *t, "max.compaction.lag.ms"), INT64_MAX);
    const int64_t delete_retention = parse_long(topic_value(config_, *t, "delete.retention.ms"), 86400000);
    for (const auto& p : t->partitions) {
      if (!p || stopping_) continue;
      storage::topic_partition tp{t->name, p->index()};
      int64_t first_dirty = 0, horizon = -1;
      {
        std::lock_guard lock(mutex_);
        if (in_progress_.count(tp)) continue;
        if (auto it = checkpoints_.find(tp); it != checkpoints_.end()) first_dirty = it->second.offset;
        if (auto it = delete_horizons_.find(tp); it != delete_horizons_.end()) horizon = it->second;
      }
      auto plan = on_strand(*p, stopping_, [p, first_dirty, min_lag, now] {
        storage::cleaning_limits limits;
        limits.first_dirty_offset = first_dirty;
        limits.min_compaction_lag_ms = min_lag;
        limits.now_ms = now;
        return p->plan_cleaning(limits);
      });
      if (!plan || !*plan) continue;
      const int64_t dirty = (*plan)->dirty_bytes(), total = (*plan)->total_bytes();
      const double ratio = total > 0 ? static_cast<double>(dirty) / static_cast<double>(total) : 0.0;
      max_ratio = std::max(max_ratio, ratio);
      // max.compaction.lag.ms: the oldest dirty segment's records waited too long (Kafka's needCompactionNow).
      bool overdue = false;
      for (const auto& s : (*plan)->segments) {
        if (s.next_offset <= (*plan)->first_dirty_offset || s.max_timestamp < 0) continue;
        if (max_lag != INT64_MAX && now - s.max_timestamp > max_lag) {
          overdue = true;
          max_delay = std::max(max_delay, now - s.max_timestamp - max_lag);
        }
        break;
      }
      const bool tombstones_due = horizon >= 0 && now >= horizon;
      const bool due = (dirty > 0 && (ratio >= min_ratio || overdue)) || tombstones_due;
      if (!due) continue;
      const double rank = tombstones_due && dirty == 0 ? 0.0 : ratio + (overdue ? 1.0 : 0.0);
      if (!best || rank > best->ratio) best = candidate{p, tp, t->id, std::move(**plan), rank, delete_retention};
    }
  }
  {
    std::lock_guard lock(mutex_);
    totals_.max_dirty_ratio = max_ratio;
    totals_.max_compaction_delay_ms = max_delay;
    if (!best || in_progress_.count(best->tp)) return false;
    in_progress_.insert(best->tp);
  }
  struct release {
    log_cleaner_manager& m;
    storage::topic_partition tp;
    ~release() {
      std::lock_guard lock(m.mutex_);
      m.in_progress_.erase(tp);
    }
  } release_guard{*this, best->tp};

  // The offset map: this thread's share of log.cleaner.dedupe.buffer.size, but no more than the dirty bytes
  // could fill (a record takes at least 8 bytes, one key per record).
  const int64_t threads = std::max<int64_t>(1, static_cast<int64_t>(threads_.size()));
  const int64_t budget = parse_long(broker_value(config_, "log.cleaner.dedupe.buffer.size", "134217728"), 134217728) / threads;
  const double load = std::clamp(parse_double(broker_value(config_, "log.cleaner.io.buffer.load.factor", "0.9"), 0.9), 0.1, 0.99);
  const int64_t dirty = best->plan.dirty_bytes();
  const int64_t needed = static_cast<int64_t>(static_cast<double>(dirty / 8 + 16) / load) * 24;
  storage::offset_map map(static_cast<size_t>(std::clamp<int64_t>(needed, 4096, std::max<int64_t>(budget, 4096))), load);

  const double rate = parse_double(broker_value(config_, "log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308"),
                                   HUGE_VAL);
  storage::io_throttler throttler(rate, clock_, [this](int64_t ms) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
  });
  storage::cleaning_options options;
  options.now_ms = now;
  options.delete_retention_ms = best->delete_retention_ms;
  options.throttle = [&throttler](int64_t bytes) { throttler.maybe_throttle(bytes); };
  options.cancelled = [this] { return stopping_.load(); };

  const auto& tp = best->tp;
  auto result = storage::clean_log(best->plan, options, map);
  if (!result) {
    if (!stopping_) log::warn("log cleaner: {}-{}: {}", tp.first, tp.second, result.err().message);
    return false;
  }
  auto part = best->part;
  auto cleaned = std::make_shared<storage::cleaning_result>(std::move(*result));
  // By value: when stopping, the strand may run it after this thread gave up waiting.
  auto installed = on_strand(*part, stopping_, [part, cleaned] { return part->install_cleaned(*cleaned); });
  if (!installed) {  // stopping: install_cleaned (if it ever runs) drops the files, a restart removes them
    return false;
  }
  if (!*installed) {
    log::info("log cleaner: {}-{}: {}", tp.first, tp.second, installed->err().message);
    return false;
  }
  const auto& st = cleaned->stats;
  const auto level = cleaned->groups.empty() ? log::level::debug : log::level::info;
  log::detail::emit(level, "log cleaner: cleaned {}-{} [{}, {}): {} of {} records kept, {} tombstone(s), {} aborted record(s) and {} marker(s) removed, "
            "{} -> {} bytes in {} group(s), {} key(s) mapped",
            tp.first, tp.second, best->plan.log_start_offset, cleaned->end_offset, st.records_retained, st.records_read,
            st.tombstones_removed, st.aborted_records_removed, st.markers_removed, st.bytes_read, st.bytes_written, cleaned->groups.size(),
            st.keys_mapped);
  {
    std::lock_guard lock(mutex_);
    checkpoints_[tp] = checkpoint{cleaned->end_offset, best->topic};
    if (cleaned->latest_delete_horizon >= 0) delete_horizons_[tp] = cleaned->latest_delete_horizon;
    else delete_horizons_.erase(tp);
    ++totals_.passes;
    totals_.bytes_read += st.bytes_read;
    totals_.bytes_written += st.bytes_written;
    totals_.bytes_freed += **installed;
    totals_.records_removed += st.records_read - st.records_retained;
  }
  write_checkpoints();
  return true;
}

void log_cleaner_manager::load_checkpoints() {
  std::lock_guard lock(mutex_);
  for (const auto& dir : config_.log_dirs) {
    auto cp = storage::read_offset_checkpoint(dir / checkpoint_file);
    if (!cp) {
      log::warn("log cleaner: {}: {} (every log is dirty from its start)", (dir / checkpoint_file).string(), cp.err().message);
      continue;
    }
    for (const auto& [tp, offset] : *cp) checkpoints_[tp] = checkpoint{offset, std::nullopt};
  }
}

void log_cleaner_manager::write_checkpoints() {
  // One file per log dir, for the partitions whose directory is in it; entries of logs gone are dropped.
  std::map<std::filesystem::path, storage::offset_checkpoint> per_dir;
  for (const auto& dir : config_.log_dirs) per_dir[dir];
  std::map<storage::topic_partition, int64_t> snapshot;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [tp, cp] : checkpoints_) snapshot[tp] = cp.offset;
  }
  for (const auto& t : topics_.all()) {
    for (const auto& p : t->partitions) {
      if (!p) continue;
      auto it = snapshot.find({t->name, p->index()});
      if (it != snapshot.end()) per_dir[p->dir().parent_path()][it->first] = it->second;
    }
  }
  for (const auto& [dir, entries] : per_dir) {
    if (auto r = storage::write_offset_checkpoint(dir / checkpoint_file, entries); !r)
      log::warn("log cleaner: cannot write {}: {}", (dir / checkpoint_file).string(), r.err().message);
  }
}

}  // namespace sluice::broker
