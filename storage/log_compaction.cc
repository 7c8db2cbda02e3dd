// The log's side of compaction (storage/log_cleaner.h): the plan made on the strand, the swap of cleaned
// segments into the log, and the completion of a swap a crash interrupted.
#include <algorithm>
#include <system_error>

#include "base/logging.h"
#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/log.h"
#include "storage/log_cleaner.h"
#include "storage/log_dir_failure.h"

namespace sluice::storage {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<20 digits>.log.swap" -> base offset.
std::optional<int64_t> swap_base(const std::string& name) {
  constexpr std::string_view tail = ".log.swap";
  if (name.size() != 20 + tail.size() || !ends_with(name, tail)) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<cleaning_plan> log::plan_cleaning(const cleaning_limits& limits) const {
  if (segments_.size() < 2) return std::nullopt;  // only the active segment
  const int64_t active_base = segments_.rbegin()->first;
  int64_t first_uncleanable = std::min(active_base, limits.high_watermark);
  if (auto fuo = producer_state_->first_unstable_offset()) first_uncleanable = std::min(first_uncleanable, *fuo);
  cleaning_plan plan;
  plan.dir = dir_;
  plan.log_start_offset = log_start_offset_;
  for (auto it = segments_.begin(); std::next(it) != segments_.end(); ++it) {
    const segment& s = *it->second;
    const int64_t upper = std::next(it)->first;  // offsets of this segment are below the next one's base
    // min.compaction.lag.ms: a segment with a record younger than the lag stays dirty (Kafka compares the
    // segment's largest timestamp).
    if (limits.min_compaction_lag_ms > 0 && s.max_timestamp() > limits.now_ms - limits.min_compaction_lag_ms) {
      first_uncleanable = std::min(first_uncleanable, s.base_offset());
    }
    if (upper > first_uncleanable) break;
    plan.segments.push_back({s.base_offset(), s.next_offset(), s.size_bytes(), s.max_timestamp(), s.file()});
  }
  if (plan.segments.empty()) return std::nullopt;
  plan.first_uncleanable_offset = first_uncleanable;
  plan.first_dirty_offset = std::clamp(limits.first_dirty_offset, log_start_offset_, first_uncleanable);
  plan.aborted = collect_aborted(plan.segments.front().base_offset, first_uncleanable);
  for (const auto& [pid, entry] : producer_state_->producers()) {
    if (!entry.batches.empty()) plan.producer_last_offsets[pid] = entry.batches.back().last_offset;
  }
  plan.segment_bytes = config_.segment_bytes;
  plan.index_interval_bytes = config_.index_interval_bytes;
  plan.levels = config_.compression_level;
  return plan;
}

sluice::result<int64_t> log::install_cleaned(const cleaning_result& result) {
  auto discard = [&](const std::string& why) -> sluice::error {
    for (const auto& g : result.groups) segment::remove_files_of(dir_, g.base_offset, segment_suffix::cleaned);
    return make_error(errc::not_found, dir_.string() + ": cleaned segments dropped: " + why);
  };
  if (closed_) return discard("the log is closed");
  const int64_t active_base = segments_.rbegin()->first;
  for (const auto& g : result.groups) {
    for (const auto& s : g.sources) {
      auto it = segments_.find(s.base_offset);
      if (it == segments_.end() || s.base_offset >= active_base || it->second->size_bytes() != s.size_bytes) {
        return discard("segment " + std::to_string(s.base_offset) + " changed while it was cleaned");
      }
    }
  }
  // Past the commit point the old segments leave the log before the cleaned one joins it: a failure there leaves a
  // hole in the log's range, which only the next start mends (complete_interrupted_swaps). So it fails the log dir
  // (the broker halts, as Kafka's cleaner does when its only dir goes offline) instead of serving the hole.
  auto fail_dir = [&](const sluice::error& e) {
    report_log_dir_failure(dir_, e.message + " (compaction swap interrupted; the next start finishes it)");
    return e;
  };
  int64_t freed = 0;
  for (const auto& g : result.groups) {
    // The commit point: once "<base>.log.swap" exists, a restart finishes this swap (open()).
    if (auto r = segment::rename_files(dir_, g.base_offset, segment_suffix::cleaned, segment_suffix::swap); !r) {
      return discard(r.err().message);
    }
    if (auto r = detail::fsync_directory(dir_); !r) return r.err();
    for (const auto& s : g.sources) {
      auto it = segments_.find(s.base_offset);
      if (auto r = it->second->remove_files(); !r) return fail_dir(r.err());
      segments_.erase(it);
    }
    if (auto r = segment::rename_files(dir_, g.base_offset, segment_suffix::swap, segment_suffix::none); !r) {
      return fail_dir(r.err());
    }
    if (auto r = detail::fsync_directory(dir_); !r) return r.err();
    auto seg = segment::open(dir_, g.base_offset, config_.index_interval_bytes, clock_.now_ms());
    if (!seg) return fail_dir(seg.err());
    if (auto r = (*seg)->load(true); !r) return fail_dir(r.err());
    segments_.emplace(g.base_offset, std::move(*seg));
    freed += g.bytes_before - g.bytes_after;
  }
  return freed;
}

sluice::result<void> log::complete_interrupted_swaps() {
  std::error_code ec;
  std::vector<int64_t> swaps;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (auto b = swap_base(entry.path().filename().string())) swaps.push_back(*b);
  }
  if (ec) return make_error(errc::io_error, "list " + dir_.string() + ": " + ec.message());
  std::sort(swaps.begin(), swaps.end());
  for (const int64_t base : swaps) {
    // The swap file was whole and fsynced before its rename: scan it for its last offset, then remove every
    // segment it replaces (base offsets in [base, next offset)) and give it its final names.
    auto seg = segment::open(dir_, base, config_.index_interval_bytes, clock_.now_ms(), segment_suffix::swap);
    if (!seg) return seg.err();
    if (auto r = (*seg)->recover(0); !r) return r.err();
    const int64_t next = std::max((*seg)->next_offset(), base + 1);
    (*seg)->close();
    std::vector<int64_t> replaced;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() == 24 && ends_with(name, ".log")) {
        const int64_t b = std::stoll(name.substr(0, 20));
        if (b >= base && b < next) replaced.push_back(b);
      }
    }
    for (const int64_t b : replaced) {
      for (const char* suffix : {".log", ".index", ".timeindex", ".txnindex"}) {
        std::filesystem::remove(dir_ / detail::segment_file_name(b, suffix), ec);
      }
    }
    sluice::log::info("storage: {}: finishing an interrupted compaction swap at {} (replaces {} segment(s))",
                      dir_.string(), base, replaced.size());
    if (auto r = segment::rename_files(dir_, base, segment_suffix::swap, segment_suffix::none); !r) return r;
  }
  if (!swaps.empty()) return detail::fsync_directory(dir_);
  return {};
}

}  // namespace sluice::storage
