#pragma once
// Runs the fsyncs that need not hold up an append: the one of a segment that a roll has just made inactive
// (Kafka's UnifiedLog.roll schedules "flush-log" on its scheduler instead of flushing inline). One thread per
// log_manager, jobs in submission order. A job holds only what it syncs (the segment's shared descriptor and file
// paths) and the state it reports to (log.cc's roll_flushes), never the log itself, so a log closed, truncated or
// deleted meanwhile is no hazard: its owner reads the outcome on its strand, or ignores a stale one.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sluice::storage {

class background_flusher {
 public:
  /// `threaded` false: no thread; jobs wait for run_pending() (tests that decide when a flush completes).
  explicit background_flusher(bool threaded = true);
  /// Runs every job still queued, then joins the thread.
  ~background_flusher();
  background_flusher(const background_flusher&) = delete;
  background_flusher& operator=(const background_flusher&) = delete;

  /// Queues `job` (it must not throw).
  void submit(std::function<void()> job);
  /// Runs the queued jobs on the caller's thread; returns how many ran. For the unthreaded mode.
  size_t run_pending();
  /// Blocks until every job submitted before the call has finished.
  void drain();
  /// Jobs queued or running.
  size_t pending() const;

 private:
  void loop();
  mutable std::mutex mutex_;
  std::condition_variable wake_;   // a job arrived, or stop
  std::condition_variable idle_;   // a job finished
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sluice::storage
