#pragma once
// Injected clocks: time-dependent logic takes a clock& so tests can move time by hand.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace sluice {

/// Source of time. `now_ms` is wall-clock milliseconds since the Unix epoch (record timestamps,
/// retention); `monotonic_ms` never goes back (timeouts, session expiry).
class clock {
 public:
  virtual ~clock() = default;
  virtual int64_t now_ms() const = 0;
  virtual int64_t monotonic_ms() const = 0;
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
  static system_clock& instance() {
    static system_clock c;
    return c;
  }
};

/// A clock that moves only when told to; both readings advance together.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(); }
  int64_t monotonic_ms() const override { return now_.load(); }
  void advance_ms(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace sluice
