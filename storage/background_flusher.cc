#include "storage/background_flusher.h"

namespace sluice::storage {

background_flusher::background_flusher(bool threaded) {
  if (threaded) thread_ = std::thread([this] { loop(); });
}

background_flusher::~background_flusher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  run_pending();  // unthreaded mode, or jobs queued after the thread saw stopping_
}

void background_flusher::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

size_t background_flusher::run_pending() {
  size_t ran = 0;
  for (;;) {
    std::function<void()> job;
    {
      std::lock_guard lock(mutex_);
      if (jobs_.empty()) break;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    job();
    job = nullptr;  // release what it held before reporting idle
    ++ran;
    {
      std::lock_guard lock(mutex_);
      --running_;
    }
    idle_.notify_all();
  }
  return ran;
}

void background_flusher::drain() {
  if (!thread_.joinable()) {
    run_pending();
    return;
  }
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && running_ == 0; });
}

size_t background_flusher::pending() const {
  std::lock_guard lock(mutex_);
  return jobs_.size() + running_;
}

void background_flusher::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // release what it held before reporting idle
    lock.lock();
    --running_;
    idle_.notify_all();
  }
}

}  // namespace sluice::storage
