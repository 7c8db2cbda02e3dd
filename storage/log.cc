#include "storage/log.h"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "base/logging.h"
#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/log_validator.h"

namespace sluice::storage {

namespace {

// "<20 digits>.log" -> base offset.
std::optional<int64_t> parse_segment_name(const std::string& name, const char* suffix) {
  const std::string sfx(suffix);
  if (name.size() != 20 + sfx.size() || name.compare(20, sfx.size(), sfx) != 0) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    if (v > (INT64_MAX - (name[i] - '0')) / 10) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

log::log(std::filesystem::path dir, log_config config, sluice::clock& clock)
    : dir_(std::move(dir)), config_(config), clock_(clock) {}

log::~log() {
  if (!closed_) close();
}

sluice::result<std::unique_ptr<log>> log::open(std::filesystem::path dir, log_config config, sluice::clock& clock) {
  return open(std::move(dir), config, clock, log_recovery_state{});
}

sluice::result<std::unique_ptr<log>> log::open(std::filesystem::path dir, log_config config, sluice::clock& clock,
                                               log_recovery_state state) {
  // max.message.bytes 0 is valid (Kafka: atLeast(0)): every batch is then too large.
  if (config.segment_bytes <= 0 || config.index_interval_bytes < 0 || config.max_message_bytes < 0) {
    return make_error(errc::invalid_argument, "log_config: segment size must be positive, other sizes not negative");
  }
  std::unique_ptr<log> l(new log(std::move(dir), config, clock));
  if (auto r = l->load(state); !r) {
    l->closed_ = true;  // nothing to flush
    return r.err();
  }
  return l;
}

sluice::result<void> log::load(log_recovery_state state) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return make_error(errc::io_error, "create " + dir_.string() + ": " + ec.message());

  if (auto r = complete_interrupted_swaps(); !r) return r;
  std::vector<int64_t> bases;
  std::vector<std::filesystem::path> stray;
  std::vector<std::pair<std::filesystem::path, int64_t>> indexes;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (ends_with(name, ".deleted") || ends_with(name, ".cleaned") || ends_with(name, ".swap")) {
      stray.push_back(entry.path());  // left by an interrupted delete/compaction: never live data here
    } else if (auto b = parse_segment_name(name, ".log")) {
      bases.push_back(*b);
    } else if (auto i = parse_segment_name(name, ".index")) {
      indexes.emplace_back(entry.path(), *i);
    } else if (auto t = parse_segment_name(name, ".timeindex")) {
      indexes.emplace_back(entry.path(), *t);
    }
  }
  if (ec) return make_error(errc::io_error, "list " + dir_.string() + ": " + ec.message());
  std::sort(bases.begin(), bases.end());
  for (const auto& p : stray) std::filesystem::remove(p, ec);
  for (const auto& [p, b] : indexes) {
    if (!std::binary_search(bases.begin(), bases.end(), b)) std::filesystem::remove(p, ec);  // orphan index
  }

  const int64_t now = clock_.now_ms();
  if (bases.empty()) {
    const int64_t start = std::max<int64_t>(0, state.log_start_offset);
    auto s = segment::create(dir_, start, config_.index_interval_bytes, now);
    if (!s) return s.err();
    segments_.emplace(start, std::move(s.value()));
  }
  for (size_t i = 0; i < bases.size(); ++i) {
    const int64_t base = bases[i];
    const bool indexes_existed =
        std::filesystem::exists(dir_ / detail::segment_file_name(base, ".index")) &&
        std::filesystem::exists(dir_ / detail::segment_file_name(base, ".timeindex"));
    auto s = segment::open(dir_, base, config_.index_interval_bytes, now);
    if (!s) return s.err();
    segment& seg = *s.value();
    const bool is_last = i + 1 == bases.size();
    const int64_t next_base = is_last ? INT64_MAX : bases[i + 1];
    const bool trusted = !is_last && state.recovery_point >= 0 && next_base <= state.recovery_point;
    int64_t cut = 0;  // bytes recovery cut off a torn or corrupt tail
    if (state.recovery_point < 0) {
      // No checkpointed recovery point: every segment may hold unsynced bytes, since a roll leaves the fsync of the
      // segment it ends to a background flusher (Kafka recovers such a log from offset 0 too).
      auto r = seg.recover(0);
      if (!r) return r.err();
      cut = r.value();
    } else if (next_base <= state.recovery_point) {
      if (auto r = seg.load(indexes_existed); !r) return r.err();  // wholly below the recovery point
    } else if (indexes_existed && state.recovery_point > base) {
      auto r = seg.recover_from_offset(state.recovery_point);
      if (!r) return r.err();
      cut = r.value();
    } else {
      auto r = seg.recover(0);
      if (!r) return r.err();
      cut = r.value();
    }
    if (cut > 0 && !is_last) {
      // The log ends in this segment's torn tail: later segments were written after it and hold no acknowledged
      // data that this one does not (Kafka's LogLoader deletes the unflushed segments after a corrupt one).
      sluice::log::warn("storage: {}: segment {} had a torn tail ({} bytes cut); deleting the {} segment(s) after it",
                        dir_.string(), base, cut, bases.size() - i - 1);
      for (size_t j = i + 1; j < bases.size(); ++j) segment::remove_files_of(dir_, bases[j], segment_suffix::none);
      bases.resize(i + 1);
    }
    // Scanned data may so far live only in the page cache: fsync it so the recovery point below is true.
    // A segment that ends at or below the checkpointed recovery point was flushed before (a clean
    // shutdown checkpoints the LEO), so a restart after one costs no fsync.
    const bool beyond_recovery_point = state.recovery_point < 0 || seg.next_offset() > state.recovery_point;
    if (!trusted && beyond_recovery_point) {
      if (auto r = seg.flush(); !r) return r;
    } else if (auto r = seg.write_indexes(); !r) {
      // Index entries rebuilt in memory (a missing or short index file): the next start rebuilds them again.
      sluice::log::warn("storage: {}: {}", dir_.string(), r.err().message);
    }
    segments_.emplace(base, std::move(s.value()));
  }

  log_end_offset_ = active().next_offset();
  if (segments_.size() > 1 && active().empty()) {
    // An empty active segment still owns its base offset (it was created at the LEO of a roll).
    log_end_offset_ = std::max(log_end_offset_, active().base_offset());
  }
  log_start_offset_ = std::clamp(std::max(segments_.begin()->first, state.log_start_offset),
                                 segments_.begin()->first, log_end_offset_);
  recovery_point_ = log_end_offset_;  // everything is recovered and now counts as flushed-or-scanned
  last_flush_ms_ = clock_.monotonic_ms();
  publish();
  if (auto r = rebuild_producer_state(); !r) return r;
  load_leader_epochs();
  sluice::log::debug("storage: loaded {}: {} segment(s), log start offset {}, log end offset {}", dir_.string(),
                    segments_.size(), log_start_offset_, log_end_offset_);
  return {};
}

int64_t log::size_bytes() const {
  int64_t total = 0;
  for (const auto& [base, seg] : segments_) total += seg->size_bytes();
  return total;
}

std::vector<int64_t> log::segment_base_offsets() const {
  std::vector<int64_t> out;
  out.reserve(segments_.size());
  for (const auto& [base, seg] : segments_) out.push_back(base);
  return out;
}

bool log::should_roll(int64_t bytes, int64_t offset_span, int64_t now_ms, int64_t max_timestamp) const {
  const segment& a = *segments_.rbegin()->second;
  if (a.empty()) return false;
  if (a.size_bytes() > config_.segment_bytes - bytes) return true;                 // segment.bytes
  if (a.time_waited_for_roll(now_ms, max_timestamp) > config_.segment_ms) return true;  // segment.ms
  if (log_end_offset_ + offset_span - 1 - a.base_offset() > INT32_MAX) return true;  // relative offsets
  return false;
}

sluice::result<void> log::roll() {
  take_finished_flushes();
  segment& old = active();
  const int64_t end = log_end_offset_;
  std::optional<segment_sync_target> deferred;
  if (flusher_) {
    auto target = old.become_inactive_without_sync();
    if (!target) return target.err();
    deferred = std::move(target.value());
  } else if (auto r = old.on_become_inactive(); !r) {  // fsync the finished segment here
    return r;
  }
  auto s = segment::create(dir_, end, config_.index_interval_bytes, clock_.now_ms());
  if (!s) return s.err();
  segments_.emplace(end, std::move(s.value()));
  // Kafka: a producer snapshot at every new segment's base offset. With a background flusher it is synced there too
  // (Kafka's takeSnapshot(asyncFlush = true)), with the directory (the new segment's and the snapshot's names).
  auto snapshot = snapshot_producer_state(/*durable=*/!deferred);
  if (deferred) {
    if (snapshot) deferred->paths.push_back(std::move(*snapshot));
    deferred->directory = dir_;
    const uint64_t generation = roll_flushes_->generation;  // written only on this strand
    flusher_->submit([state = roll_flushes_, target = std::move(*deferred), generation, end] {
      const auto r = target.sync();  // a failure is reported as a log dir failure inside
      std::lock_guard lock(state->mutex);
      if (!r) state->failed = true;
      if (state->failed || state->generation != generation) return;
      if (end > state->synced_to.load(std::memory_order_relaxed)) state->synced_to.store(end, std::memory_order_release);
    });
  } else {
    recovery_point_ = end;
  }
  publish();
  sluice::log::debug("storage: {}: rolled new segment at offset {}", dir_.string(), end);
  return {};
}

void log::set_background_flusher(background_flusher* flusher) {
  flusher_ = flusher;
  if (flusher_ && !roll_flushes_) roll_flushes_ = std::make_shared<roll_flush_state>();
}

void log::take_finished_flushes() {
  if (!roll_flushes_) return;
  const int64_t synced = roll_flushes_->synced_to.load(std::memory_order_acquire);
  if (synced > recovery_point_ && synced <= log_end_offset_) {
    recovery_point_ = synced;
    publish();
  }
}

void log::forget_pending_flushes() {
  if (!roll_flushes_) return;
  std::lock_guard lock(roll_flushes_->mutex);
  ++roll_flushes_->generation;
  roll_flushes_->failed = false;
  roll_flushes_->synced_to.store(-1, std::memory_order_relaxed);
}

namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/// Kafka's processRecordErrors: the batch is refused with INVALID_TIMESTAMP when a timestamp was refused,
/// else INVALID_RECORD naming (at most) the first three refused records.
sluice::error refused_records(std::vector<record_error> rejected, size_t batch, const std::string& partition,
                              std::vector<record_error>* out) {
  for (auto& e : rejected)
    if (!e.timestamp) e.message += " in topic partition " + partition;  // Kafka names the partition
  const bool timestamp = std::any_of(rejected.begin(), rejected.end(), [](const record_error& e) { return e.timestamp; });
  std::string message;
  if (timestamp) {
    message = "One or more records have been rejected due to invalid timestamp";
  } else {
    message = "One or more records have been rejected due to " + std::to_string(rejected.size()) +
              " record errors in total, and only showing the first three errors at most: [";
    for (size_t i = 0; i < rejected.size() && i < 3; ++i) {
      if (i) message += ", ";
      message += "record " + std::to_string(rejected[i].batch_index) + ": " + rejected[i].message;
    }
    message += "]";
  }
  if (out) out->insert(out->end(), rejected.begin(), rejected.end());
  return make_error(timestamp ? errc::invalid_timestamp : errc::invalid_record,
                    "batch " + std::to_string(batch) + ": " + message);
}

}  // namespace

sluice::result<append_result> log::append(std::span<uint8_t> batches, int32_t leader_epoch, append_origin origin,
                                          std::vector<record_error>* rejected) {
  if (batches.empty()) return make_error(errc::invalid_record, "no record batches to append");
  take_finished_flushes();

  // 1. Validate every batch before writing any (Kafka's analyzeAndValidateRecords + LogValidator).
  struct batch_ref {
    std::span<uint8_t> bytes;  // in `batches`, or a batch rebuilt by the log validator (in `rebuilt`)
    int32_t last_offset_delta;
    int64_t max_timestamp = -1;  // >= 0: the records' max timestamp, written into the header if it differs
  };
  std::vector<batch_ref> refs;
  std::vector<std::vector<uint8_t>> rebuilt;  // owned bytes of rebuilt batches (refs point into them)
  size_t output_bytes = 0;
  int64_t offset_span = 0;
  int64_t incoming_max_timestamp = -1;
  const bool append_time = config_.message_timestamp_type == timestamp_type::log_append_time;
  const int64_t now = clock_.now_ms();
  producer_state_manager::pending_append producers;  // idempotence: staged, committed after the write
  // Kafka's validateRecord for a client's records (a coordinator writes its own, never refused).
  record_rules rules;
  if (origin == append_origin::client) {
    rules.key_required = config_.compacted;
    rules.check_timestamps = !append_time;
    rules.min_timestamp = saturating_add(now, -std::max<int64_t>(config_.timestamp_before_max_ms, 0));
    rules.max_timestamp = saturating_add(now, std::max<int64_t>(config_.timestamp_after_max_ms, 0));
  }
  for (size_t pos = 0; pos < batches.size();) {
    const auto rest = std::span<const uint8_t>(batches.data() + pos, batches.size() - pos);
    auto h = parse_record_batch_header(rest);
    if (!h) return sluice::error{h.err().code, "batch " + std::to_string(refs.size()) + ": " + h.err().message};
    if (h->size_bytes() > config_.max_message_bytes) {
      return make_error(errc::record_too_large, "batch of " + std::to_string(h->size_bytes()) +
                                                    " bytes exceeds max.message.bytes " +
                                                    std::to_string(config_.max_message_bytes));
    }
    auto v = validate_record_batch(rest);
    if (!v) return sluice::error{v.err().code, "batch " + std::to_string(refs.size()) + ": " + v.err().message};
    if (h->records_count < 1 || h->last_offset_delta < 0 || int64_t{h->last_offset_delta} + 1 != h->records_count) {
      return make_error(errc::invalid_record, "batch " + std::to_string(refs.size()) + ": records count " +
                                                  std::to_string(h->records_count) + " with last offset delta " +
                                                  std::to_string(h->last_offset_delta));
    }
    if (origin == append_origin::client && h->producer_id >= 0 && h->base_sequence < 0) {
      // Kafka's validateBatch: an idempotent or transactional batch carries its sequence.
      return make_error(errc::invalid_record, "batch " + std::to_string(refs.size()) + ": invalid sequence number " +
                                                  std::to_string(h->base_sequence) + " in record batch with producerId " +
                                                  std::to_string(h->producer_id));
    }
    if (origin == append_origin::client && h->ts_type() == timestamp_type::log_append_time &&
        (append_time || h->max_timestamp == -1)) {
      // Kafka's validateTimestamp: only the broker stamps LogAppendTime (every record of the batch is refused).
      std::vector<record_error> all;
      for (int32_t i = 0; i < h->records_count; ++i)
        all.push_back({i, true, "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime."});
      return refused_records(std::move(all), refs.size(), dir_.filename().string(), rejected);
    }
    batch_ref ref{batches.subspan(pos, static_cast<size_t>(h->size_bytes())), h->last_offset_delta};
    if (needs_record_validation(h->compression(), config_.compression_type)) {
      // Kafka's validateMessagesAndAssignOffsetsCompressed: the records are read (decompressed) and the
      // batch is rebuilt when the topic's codec differs. Uncompressed batches never get here unless the
      // topic asks for a codec: their hot path reads the header only.
      auto vr = validate_batch_records(ref.bytes, *h, config_.compression_type, config_.compression_level, rules);
      if (!vr) return sluice::error{vr.err().code, "batch " + std::to_string(refs.size()) + ": " + vr.err().message};
      if (!vr->rejected.empty()) return refused_records(std::move(vr->rejected), refs.size(), dir_.filename().string(), rejected);
      if (vr->rebuilt) {
        if (vr->rebuilt->size() > static_cast<size_t>(config_.max_message_bytes)) {
          return make_error(errc::record_too_large, "batch " + std::to_string(refs.size()) + " is " +
                                                        std::to_string(vr->rebuilt->size()) +
                                                        " bytes after recompression, above max.message.bytes " +
                                                        std::to_string(config_.max_message_bytes));
        }
        rebuilt.push_back(std::move(*vr->rebuilt));
        ref.bytes = rebuilt.back();  // the vector's heap buffer does not move when `rebuilt` grows
      } else if (h->ts_type() == timestamp_type::create_time && vr->max_timestamp >= 0) {
        ref.max_timestamp = vr->max_timestamp;  // written into the header in step 3 if it differs
      }
      h->max_timestamp = decode_record_batch_header(ref.bytes.data()).max_timestamp;
      if (ref.max_timestamp >= 0) h->max_timestamp = ref.max_timestamp;
    } else {
      // Kafka's validateMessagesAndAssignOffsetsInPlace: the records of an uncompressed batch are read once
      // in place (lengths, varints, count, offset deltas 0..n-1); nothing is copied. A batch whose CRC is
      // right but whose records are not would otherwise be stored and stop every consumer at it.
      auto summary = check_records(ref.bytes.subspan(record_batch_header_size), *h, rules);
      if (!summary) return sluice::error{summary.err().code, "batch " + std::to_string(refs.size()) + ": " + summary.err().message};
      if (!summary->rejected.empty()) return refused_records(std::move(summary->rejected), refs.size(), dir_.filename().string(), rejected);
      if (!summary->offsets_in_order)
        return make_error(errc::invalid_record, "batch " + std::to_string(refs.size()) + ": record offset deltas are not 0.." +
                                                    std::to_string(h->records_count - 1) + " in order");
    }
    if (h->producer_id >= 0) {
      // KIP-98: sequence/epoch checks against the producer state; a retried batch is answered with the
      // offsets it was first written at, and nothing of this append is written (Kafka does the same).
      record_batch_header assigned = *h;
      assigned.base_offset = log_end_offset_ + offset_span;
      if (append_time) assigned.max_timestamp = now;
      auto checked = producer_state_->check_and_stage(producers, assigned, origin);
      if (!checked) return checked.err();
      if (const auto& dup = checked.value()) {
        // Kafka answers a duplicate with the original batch's timestamp as its log append time, whatever the
        // topic's timestamp type (UnifiedLog.append: appendInfo.setLogAppendTime(duplicate.timestamp)).
        append_result r{dup->first_offset, dup->last_offset, dup->max_timestamp, 0, dup->max_timestamp};
        r.duplicate = true;
        sluice::log::debug("storage: {}: duplicate of batch [{}, {}] of producer {} epoch {} seq {}: not written",
                           dir_.string(), dup->first_offset, dup->last_offset, h->producer_id, h->producer_epoch,
                           h->base_sequence);
        return r;
      }
    }
    output_bytes += ref.bytes.size();
    refs.push_back(ref);
    incoming_max_timestamp = std::max(incoming_max_timestamp, h->max_timestamp);
    offset_span += int64_t{h->last_offset_delta} + 1;
    pos += static_cast<size_t>(h->size_bytes());
  }

  // 2. Roll first if this append would overfill or age out the active segment.
  if (append_time) incoming_max_timestamp = now;
  if (should_roll(static_cast<int64_t>(output_bytes), offset_span, now, incoming_max_timestamp)) {
    if (auto r = roll(); !r) return r.err();
  }

  // 3. Assign offsets and the leader epoch in place (outside the CRC).
  append_result result{log_end_offset_, log_end_offset_ - 1, -1, 0, append_time ? now : -1};
  int64_t next = log_end_offset_;
  for (const auto& ref : refs) {
    const auto batch = ref.bytes;
    set_base_offset(batch, next);
    set_partition_leader_epoch(batch, leader_epoch);
    if (append_time) {
      set_log_append_time(batch, now);
    } else if (ref.max_timestamp >= 0 && ref.max_timestamp != decode_record_batch_header(batch.data()).max_timestamp) {
      // Kafka's setMaxTimestamp(CREATE_TIME, maxTimestamp) after reading the records: the header's max
      // timestamp is what the records say (a no-op, and no new CRC, when they agree).
      set_max_timestamp(batch, ref.max_timestamp);
    }
    const auto h = decode_record_batch_header(batch.data());
    result.max_timestamp = std::max(result.max_timestamp, h.max_timestamp);
    result.record_count += h.records_count;
    next += int64_t{ref.last_offset_delta} + 1;
  }
  result.last_offset = next - 1;

  // Kafka's maybeAssignEpochStartOffset, before the write as in UnifiedLog.append: the first batch of a newer
  // leader epoch starts it (a single node never goes through become_leader, so its epoch 0 starts with its first
  // append). Its checkpoint is on disk before any record of the epoch is; a checkpoint that cannot be written
  // fails the log dir (leader_epoch_cache::persist), so no record is acknowledged without its epoch entry.
  if (leader_epoch > epochs_->latest_epoch()) {
    if (auto r = epochs_->assign(leader_epoch, result.base_offset); !r) return r.err();
  }

  // 4. One write(2); acknowledged once it returns (the page cache survives a process kill). Only when a
  // batch was rebuilt are the batches gathered into a new buffer; otherwise the caller's bytes go as they are.
  if (rebuilt.empty()) {
    if (auto r = active().append(batches); !r) return r.err();
  } else {
    std::vector<uint8_t> out;
    out.reserve(output_bytes);
    for (const auto& ref : refs) out.insert(out.end(), ref.bytes.begin(), ref.bytes.end());
    if (auto r = active().append(out); !r) return r.err();
  }
  log_end_offset_ = next;
  unflushed_records_ += result.record_count;
  producer_state_->commit(std::move(producers));
  producer_state_->set_map_end_offset(log_end_offset_);
  if (now - last_producer_expiry_check_ms_ >= config_.producer_id_expiration_check_interval_ms) {
    last_producer_expiry_check_ms_ = now;
    producer_state_->set_expiration_ms(config_.producer_id_expiration_ms);
    producer_state_->remove_expired(now);
  }
  return result;
}

sluice::result<read_result> log::read(int64_t offset, int32_t max_bytes, int64_t max_offset, bool min_one_batch) {
  if (offset < log_start_offset_ || offset > log_end_offset_) {
    return make_error(errc::offset_out_of_range, "offset " + std::to_string(offset) + " outside [" +
                                                     std::to_string(log_start_offset_) + ", " +
                                                     std::to_string(log_end_offset_) + "] of " + dir_.string());
  }
  if (offset == log_end_offset_ || offset >= max_offset) return read_result{};
  auto it = segments_.upper_bound(offset);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    auto r = it->second->read(std::max(offset, it->first), max_bytes, max_offset, min_one_batch);
    if (!r) return r.err();
    if (r.value()) return *r.value();
  }
  return read_result{};
}

sluice::result<void> log::flush() {
  if (segments_.empty()) return {};
  take_finished_flushes();
  // Nothing written since the last flush (or since recovery fsynced what it scanned): nothing to sync.
  if (unflushed_records_ == 0 && recovery_point_ == log_end_offset_) return {};
  // Rolled segments whose background flush has not finished (or failed) hold offsets past the recovery point too.
  auto it = segments_.upper_bound(recovery_point_);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    if (auto r = it->second->flush(); !r) return r;
  }
  forget_pending_flushes();  // all synced here: what queued jobs report adds nothing (and a failed one is past)
  recovery_point_ = log_end_offset_;
  unflushed_records_ = 0;
  last_flush_ms_ = clock_.monotonic_ms();
  publish();
  return {};
}

void log::close(bool durable) {
  if (closed_) return;
  if (durable) {
    if (auto r = flush(); !r) sluice::log::error("storage: {}: flush on close failed: {}", dir_.string(), r.err().message);
    snapshot_producer_state();  // a clean close leaves nothing to replay at the next open
  }
  for (auto& [base, seg] : segments_) seg->close();
  closed_ = true;
}

// ---- part B --------------------------------------------------------------------------------------------

sluice::result<int64_t> log::offset_for_timestamp(int64_t timestamp_ms, int64_t* found_timestamp) {
  for (auto& [base, seg] : segments_) {
    if (seg->max_timestamp() < timestamp_ms || seg->next_offset() <= log_start_offset_) continue;
    auto r = seg->offset_for_timestamp(timestamp_ms, log_start_offset_, found_timestamp);
    if (!r) return r;
    if (r.value() >= 0) return r;
  }
  return int64_t{-1};
}

sluice::result<log::timestamp_and_offset> log::max_timestamp_and_offset() {
  segment* best = nullptr;
  for (auto& [base, seg] : segments_) {
    if (seg->max_timestamp() >= 0 && (best == nullptr || seg->max_timestamp() > best->max_timestamp())) {
      best = seg.get();
    }
  }
  if (best == nullptr) return timestamp_and_offset{};
  // The first record carrying the max timestamp (KIP-734): the first record >= it is one equal to it. As Kafka's
  // UnifiedLog (the segment's batches, not bounded by the log start offset), a record below the log start offset
  // that DeleteRecords left in its segment can be the answer.
  auto off = best->offset_for_timestamp(best->max_timestamp(), best->base_offset());
  if (!off) return off.err();
  return timestamp_and_offset{best->max_timestamp(), off.value()};
}

sluice::result<void> log::delete_segment(std::map<int64_t, std::unique_ptr<segment>>::iterator it) {
  sluice::log::info("storage: {}: deleting segment {}", dir_.string(), it->first);
  auto r = it->second->remove_files();
  segments_.erase(it);
  return r;
}

sluice::result<int> log::delete_old_segments(int64_t retention_ms, int64_t retention_bytes,
                                             int64_t high_watermark) {
  const int64_t now = clock_.now_ms();
  int64_t excess = retention_bytes >= 0 ? size_bytes() - retention_bytes : -1;
  int deleted = 0;
  while (!segments_.empty()) {
    auto it = segments_.begin();
    segment& seg = *it->second;
    const bool is_active = std::next(it) == segments_.end();
    // Kafka's deletableSegments: a segment goes only when every offset of it is below the HW (upper bound:
    // the next segment's base offset, or the LEO for the active segment), never an empty active segment.
    const int64_t upper_bound = is_active ? log_end_offset_ : std::next(it)->first;
    if (upper_bound > high_watermark) break;
    if (is_active && seg.empty()) break;
    int64_t largest = seg.max_timestamp();
    if (largest < 0) {  // no timestamps: Kafka falls back to the file's modification time
      struct stat st {};
      if (::stat(seg.log_path().c_str(), &st) == 0) largest = int64_t{st.st_mtime} * 1000;
    }
    const bool time_breached = retention_ms >= 0 && now - largest > retention_ms;
    // retention.bytes never deletes the active segment (it would take retention.bytes=0 in Kafka).
    const bool size_breached = !is_active && retention_bytes >= 0 && excess - seg.size_bytes() >= 0;
    if (!time_breached && !size_breached) break;
    if (is_active) {
      // The active segment of an idle partition breached retention.ms: roll an empty segment at the LEO
      // first (a log always has one), then delete the old one (Kafka's deleteSegments when every segment
      // is deletable). The log start offset becomes the LEO; offsets keep counting from there.
      if (auto r = roll(); !r) return r.err();
      it = segments_.begin();  // map iterators survive the insertion; re-read for clarity
    }
    excess -= seg.size_bytes();
    if (auto r = delete_segment(it); !r) return r.err();
    ++deleted;
  }
  log_start_offset_ = std::max(log_start_offset_, segments_.begin()->first);
  publish();
  if (deleted > 0) producer_state_->delete_snapshots_before(segments_.begin()->first);
  return deleted;
}

sluice::result<int64_t> log::delete_records_before(int64_t offset) {
  if (offset > log_end_offset_) {
    return make_error(errc::offset_out_of_range, "DeleteRecords offset " + std::to_string(offset) +
                                                     " beyond log end offset " + std::to_string(log_end_offset_));
  }
  if (offset <= log_start_offset_) return log_start_offset_;
  log_start_offset_ = offset;
  while (segments_.size() > 1 && std::next(segments_.begin())->first <= log_start_offset_) {
    if (auto r = delete_segment(segments_.begin()); !r) return r.err();
  }
  publish();
  producer_state_->delete_snapshots_before(segments_.begin()->first);
  return log_start_offset_;
}

sluice::result<bool> log::flush_if_needed() {
  take_finished_flushes();
  if (unflushed_records_ == 0) return false;
  const bool by_count = unflushed_records_ >= config_.flush_messages;
  const bool by_time = config_.flush_ms != INT64_MAX && clock_.monotonic_ms() - last_flush_ms_ >= config_.flush_ms;
  if (!by_count && !by_time) return false;
  if (auto r = flush(); !r) return r.err();
  return true;
}

sluice::result<void> log::truncate_to(int64_t offset) {
  if (offset >= log_end_offset_) return {};
  if (offset < 0) return make_error(errc::invalid_argument, "truncate to a negative offset");
  forget_pending_flushes();
  // Drop whole segments at or above the offset, keeping at least one.
  while (segments_.size() > 1 && segments_.rbegin()->first >= offset) {
    if (auto r = delete_segment(std::prev(segments_.end())); !r) return r;
  }
  segment& a = active();
  if (a.base_offset() >= offset) {
    // Everything goes: start over at `offset` (Kafka's truncateFullyAndStartAt).
    if (auto r = delete_segment(std::prev(segments_.end())); !r) return r;
    auto s = segment::create(dir_, offset, config_.index_interval_bytes, clock_.now_ms());
    if (!s) return s.err();
    segments_.emplace(offset, std::move(s.value()));
    log_start_offset_ = offset;
  } else if (auto r = a.truncate_to(offset); !r) {
    return r;
  }
  log_end_offset_ = offset;
  log_start_offset_ = std::min(log_start_offset_, log_end_offset_);
  recovery_point_ = std::min(recovery_point_, log_end_offset_);
  publish();
  producer_state_->delete_snapshots_after(log_end_offset_);
  if (auto r = epochs_->truncate_from_end(log_end_offset_); !r) return r;
  return rebuild_producer_state();
}

// ---- idempotent producers ------------------------------------------------------------------------------

sluice::result<void> log::rebuild_producer_state() {
  const int64_t now = clock_.now_ms();
  if (!producer_state_) producer_state_ = std::make_unique<producer_state_manager>(dir_, config_.producer_id_expiration_ms);
  producer_state_->set_expiration_ms(config_.producer_id_expiration_ms);
  const auto snapshot = producer_state_->load_latest_snapshot(log_end_offset_, now);
  // Without a snapshot (first start with this feature, or none written yet) the whole log is replayed.
  const int64_t from = snapshot ? *snapshot : log_start_offset_;
  if (!snapshot) producer_state_->reset(from);
  int64_t replayed = 0;
  for (auto& [base, seg] : segments_) {
    if (seg->next_offset() <= from) continue;
    std::optional<sluice::error> marker_error;
    // &seg = seg: clang before 16 cannot capture a structured binding (the SLUICE_FUZZ build).
    auto r = seg->for_each_batch_header(from, [&, &seg = seg](const record_batch_header& h, int64_t position) {
      if (h.last_offset() < from || marker_error) return;
      if (h.is_control() && h.producer_id >= 0) {
        auto bytes = seg->read_batch(position, h.size_bytes());
        auto applied = bytes ? apply_marker_batch(*seg, h, *bytes)
                             : sluice::result<std::optional<completed_txn>>(bytes.err());
        if (!applied) marker_error = applied.err();
      } else {
        producer_state_->replay(h);
      }
      ++replayed;
    });
    if (!r) return r;
    if (marker_error) return *marker_error;
  }
  producer_state_->set_map_end_offset(log_end_offset_);
  producer_state_->remove_expired(now);
  last_producer_expiry_check_ms_ = now;
  sluice::log::debug("storage: {}: producer state: snapshot {}, {} batch(es) replayed, {} producer(s)", dir_.string(),
                     snapshot ? std::to_string(*snapshot) : std::string("none"), replayed,
                     producer_state_->producers().size());
  return {};
}

std::optional<std::filesystem::path> log::snapshot_producer_state(bool durable) {
  if (!producer_state_) return std::nullopt;
  // Nothing appended since the snapshot at this offset (a clean log closed again): keep it, no fsync.
  if (producer_state_->last_snapshot_offset() == log_end_offset_) return std::nullopt;
  producer_state_->set_map_end_offset(log_end_offset_);
  auto r = producer_state_->take_snapshot(durable);
  if (!r) {
    sluice::log::error("storage: {}: producer snapshot at {} failed: {}", dir_.string(), log_end_offset_,
                       r.err().message);
    return std::nullopt;
  }
  return std::move(r.value());
}

}  // namespace sluice::storage
