// published<T>: a shared_ptr that one thread replaces and many threads read, each read taking its own
// reference to the current value (read-copy-update of an immutable snapshot).
#pragma once

#include <memory>
#include <mutex>

namespace sluice {

/// Holds a std::shared_ptr<T> that load() copies and store() replaces, safe from any thread.
///
/// Why not std::atomic<std::shared_ptr<T>>: libstdc++ 12 implements it with a lock bit whose unlock after a
/// load is a relaxed store. Under the C++ memory model that leaves the reader's access to the stored pointer
/// unordered with the next writer's, and ThreadSanitizer reports it as a data race. A mutex orders both sides.
/// The critical section is one reference-count increment (load) or a pointer swap (store; the old value is
/// released outside the lock), so readers wait at most that long.
template <typename T>
class published {
 public:
  published() = default;
  explicit published(std::shared_ptr<T> initial) : value_(std::move(initial)) {}
  published(const published&) = delete;
  published& operator=(const published&) = delete;

  /// The current value: a reference that stays valid whatever later store() calls do.
  std::shared_ptr<T> load() const {
    std::lock_guard lock(mutex_);
    return value_;
  }

  /// Replaces the value. Readers that loaded the old one keep it; it is freed when the last one lets go.
  void store(std::shared_ptr<T> next) {
    {
      std::lock_guard lock(mutex_);
      value_.swap(next);
    }
    // `next` now holds the old value and is released here, outside the lock (its destructor may be long).
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<T> value_;
};

}  // namespace sluice
