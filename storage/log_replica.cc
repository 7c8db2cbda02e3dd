// The replication side of storage::log (KIP-101): follower appends that keep the leader's offsets, and the
// leader epoch cache kept beside the segments.
#include "base/logging.h"
#include "storage/errc.h"
#include "storage/log.h"

namespace sluice::storage {

void log::load_leader_epochs() {
  auto loaded = leader_epoch_cache::load(dir_);
  if (!loaded) {
    // Losing the cache costs precision, not data: a follower then truncates to the high watermark.
    sluice::log::warn("storage: {}: {}; starting with no leader epochs", dir_.string(), loaded.err().message);
    epochs_ = std::make_unique<leader_epoch_cache>(dir_);
    epochs_->clear();
    return;
  }
  epochs_ = std::make_unique<leader_epoch_cache>(std::move(loaded.value()));
  if (auto r = epochs_->truncate_from_end(log_end_offset_); !r) sluice::log::warn("storage: {}", r.err().message);
  if (auto r = epochs_->truncate_from_start(log_start_offset_); !r) sluice::log::warn("storage: {}", r.err().message);
}

sluice::result<append_result> log::append_as_follower(std::span<const uint8_t> batches) {
  if (batches.empty()) return make_error(errc::invalid_record, "no record batches to append");
  std::vector<record_batch_header> headers;
  int64_t expected = log_end_offset_;
  int64_t max_timestamp = -1;
  for (size_t pos = 0; pos < batches.size();) {
    const auto rest = batches.subspan(pos);
    auto h = validate_record_batch(rest);
    if (!h) return sluice::error{h.err().code, "replicated batch " + std::to_string(headers.size()) + ": " + h.err().message};
    if (h->base_offset < expected) {
      return make_error(errc::offset_out_of_range, "replicated batch at offset " + std::to_string(h->base_offset) +
                                                       " is below the next expected offset " + std::to_string(expected));
    }
    expected = h->base_offset + h->last_offset_delta + 1;
    max_timestamp = std::max(max_timestamp, h->max_timestamp);
    pos += static_cast<size_t>(h->size_bytes());
    headers.push_back(*h);
  }
  const int64_t first = headers.front().base_offset;
  const int64_t now = clock_.now_ms();
  if (first > log_end_offset_) log_end_offset_ = first;  // offsets may skip (the leader's log did)
  if (should_roll(static_cast<int64_t>(batches.size()), expected - log_end_offset_, now, max_timestamp)) {
    if (auto r = roll(); !r) return r.err();
  }
  if (auto r = active().append(batches); !r) return r.err();

  append_result result{first, expected - 1, max_timestamp, 0, -1};
  size_t pos = 0;
  for (const auto& h : headers) {
    result.record_count += h.records_count;
    const auto batch = batches.subspan(pos, static_cast<size_t>(h.size_bytes()));
    pos += batch.size();
    if (h.is_control() && h.producer_id >= 0) {
      // A follower keeps the leader's transaction state and aborted-transaction index, to lead later.
      if (auto m = apply_marker_batch(active(), h, batch); !m) sluice::log::warn("storage: {}", m.err().message);
    } else {
      producer_state_->replay(h);
    }
    if (h.partition_leader_epoch > epochs_->latest_epoch()) {
      if (auto r = epochs_->assign(h.partition_leader_epoch, h.base_offset); !r) return r.err();
    }
  }
  log_end_offset_ = expected;
  unflushed_records_ += result.record_count;
  producer_state_->set_map_end_offset(log_end_offset_);
  publish();
  return result;
}

sluice::result<void> log::truncate_fully_and_start_at(int64_t offset) {
  if (offset < 0) return make_error(errc::invalid_argument, "start a log at a negative offset");
  forget_pending_flushes();
  while (!segments_.empty()) {
    if (auto r = delete_segment(std::prev(segments_.end())); !r) return r;
  }
  auto s = segment::create(dir_, offset, config_.index_interval_bytes, clock_.now_ms());
  if (!s) return s.err();
  segments_.emplace(offset, std::move(s.value()));
  log_start_offset_ = log_end_offset_ = recovery_point_ = offset;
  unflushed_records_ = 0;
  publish();
  producer_state_->delete_snapshots_after(-1);
  producer_state_->reset(offset);
  epochs_->clear();
  sluice::log::info("storage: {}: truncated fully, log now starts at {}", dir_.string(), offset);
  return {};
}

}  // namespace sluice::storage
