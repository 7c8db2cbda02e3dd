#pragma once
// A thread that calls a function every `interval` until it is destroyed (the ACL and quota refreshers re-read the
// cluster store so). The destructor wakes it and joins: at most one call in progress is waited for.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sluice {

class periodic_thread {
 public:
  periodic_thread() = default;
  periodic_thread(const periodic_thread&) = delete;
  periodic_thread& operator=(const periodic_thread&) = delete;
  ~periodic_thread() { stop(); }

  /// Starts calling `fn` every `interval` (the first call one interval from now). Call once.
  void start(std::chrono::milliseconds interval, std::function<void()> fn) {
    thread_ = std::thread([this, interval, fn = std::move(fn)] {
      std::unique_lock lock(mutex_);
      while (!stopping_) {
        wake_.wait_for(lock, interval, [this] { return stopping_; });
        if (stopping_) break;
        lock.unlock();
        fn();
        lock.lock();
      }
    });
  }

  /// Stops and joins (also done by the destructor).
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sluice
