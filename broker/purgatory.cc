#include "broker/purgatory.h"

#include <algorithm>
#include <chrono>

namespace sluice::broker {

void purgatory_waiter::wake() {
  if (woken_.exchange(true, std::memory_order_acq_rel)) return;
  // The timer is touched on its executor only; a wait not started yet sees woken() when it arms.
  asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

void purgatory_waiter::arm(wait_deadline until) {
  using steady = std::chrono::steady_clock;
  // Watch first, then look: a move between the two is seen by the watch.
  clock_watch_ = until.clock->watch_moves([weak = weak_from_this(), executor = timer_.get_executor(), until] {
    asio::post(executor, [weak, until] {
      if (auto self = weak.lock(); self && until.passed()) self->timer_.cancel();
    });
  });
  if (woken() || until.passed()) {
    timer_.expires_at(steady::time_point::min());
  } else if (clock_watch_) {
    timer_.expires_at(steady::time_point::max());  // only a move of the clock (or a wake) ends it
  } else {
    // A real clock: its monotonic_ms is steady_clock's milliseconds, so the expiry is the deadline.
    timer_.expires_after(std::chrono::milliseconds(until.at_ms - until.clock->monotonic_ms()));
  }
}

asio::awaitable<void> purgatory_waiter::wait(wait_deadline until) {
  auto self = shared_from_this();  // the timer must outlive the wait
  arm(until);
  auto op = timer_.async_wait(asio::as_tuple(asio::use_awaitable));  // not inside co_await: GCC 12
  co_await std::move(op);
  clock_watch_.reset();
}

void waiter_list::add(const std::shared_ptr<purgatory_waiter>& waiter) {
  std::lock_guard lock(mutex_);
  if (waiters_.size() >= 64) std::erase_if(waiters_, [](const std::weak_ptr<purgatory_waiter>& w) { return w.expired(); });
  waiters_.push_back(waiter);
}

void waiter_list::wake_all() {
  std::vector<std::weak_ptr<purgatory_waiter>> parked;
  {
    std::lock_guard lock(mutex_);
    parked.swap(waiters_);
  }
  for (auto& w : parked)
    if (auto p = w.lock()) p->wake();
}

metrics::gauge& purgatory_size(std::string_view operation) {
  return metrics::process_registry().gauge("kafka_server_delayedoperationpurgatory_purgatorysize",
                                           "Requests parked in the purgatory, per operation", {{"delayedoperation", std::string(operation)}});
}

}  // namespace sluice::broker
