#pragma once
// The per-partition façade: leader epoch, log end offset, high watermark, log start offset, append, read,
// and the fetch purgatory of this partition.
#include <atomic>
#include <boost/asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/log.h"

namespace sluice::broker {

namespace asio = boost::asio;

/// A fetch parked until data arrives or its max_wait_ms runs out (Kafka's DelayedFetch). Lives on the
/// connection's strand; `wake()` may be called from any thread.
class fetch_waiter : public std::enable_shared_from_this<fetch_waiter> {
 public:
  explicit fetch_waiter(asio::any_io_executor executor) : timer_(std::move(executor)) {}
  asio::steady_timer& timer() { return timer_; }
  bool woken() const { return woken_.load(std::memory_order_acquire); }
  /// Ends the wait early; idempotent and thread-safe.
  void wake();

 private:
  asio::steady_timer timer_;
  std::atomic<bool> woken_{false};
};

/// One partition of a topic led by this broker.
///
/// Strand: `strand()`. The log, the waiter list and `closed_` are touched only on it. The offsets are
/// atomics written on the strand and readable from anywhere (Metadata, ListOffsets), with the invariant
/// log start offset <= high watermark <= log end offset.
class partition {
 public:
  using strand_type = asio::strand<asio::any_io_executor>;

  /// `log` is owned by the storage::log_manager and outlives this object's use of it (close() ends it).
  partition(std::string topic, int32_t index, storage::log* log, asio::any_io_executor executor);

  const std::string& topic() const { return topic_; }
  int32_t index() const { return index_; }
  strand_type& strand() { return strand_; }

  int64_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  int64_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  int64_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  int32_t leader_epoch() const { return leader_epoch_; }
  /// The partition's directory (fixed at open; readable from any thread).
  const std::filesystem::path& dir() const { return dir_; }

  // --- on strand() only ---

  /// Appends record batches as received (base offsets and leader epoch rewritten in place). On a single
  /// node the high watermark follows the log end offset at once. Wakes parked fetches. Errors: storage
  /// errc values (corrupt_message, record_too_large, ...), errc::invalid_record for a control batch sent
  /// by a client (Kafka's LogValidator: only coordinators write control records), errc::not_found after
  /// close().
  result<storage::append_result> append(std::span<uint8_t> batches);

  /// Flush policy (flush.messages / flush.ms): fsyncs when due. Run as its own strand task after an
  /// append, so every append queued on the strand meanwhile shares the one fsync (group commit).
  result<bool> flush_if_needed();
  /// True when the topic sets a flush policy, so produce must wait for flush_if_needed() before acking.
  bool flushes_on_append() const { return flushes_on_append_.load(std::memory_order_acquire); }

  /// Retention: deletes whole segments older than `retention_ms` or beyond `retention_bytes` (-1: no
  /// limit), never the active one nor above the high watermark. Returns the number deleted.
  result<int> enforce_retention(int64_t retention_ms, int64_t retention_bytes);
  /// DeleteRecords (KIP-107): moves the log start offset up to `offset` (-1: the high watermark).
  /// errc::offset_out_of_range when `offset` is above the high watermark. Returns the new log start.
  result<int64_t> delete_records_before(int64_t offset);
  /// Applies changed topic configs (segment.bytes, flush.*, message.timestamp.type, ...).
  void update_config(const storage::log_config& config);
  /// Bytes of all segments.
  int64_t size_bytes() const { return size_bytes_.load(std::memory_order_acquire); }

  /// Reads whole batches from `offset`, never above the high watermark. See storage::log::read.
  result<storage::read_result> read(int64_t offset, int32_t max_bytes, bool min_one_batch);

  /// KIP-79: the first offset whose record timestamp >= `timestamp_ms`, -1 when none is that late.
  result<int64_t> offset_for_timestamp(int64_t timestamp_ms);
  /// KIP-734: the largest record timestamp and its offset ({-1, -1} for an empty log).
  result<storage::log::timestamp_and_offset> max_timestamp_and_offset();

  /// Parks `waiter` until the high watermark passes `offset`; wakes it at once if it already has.
  void park(const std::shared_ptr<fetch_waiter>& waiter, int64_t offset);

  /// Closes the log (flushing it); later appends and reads fail. Returns the directory of the log.
  std::filesystem::path close();
  bool closed() const { return closed_; }
  /// Flushes the log to disk (fsync).
  result<void> flush();

 private:
  void publish_offsets();
  void wake_waiters();

  std::string topic_;
  int32_t index_;
  storage::log* log_;  // owned by the log_manager; not touched once closed_ (it may be deleted then)
  std::filesystem::path dir_;
  strand_type strand_;
  int32_t leader_epoch_ = 0;
  bool closed_ = false;
  std::atomic<int64_t> log_start_offset_{0};
  std::atomic<int64_t> high_watermark_{0};
  std::atomic<int64_t> log_end_offset_{0};
  std::atomic<int64_t> size_bytes_{0};
  std::atomic<bool> flushes_on_append_{false};
  std::vector<std::weak_ptr<fetch_waiter>> waiters_;
};

}  // namespace sluice::broker
