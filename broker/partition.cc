#include "broker/partition.h"

#include <algorithm>
#include <cassert>

#include "base/logging.h"

#include "storage/errc.h"
#include "storage/record_batch.h"

namespace sluice::broker {

partition::partition(std::string topic, int32_t index, storage::log* log, asio::any_io_executor executor)
    : topic_(std::move(topic)), index_(index), log_(log), dir_(log->dir()), strand_(asio::make_strand(executor)) {
  publish_offsets();
  flushes_on_append_.store(log_->config().flush_messages != INT64_MAX, std::memory_order_release);
}

int64_t partition::isr_min_log_end_offset() const {
  int64_t lowest = log_->log_end_offset();
  for (const auto& f : followers_) {
    if (!in_isr(f.broker_id)) continue;
    // An ISR member that has not fetched under this epoch yet holds the HW where it is (Kafka: the HW
    // only moves once every ISR member's LEO is known).
    lowest = std::min(lowest, f.log_end_offset < 0 ? high_watermark() : f.log_end_offset);
  }
  return lowest;
}

void partition::publish_offsets() {
  const int64_t start = log_->log_start_offset();
  const int64_t end = log_->log_end_offset();
  int64_t hw = high_watermark();
  if (role() == replica_role::leader) {
    // The HW never goes back while leading; with no followers in the ISR it is the LEO.
    hw = std::max(hw, isr_min_log_end_offset());
  }
  hw = std::clamp(hw, start, end);
  assert(start <= hw && hw <= end);
  log_start_offset_.store(start, std::memory_order_release);
  log_end_offset_.store(end, std::memory_order_release);
  high_watermark_.store(hw, std::memory_order_release);
  log_->on_high_watermark_updated(hw);
  last_stable_offset_.store(std::min(hw, log_->first_unstable_offset().value_or(hw)), std::memory_order_release);
  size_bytes_.store(log_->size_bytes(), std::memory_order_release);
}

void partition::become_leader(int32_t self_id, int32_t leader_epoch, std::vector<int32_t> replicas,
                              std::vector<int32_t> isr, int32_t state_version, int64_t now_ms) {
  if (closed_) return;
  const bool new_epoch = role() != replica_role::leader || leader_epoch != this->leader_epoch();
  self_id_ = self_id;
  replicas_ = std::move(replicas);
  if (new_epoch) {
    followers_.clear();
    for (int32_t r : replicas_)
      if (r != self_id) followers_.push_back({r, -1, now_ms});  // Kafka: caught up "now" at election
    if (auto r = log_->leader_epochs().assign(leader_epoch, log_->log_end_offset()); !r)
      log::warn("{}-{}: leader epoch cache: {}", topic_, index_, r.err().message);
  } else {
    // The same epoch with another replica set: followers that left are forgotten, new ones start unknown.
    std::erase_if(followers_, [&](const auto& f) {
      return std::find(replicas_.begin(), replicas_.end(), f.broker_id) == replicas_.end();
    });
    for (int32_t r : replicas_)
      if (r != self_id && std::none_of(followers_.begin(), followers_.end(), [&](const auto& f) { return f.broker_id == r; }))
        followers_.push_back({r, -1, now_ms});
  }
  isr_ = std::move(isr);
  state_version_ = state_version;
  isr_change_pending_ = false;
  leader_epoch_.store(leader_epoch, std::memory_order_release);
  leader_id_.store(self_id, std::memory_order_release);
  isr_size_.store(static_cast<int32_t>(isr_.size()), std::memory_order_release);
  role_.store(replica_role::leader, std::memory_order_release);
  publish_offsets();
  wake_waiters();
}

void partition::become_follower(int32_t leader_id, int32_t leader_epoch) {
  if (closed_) return;
  if (role() == replica_role::leader) leadership_changes_.fetch_add(1, std::memory_order_acq_rel);
  role_.store(leader_id < 0 ? replica_role::offline : replica_role::follower, std::memory_order_release);
  leader_id_.store(leader_id, std::memory_order_release);
  leader_epoch_.store(leader_epoch, std::memory_order_release);
  followers_.clear();
  isr_.clear();
  isr_size_.store(0, std::memory_order_release);
  isr_change_pending_ = false;
  publish_offsets();
  wake_waiters();
}

void partition::start_as_cluster_replica() {
  high_watermark_.store(log_->log_start_offset(), std::memory_order_release);
  become_follower(-1, 0);  // offline: publishes the offsets with that HW
}

void partition::apply_isr(const isr_change& stored) {
  if (closed_ || role() != replica_role::leader || stored.leader_epoch != leader_epoch()) return;
  isr_ = stored.isr;
  state_version_ = stored.version;
  isr_change_pending_ = false;
  isr_size_.store(static_cast<int32_t>(isr_.size()), std::memory_order_release);
  publish_offsets();
  wake_waiters();  // the HW may have moved (a shrink), and acks=-1 waiters re-check min.insync.replicas
}

bool partition::has_follower(int32_t broker_id) const {
  if (closed_ || role() != replica_role::leader) return false;
  return broker_id != self_id_ && std::find(replicas_.begin(), replicas_.end(), broker_id) != replicas_.end();
}

std::vector<follower_progress> partition::read_replica_candidates(int64_t offset) const {
  std::vector<follower_progress> out;
  if (closed_ || role() != replica_role::leader) return out;
  for (const auto& f : followers_) {
    // log_end_offset -1: not fetched in this epoch; log_start_offset -1: not reported yet (Kafka's UnknownOffset,
    // which passes its check too).
    if (f.log_end_offset >= offset && f.log_start_offset <= offset && in_isr(f.broker_id)) out.push_back(f);
  }
  return out;
}

std::optional<isr_change> partition::record_follower_fetch(int32_t broker_id, int64_t fetch_offset, int64_t now_ms,
                                                           int64_t log_start_offset) {
  if (closed_ || role() != replica_role::leader) return std::nullopt;
  auto it = std::find_if(followers_.begin(), followers_.end(), [&](const auto& f) { return f.broker_id == broker_id; });
  if (it == followers_.end()) return std::nullopt;
  const int64_t leo = log_->log_end_offset();
  it->log_end_offset = std::min(fetch_offset, leo);
  if (fetch_offset >= leo) it->last_caught_up_ms = now_ms;
  const bool start_moved = log_start_offset >= 0 && log_start_offset != it->log_start_offset;
  if (log_start_offset >= 0) it->log_start_offset = log_start_offset;
  const int64_t before = high_watermark();
  publish_offsets();
  if (high_watermark() != before || start_moved) wake_waiters();  // a DeleteRecords may be waiting for it
  if (in_isr(broker_id) || isr_change_pending_) return std::nullopt;
  // Kafka's isFollowerInSync: caught up to the HW and into the current leader epoch.
  const int64_t epoch_start = log_->leader_epochs().entries().empty() ? 0 : log_->leader_epochs().entries().back().start_offset;
  if (it->log_end_offset < high_watermark() || it->log_end_offset < epoch_start) return std::nullopt;
  isr_change change{leader_epoch(), isr_, state_version_};
  change.isr.push_back(broker_id);
  isr_change_pending_ = true;
  return change;
}

std::optional<isr_change> partition::propose_isr_shrink(int64_t now_ms, int64_t lag_max_ms) {
  if (closed_ || role() != replica_role::leader || isr_change_pending_) return std::nullopt;
  isr_change change{leader_epoch(), {}, state_version_};
  for (int32_t r : isr_) {
    auto it = std::find_if(followers_.begin(), followers_.end(), [&](const auto& f) { return f.broker_id == r; });
    const bool lagging = it != followers_.end() && now_ms - it->last_caught_up_ms > lag_max_ms;
    if (!lagging) change.isr.push_back(r);
  }
  if (change.isr.size() == isr_.size()) return std::nullopt;
  isr_change_pending_ = true;
  return change;
}

error partition::not_following() const {
  return error{partition_errc::not_leader,
               topic_ + "-" + std::to_string(index_) + " no longer follows at that leader epoch"};
}

result<storage::append_result> partition::append_as_follower(std::span<const uint8_t> batches,
                                                             int64_t leader_high_watermark,
                                                             int64_t leader_log_start_offset, int32_t leader_epoch) {
  if (!follows_at(leader_epoch)) return not_following();
  auto r = log_->append_as_follower(batches);
  if (!r) return r;
  update_follower_offsets(leader_high_watermark, leader_log_start_offset, leader_epoch);
  return r;
}

void partition::update_follower_offsets(int64_t leader_high_watermark, int64_t leader_log_start_offset,
                                        int32_t leader_epoch) {
  if (!follows_at(leader_epoch)) return;
  if (leader_log_start_offset > log_->log_start_offset()) {
    const int64_t to = std::min(leader_log_start_offset, log_->log_end_offset());
    if (auto d = log_->delete_records_before(to); d) (void)log_->leader_epochs().truncate_from_start(to);
  }
  high_watermark_.store(std::clamp(leader_high_watermark, log_->log_start_offset(), log_->log_end_offset()),
                        std::memory_order_release);
  publish_offsets();
  wake_waiters();
}

result<void> partition::truncate_to(int64_t offset, int32_t leader_epoch) {
  if (!follows_at(leader_epoch)) return not_following();
  if (high_watermark() > offset) high_watermark_.store(std::max(offset, log_->log_start_offset()), std::memory_order_release);
  auto r = log_->truncate_to(offset);
  publish_offsets();
  return r;
}

result<void> partition::truncate_fully_and_start_at(int64_t offset, int32_t leader_epoch) {
  if (!follows_at(leader_epoch)) return not_following();
  auto r = log_->truncate_fully_and_start_at(offset);
  high_watermark_.store(log_->log_end_offset(), std::memory_order_release);
  publish_offsets();
  return r;
}

int32_t partition::latest_epoch() { return closed_ ? -1 : log_->leader_epochs().latest_epoch(); }

storage::epoch_entry partition::end_offset_for_epoch(int32_t epoch) {
  if (closed_) return {storage::leader_epoch_cache::undefined_epoch, storage::leader_epoch_cache::undefined_offset};
  if (log_->leader_epochs().entries().empty() && role() == replica_role::leader && epoch == leader_epoch()) {
    // Nothing appended yet in this (single node's first) epoch: Kafka's cache holds it from becomeLeader.
    return {epoch, log_->log_end_offset()};
  }
  return log_->leader_epochs().end_offset_for(epoch, log_->log_end_offset());
}

result<storage::read_result> partition::read_for_follower(int64_t offset, int32_t max_bytes, bool min_one_batch) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  return log_->read(offset, max_bytes, log_end_offset(), min_one_batch);
}

void partition::park_follower(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset) {
  if (closed_ || log_end_offset() > offset || role() != replica_role::leader) {
    waiter->wake();
    return;
  }
  waiters_.add(waiter);
}

namespace {
// Walks the batch headers of a produce's Records without validating them (the log does that).
bool has_control_batch(std::span<const uint8_t> batches) {
  size_t pos = 0;
  while (pos < batches.size() && batches.size() - pos >= static_cast<size_t>(storage::record_batch_header_size)) {
    auto h = storage::decode_record_batch_header(batches.data() + pos);
    if (h.is_control()) return true;
    if (h.batch_length <= 0) return false;
    const size_t next = static_cast<size_t>(storage::log_overhead) + static_cast<size_t>(h.batch_length);
    if (next > batches.size() - pos) return false;  // a length past the end: the log's validation answers
    pos += next;
  }
  return false;
}
}  // namespace

result<storage::append_result> partition::append(std::span<uint8_t> batches, storage::append_origin origin,
                                                std::vector<storage::record_error>* rejected) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  if (has_control_batch(batches))
    return error{storage::errc::invalid_record, "clients may not write control batches"};
  if (role() != replica_role::leader)
    return error{partition_errc::not_leader, topic_ + "-" + std::to_string(index_) + " is not led here"};
  auto r = log_->append(batches, leader_epoch(), origin, rejected);
  if (r) {
    publish_offsets();
    wake_waiters();
  }
  return r;
}

result<storage::append_result> partition::append(std::span<uint8_t> batches, int16_t acks, int32_t min_insync_replicas,
                                                storage::append_origin origin,
                                                std::vector<storage::record_error>* rejected) {
  if (acks == -1 && role() == replica_role::leader && isr_size() < min_insync_replicas) {
    return error{partition_errc::not_enough_replicas,
                 "The size of the current ISR " + std::to_string(isr_size()) + " is insufficient to satisfy the min.isr requirement of " +
                     std::to_string(min_insync_replicas) + " for partition " + topic_ + "-" + std::to_string(index_)};
  }
  return append(batches, origin, rejected);
}

result<storage::read_result> partition::read(int64_t offset, int32_t max_bytes, bool min_one_batch) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  return log_->read(offset, max_bytes, high_watermark(), min_one_batch);
}

result<storage::read_result> partition::read_committed(int64_t offset, int32_t max_bytes, bool min_one_batch,
                                                       std::vector<storage::aborted_txn>& aborted) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  const int64_t lso = last_stable_offset();
  auto r = log_->read(offset, max_bytes, lso, min_one_batch);
  if (r && r->region.size > 0) aborted = log_->collect_aborted(offset, lso);
  return r;
}

result<storage::log::marker_result> partition::append_marker(int64_t producer_id, int16_t producer_epoch,
                                                             const storage::end_txn_marker& marker) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  if (role() != replica_role::leader)
    return error{partition_errc::not_leader, topic_ + "-" + std::to_string(index_) + " is not led here"};
  auto r = log_->append_marker(producer_id, producer_epoch, marker, leader_epoch());
  if (r) {
    publish_offsets();
    wake_waiters();
  }
  return r;
}

result<void> partition::check_marker(int64_t producer_id, int16_t producer_epoch,
                                     const storage::end_txn_marker& marker) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  if (role() != replica_role::leader)
    return error{partition_errc::not_leader, topic_ + "-" + std::to_string(index_) + " is not led here"};
  return log_->check_marker(producer_id, producer_epoch, marker);
}

std::vector<storage::producer_state_entry> partition::producers() {
  std::vector<storage::producer_state_entry> out;
  if (closed_) return out;
  for (const auto& [id, e] : log_->producer_state().producers()) out.push_back(e);
  return out;
}

result<storage::log::timestamp_and_offset> partition::offset_for_timestamp(int64_t timestamp_ms) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  int64_t found_timestamp = -1;
  auto offset = log_->offset_for_timestamp(timestamp_ms, &found_timestamp);
  if (!offset) return offset.err();
  if (*offset < 0) return storage::log::timestamp_and_offset{-1, -1};
  return storage::log::timestamp_and_offset{found_timestamp, *offset};
}

result<storage::log::timestamp_and_offset> partition::max_timestamp_and_offset() {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  return log_->max_timestamp_and_offset();
}

result<bool> partition::flush_if_needed() {
  if (closed_) return false;
  return log_->flush_if_needed();
}

result<int> partition::enforce_retention(int64_t retention_ms, int64_t retention_bytes) {
  if (closed_) return 0;
  auto r = log_->delete_old_segments(retention_ms, retention_bytes, high_watermark());
  if (r && *r > 0) (void)log_->leader_epochs().truncate_from_start(log_->log_start_offset());
  publish_offsets();
  return r;
}

result<int64_t> partition::delete_records_before(int64_t offset) {
  if (closed_) return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_)};
  const int64_t hw = high_watermark();
  if (offset == -1) offset = hw;
  if (offset < 0 || offset > hw)
    return error{storage::errc::offset_out_of_range,
                 "offset " + std::to_string(offset) + " is above the high watermark " + std::to_string(hw)};
  auto r = log_->delete_records_before(offset);
  if (r) (void)log_->leader_epochs().truncate_from_start(*r);
  publish_offsets();
  return r;
}

std::optional<storage::cleaning_plan> partition::plan_cleaning(storage::cleaning_limits limits) const {
  if (closed_) return std::nullopt;
  limits.high_watermark = std::min(limits.high_watermark, high_watermark());
  return log_->plan_cleaning(limits);
}

result<int64_t> partition::install_cleaned(const storage::cleaning_result& cleaned) {
  if (closed_) {
    for (const auto& g : cleaned.groups) storage::segment::remove_files_of(dir(), g.base_offset, storage::segment_suffix::cleaned);
    return error{storage::errc::not_found, topic_ + "-" + std::to_string(index_) + " is closed"};
  }
  auto r = log_->install_cleaned(cleaned);
  publish_offsets();
  return r;
}

void partition::update_config(const storage::log_config& config) {
  if (closed_) return;
  log_->update_config(config);
  flushes_on_append_.store(config.flush_messages != INT64_MAX, std::memory_order_release);
}

void partition::park(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset) {
  if (closed_ || high_watermark() > offset) {
    waiter->wake();
    return;
  }
  waiters_.add(waiter);
  // Off the strand the high watermark may have moved (and its waiters been woken) between the check and the add:
  // the list's lock orders the add against wake_all, so reading again after it cannot miss that move.
  if (closed_ || high_watermark() > offset) waiter->wake();
}

void partition::park_committed(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset) {
  if (closed_ || last_stable_offset() > offset) {
    waiter->wake();
    return;
  }
  waiters_.add(waiter);
  if (closed_ || last_stable_offset() > offset) waiter->wake();  // as park()
}

void partition::wake_waiters() { waiters_.wake_all(); }

void partition::wait_for_high_watermark(int64_t offset, uint64_t term, int32_t min_insync_replicas, wait_deadline until,
                                        std::function<void(hw_wait_result)> done) {
  // A closed partition (topic deleted, broker stopping) never moves its high watermark again: answered at once
  // rather than waking on every park until the deadline.
  if (closed_ || !is_leader() || leadership_changes() != term) return done(hw_wait_result::not_leader);
  if (high_watermark() >= offset)
    return done(isr_size() < min_insync_replicas ? hw_wait_result::not_enough_replicas : hw_wait_result::reached);
  if (until.passed()) return done(hw_wait_result::timed_out);
  auto waiter = std::make_shared<purgatory_waiter>(strand_);
  park(waiter, offset - 1);
  waiter->async_wait(until, [self = shared_from_this(), offset, term, min_insync_replicas, until,
                             done = std::move(done)]() mutable {
    self->wait_for_high_watermark(offset, term, min_insync_replicas, until, std::move(done));
  });
}

template <class Result, class Start>
asio::awaitable<Result> partition::strand_awaitable(Start start) {
  auto initiate = [self = shared_from_this(), start = std::move(start)](auto handler) mutable {
    asio::post(self->strand(), [start = std::move(start), handler = std::move(handler)]() mutable {
      // std::function needs a copyable callable: the handler (move-only) is shared.
      auto shared = std::make_shared<decltype(handler)>(std::move(handler));
      start([shared](Result r) {
        auto back = asio::get_associated_executor(*shared);
        asio::post(back, [shared, r] { std::move(*shared)(r); });
      });
    });
  };
  return asio::async_initiate<decltype(asio::use_awaitable), void(Result)>(std::move(initiate), asio::use_awaitable);
}

asio::awaitable<hw_wait_result> partition::wait_for_high_watermark(int64_t offset, uint64_t term,
                                                                   int32_t min_insync_replicas, wait_deadline until) {
  return strand_awaitable<hw_wait_result>(
      [self = shared_from_this(), offset, term, min_insync_replicas, until](std::function<void(hw_wait_result)> done) {
        self->wait_for_high_watermark(offset, term, min_insync_replicas, until, std::move(done));
      });
}

int64_t partition::low_watermark() const {
  int64_t low = log_start_offset();
  if (closed_ || role() != replica_role::leader) return low;
  for (const auto& f : followers_)
    if (in_isr(f.broker_id)) low = std::min(low, f.log_start_offset);
  return low;
}

void partition::wait_for_low_watermark(int64_t offset, wait_deadline until, std::function<void(low_watermark_wait)> done) {
  using outcome = low_watermark_wait::outcome;
  if (closed_ || !is_leader()) return done({outcome::not_leader, -1});
  if (const int64_t low = low_watermark(); low >= offset) return done({outcome::reached, low});
  if (until.passed()) return done({outcome::timed_out, low_watermark()});
  auto waiter = std::make_shared<purgatory_waiter>(strand_);
  waiters_.add(waiter);
  waiter->async_wait(until, [self = shared_from_this(), offset, until, done = std::move(done)]() mutable {
    self->wait_for_low_watermark(offset, until, std::move(done));
  });
}

asio::awaitable<low_watermark_wait> partition::wait_for_low_watermark(int64_t offset, wait_deadline until) {
  return strand_awaitable<low_watermark_wait>(
      [self = shared_from_this(), offset, until](std::function<void(low_watermark_wait)> done) {
        self->wait_for_low_watermark(offset, until, std::move(done));
      });
}

void partition::replace_log(storage::log* moved) {
  log_ = moved;
  {
    std::lock_guard lock(dir_mutex_);
    dir_ = moved->dir();
  }
  publish_offsets();
}

std::filesystem::path partition::close(bool for_deletion) {
  auto dir = log_->dir();
  if (!closed_) {
    log_->close(/*durable=*/!for_deletion);
    closed_ = true;
    wake_waiters();
  }
  return dir;
}

result<void> partition::flush() {
  if (closed_) return {};
  return log_->flush();
}

}  // namespace sluice::broker
