#include "broker/partition.h"

#include <cassert>

#include "storage/errc.h"
#include "storage/record_batch.h"

namespace sluice::broker {

void fetch_waiter::wake() {
  if (woken_.exchange(true, std::memory_order_acq_rel)) return;
  asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

partition::partition(std::string topic, int32_t index, storage::log* log, asio::any_io_executor executor)
    : topic_(std::move(topic)), index_(index), log_(log), dir_(log->dir()), strand_(asio::make_strand(executor)) {
  publish_offsets();
  flushes_on_append_.store(log_->config().flush_messages != INT64_MAX, std::memory_order_release);
}

void partition::publish_offsets() {
  int64_t start = log_->log_start_offset();
  int64_t end = log_->log_end_offset();
  // Single node: every appended record is on every replica there is, so HW = LEO.
  assert(start <= end);
  log_start_offset_.store(start, std::memory_order_release);
  log_end_offset_.store(end, std::memory_order_release);
  high_watermark_.store(end, std::memory_order_release);
  size_bytes_.store(log_->size_bytes(), std::memory_order_release);
}

namespace {
// Walks the batch headers of a produce's Records without validating them (the log does that).
bool has_control_batch(std::span<const uint8_t> batches) {
  size_t pos = 0;
  while (batches.size() - pos >= static_cast<size_t>(storage::record_batch_header_size)) {
    auto h = storage::decode_record_batch_header(batches.data() + pos);
    if (h.is_control()) return true;
    if (h.batch_length <= 0) return false;
    pos += static_cast<size_t>(storage::log_overhead) + static_cast<size_t>(h.batch_length);
  }
  return false;
}
}  // namespace

result<storage::append_result> partition::append(std::span<uint8_t> batches) {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
  if (has_control_batch(batches))
    return error{static_cast<int>(storage::errc::invalid_record), "clients may not write control batches"};
  auto r = log_->append(batches, leader_epoch_);
  if (r) {
    publish_offsets();
    wake_waiters();
  }
  return r;
}

result<storage::read_result> partition::read(int64_t offset, int32_t max_bytes, bool min_one_batch) {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
  return log_->read(offset, max_bytes, high_watermark(), min_one_batch);
}

result<int64_t> partition::offset_for_timestamp(int64_t timestamp_ms) {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
  return log_->offset_for_timestamp(timestamp_ms);
}

result<storage::log::timestamp_and_offset> partition::max_timestamp_and_offset() {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
  return log_->max_timestamp_and_offset();
}

result<bool> partition::flush_if_needed() {
  if (closed_) return false;
  return log_->flush_if_needed();
}

result<int> partition::enforce_retention(int64_t retention_ms, int64_t retention_bytes) {
  if (closed_) return 0;
  auto r = log_->delete_old_segments(retention_ms, retention_bytes, high_watermark());
  publish_offsets();
  return r;
}

result<int64_t> partition::delete_records_before(int64_t offset) {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
  const int64_t hw = high_watermark();
  if (offset == -1) offset = hw;
  if (offset < 0 || offset > hw)
    return error{static_cast<int>(storage::errc::offset_out_of_range),
                 "offset " + std::to_string(offset) + " is above the high watermark " + std::to_string(hw)};
  auto r = log_->delete_records_before(offset);
  publish_offsets();
  return r;
}

void partition::update_config(const storage::log_config& config) {
  if (closed_) return;
  log_->update_config(config);
  flushes_on_append_.store(config.flush_messages != INT64_MAX, std::memory_order_release);
}

void partition::park(const std::shared_ptr<fetch_waiter>& waiter, int64_t offset) {
  if (closed_ || high_watermark() > offset) {
    waiter->wake();
    return;
  }
  if (waiters_.size() >= 64) {
    std::erase_if(waiters_, [](const std::weak_ptr<fetch_waiter>& w) { return w.expired(); });
  }
  waiters_.push_back(waiter);
}

void partition::wake_waiters() {
  for (auto& w : waiters_)
    if (auto p = w.lock()) p->wake();
  waiters_.clear();
}

std::filesystem::path partition::close() {
  auto dir = log_->dir();
  if (!closed_) {
    log_->close();
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
