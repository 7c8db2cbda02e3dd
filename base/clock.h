#pragma once
// Injected clocks: time-dependent logic takes a clock& so tests can move time by hand.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace sluice {

/// Source of time. `now_ms` is wall-clock milliseconds since the Unix epoch (record timestamps,
/// retention); `monotonic_ms` never goes back (timeouts, session expiry).
class clock {
 public:
  virtual ~clock() = default;
  virtual int64_t now_ms() const = 0;
  virtual int64_t monotonic_ms() const = 0;
  /// The monotonic clock in microseconds, for durations shorter than a millisecond (request times).
  virtual int64_t monotonic_us() const { return monotonic_ms() * 1000; }
  /// For clocks moved by hand (tests): calls `on_move()` after every move, on the thread that moved the
  /// clock, for as long as the returned handle is held. A clock that follows real time returns null and
  /// never calls it: a real timer (asio::steady_timer) serves deadlines in its `monotonic_ms` terms.
  virtual std::shared_ptr<void> watch_moves(std::function<void()> on_move) {
    (void)on_move;
    return nullptr;
  }
};

class system_clock final : public clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
  }
  int64_t monotonic_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  int64_t monotonic_us() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  static system_clock& instance() {
    static system_clock c;
    return c;
  }
};

/// A clock that moves only when told to; both readings advance together. Each advance_ms() then calls the
/// watchers (watch_moves), so timers on this clock (broker/purgatory.h) fire when a test moves time.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(); }
  int64_t monotonic_ms() const override { return now_.load(); }
  void advance_ms(int64_t ms) {
    now_ += ms;
    std::vector<std::shared_ptr<std::function<void()>>> live;
    {
      std::lock_guard lock(mutex_);
      for (const auto& w : watchers_)
        if (auto f = w.lock()) live.push_back(std::move(f));
    }
    for (const auto& f : live) (*f)();  // outside the lock: a watcher may add another
  }
  std::shared_ptr<void> watch_moves(std::function<void()> on_move) override {
    auto handle = std::make_shared<std::function<void()>>(std::move(on_move));
    std::lock_guard lock(mutex_);
    std::erase_if(watchers_, [](const auto& w) { return w.expired(); });
    watchers_.push_back(handle);
    return handle;
  }

 private:
  std::atomic<int64_t> now_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<std::function<void()>>> watchers_;
};

}  // namespace sluice
