#pragma once
// Test hooks (DESIGN.md §6): faults the broker injects on purpose so that client retry paths can be
// exercised. All are off by default; their config keys start with `sluice.test.fault.` and must never be
// set in production.
//
//   sluice.test.fault.produce.drop.response.rate   0..1 (default 0): fraction of Produce requests (acks 1
//       or -1) whose connection is closed AFTER the batches were appended but BEFORE the response is sent,
//       so that the client retries batches that are already in the log (idempotence tests).
//   sluice.test.fault.seed                          seed of the hook's random choices (default 1).
#include <cstdint>
#include <mutex>
#include <random>

namespace sluice::broker {

/// Thread-safe (a mutex around the generator; only consulted when a rate is set).
class fault_injector {
 public:
  fault_injector(double produce_drop_response_rate, uint64_t seed)
      : produce_drop_response_rate_(produce_drop_response_rate), rng_(seed) {}

  bool enabled() const { return produce_drop_response_rate_ > 0; }

  /// True when this Produce response is to be dropped (and its connection closed).
  bool drop_produce_response() {
    if (produce_drop_response_rate_ <= 0) return false;
    std::lock_guard lock(mutex_);
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < produce_drop_response_rate_;
  }

 private:
  double produce_drop_response_rate_;
  std::mutex mutex_;
  std::mt19937_64 rng_;
};

}  // namespace sluice::broker
