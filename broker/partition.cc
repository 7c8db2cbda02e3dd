#include "broker/partition.h"

#include <cassert>

#include "storage/errc.h"

namespace sluice::broker {

void fetch_waiter::wake() {
  if (woken_.exchange(true, std::memory_order_acq_rel)) return;
  asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

partition::partition(std::string topic, int32_t index, storage::log* log, asio::any_io_executor executor)
    : topic_(std::move(topic)), index_(index), log_(log), strand_(asio::make_strand(executor)) {
  publish_offsets();
}

void partition::publish_offsets() {
  int64_t start = log_->log_start_offset();
  int64_t end = log_->log_end_offset();
  // Single node: every appended record is on every replica there is, so HW = LEO.
  assert(start <= end);
  log_start_offset_.store(start, std::memory_order_release);
  log_end_offset_.store(end, std::memory_order_release);
  high_watermark_.store(end, std::memory_order_release);
}

result<storage::append_result> partition::append(std::span<uint8_t> batches) {
  if (closed_) return error{static_cast<int>(storage::errc::not_found), topic_ + "-" + std::to_string(index_)};
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
