#pragma once
// The one purgatory mechanism (Kafka's DelayedOperation, DESIGN.md §3): a wait parked where the thing it waits
// for happens (a partition's high watermark or log end offset, the cluster snapshot), ended by a wake from
// there or by a deadline on the injected clock. No polling: a real clock arms an asio timer; a clock moved by
// hand (tests) fires the wait when it is advanced past the deadline.
#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/metrics.h"
#include <utility>
#include <vector>

#include "base/clock.h"

namespace sluice::broker {

namespace asio = boost::asio;

/// A point in time on an injected clock: `at_ms` in `clock->monotonic_ms()` terms (milliseconds, never going
/// back). Passed once the clock reads `at_ms` or later.
struct wait_deadline {
  sluice::clock* clock = nullptr;
  int64_t at_ms = 0;

  /// `ms` (>= 0; a negative value counts as 0) from now on `c`.
  static wait_deadline after(sluice::clock& c, int64_t ms) { return {&c, c.monotonic_ms() + std::max<int64_t>(ms, 0)}; }
  bool passed() const { return clock->monotonic_ms() >= at_ms; }
};

/// One parked wait: ends when woken (`wake()`, from any thread: an append, a high watermark move, a role
/// change, a new cluster snapshot) or when its deadline passes on the injected clock, whichever comes first.
/// One-shot: a waiter is woken once; a caller that must wait again (its condition not met yet) makes a new one.
///
/// Strand: `executor` (given at construction) is the strand the waiting code runs on; the wait is started and
/// completes there. `wake()` and the clock's move notifications only post to it.
class purgatory_waiter : public std::enable_shared_from_this<purgatory_waiter> {
 public:
  explicit purgatory_waiter(asio::any_io_executor executor) : timer_(std::move(executor)) {}

  /// Ends the wait early; idempotent and thread-safe. Before the wait starts, the wait then ends at once.
  void wake();
  bool woken() const { return woken_.load(std::memory_order_acquire); }

  /// On the executor: calls `done()` (on the executor) once woken or once `until` has passed, posted at once
  /// when either holds already. Says nothing of which ended it: the caller checks its own condition and
  /// `until.passed()` again. `F`: void(), move-only allowed.
  template <typename F>
  void async_wait(wait_deadline until, F done) {
    arm(until);
    timer_.async_wait([self = shared_from_this(), done = std::move(done)](const boost::system::error_code&) mutable {
      self->clock_watch_.reset();
      done();
    });
  }

  /// Coroutine form of async_wait(), awaited on the executor.
  asio::awaitable<void> wait(wait_deadline until);

 private:
  // Sets the timer: real time, expiry at the deadline; a clock moved by hand, no expiry but a watch that
  // cancels the timer once a move passes the deadline; woken or past already, expiry now.
  void arm(wait_deadline until);

  asio::steady_timer timer_;
  std::atomic<bool> woken_{false};
  std::shared_ptr<void> clock_watch_;  // held while waiting on a clock moved by hand
};

/// The waiters parked on one thing (a partition, the cluster snapshot). Not thread-safe: its owner touches it
/// on its strand or under its lock. Holds waiters weakly: a wait abandoned by its caller (connection closed)
/// is dropped now and then.
class waiter_list {
 public:
  /// Thread-safe.
  void add(const std::shared_ptr<purgatory_waiter>& waiter);
  /// Wakes every waiter parked so far and forgets them. Thread-safe; the wakes happen outside the lock.
  void wake_all();
  size_t size() const {
    std::lock_guard lock(mutex_);
    return waiters_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<purgatory_waiter>> waiters_;
};


/// Kafka's DelayedOperationPurgatory size per operation ("Produce": acks=all produces waiting for replication,
/// "Fetch": fetches parked for min_bytes), as /metrics shows it
/// (kafka_server_delayedoperationpurgatory_purgatorysize{delayedoperation}).
metrics::gauge& purgatory_size(std::string_view operation);

/// Counts one parked request in purgatory_size(operation) for its lifetime.
class parked_in_purgatory {
 public:
  explicit parked_in_purgatory(metrics::gauge& g) : g_(g) { g_.add(); }
  ~parked_in_purgatory() { g_.sub(); }
  parked_in_purgatory(const parked_in_purgatory&) = delete;
  parked_in_purgatory& operator=(const parked_in_purgatory&) = delete;

 private:
  metrics::gauge& g_;
};

}  // namespace sluice::broker
