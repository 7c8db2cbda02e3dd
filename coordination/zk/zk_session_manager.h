#pragma once
// The ZooKeeper session of one zk_cluster, and the thread everything of zk_cluster runs on.
//
// Owns: the coordination thread and its io_context; the current zk_session and its generation (events
// of an older session are dropped); this broker's registration (/brokers/ids/<id>, made again in every new
// session) and whether it is registered; which watches are armed (one pending watch per path and kind);
// the disconnect timer; what happens on a ZooKeeper error (session lost: reconnect; anything else: read
// the cluster again in a second).
//
// Threads: everything runs on the coordination thread except current(), session_id(), registered(),
// stopped(), on_thread() and run_sync(), which any thread may call. ZooKeeper's callbacks (its client
// thread) only post to the coordination thread. The rest of zk_cluster learns of sessions and watches
// through session_listener, always on the coordination thread.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coordination/cluster_view.h"
#include "coordination/zk/zk_client.h"
#include "coordination/zk/zk_options.h"

namespace sluice::coordination::zk {

/// What the session manager tells the rest of zk_cluster (zk_cluster implements it). Coordination thread.
class session_listener {
 public:
  /// A watch fired on `path` (no longer armed): read it again, let the controller act, publish.
  virtual void watch_fired(const std::string& path) = 0;
  /// An operation failed other than by losing the session, a second ago: read the whole cluster again.
  virtual void resync() = 0;
  /// The session is lost and this broker no longer registered; the old session is still open.
  virtual void session_lost() = 0;
  /// The lost session is closed (its ephemerals are gone); opening a new one comes next.
  virtual void session_closed() = 0;
  /// A new session is open and this broker is registered in it again.
  virtual void registered_again() = 0;

 protected:
  ~session_listener() = default;
};

class zk_session_manager {
 public:
  enum watch_kind : int { data_watch = 0, child_watch = 1 };

  /// Starts the coordination thread; connects nothing yet (connect()).
  zk_session_manager(const zk_options& options, std::shared_ptr<zk_connector> connector, session_listener& listener);
  ~zk_session_manager() { join_thread(); }

  const zk_options& options() const { return options_; }

  // --- the coordination thread ---
  bool on_thread() const { return std::this_thread::get_id() == thread_id_; }
  boost::asio::io_context& io() { return io_; }
  /// Runs `fn` on the coordination thread and waits for it (inline when already there).
  template <typename F>
  auto run_sync(F fn) -> decltype(fn());
  /// Runs fn on the coordination thread after `ms` milliseconds, unless stopped by then.
  void after_ms(int64_t ms, std::function<void()> fn);
  bool stopped() const { return stopped_.load(); }
  /// zk_cluster::stop, in three steps: mark_stopped (any thread; false when already stopped or the thread
  /// is gone), close (coordination thread: registration dropped, session closed), stop_thread (any thread).
  bool mark_stopped();
  void close();
  void stop_thread();
  /// After stop_thread: joins the coordination thread, or detaches it when called on it (zk_cluster
  /// destroyed by its own subscriber). Before the other parts are destroyed.
  void join_thread();

  // --- the session (coordination thread unless said otherwise) ---
  /// The open session, or null between a loss and the next connect. Any thread.
  std::shared_ptr<zk_session> current() const;
  /// The open session's id, 0 when none. Any thread.
  int64_t session_id() const;
  /// Opens a new session (a new generation). Errors: view_errc::unavailable when none within the
  /// connection timeout.
  result<void> connect();

  // --- this broker's registration (coordination thread unless said otherwise) ---
  void set_self(const broker_registration& self) { self_ = self; }
  const std::optional<broker_registration>& self() const { return self_; }
  int32_t self_id() const { return self_ ? self_->id : -1; }
  /// Registered in the current session. Any thread.
  bool registered() const { return registered_.load(); }
  void set_registered(bool on) { registered_ = on; }
  /// Creates the ephemeral /brokers/ids/<id>. With `retry`, waits up to registration_retry_ms for another
  /// session's registration to expire. Errors: zk_errc::registration_conflict, view_errc::unavailable.
  result<void> register_self(bool retry);

  // --- reads with watches (coordination thread) ---
  /// Reads `path` with a data watch (an exists watch when absent: it tells when it appears). nullopt when
  /// absent or on failure (*failed set; the error is handled).
  std::optional<zk_node> read_watched(const std::string& path, bool* failed);
  /// Lists the children of `path` with a child watch; nullopt on failure (handled). A missing path is
  /// created again and the cluster read again shortly.
  std::optional<std::vector<std::string>> read_children(const std::string& path);
  /// Whether a watch of `kind` is pending on `path`.
  bool armed(watch_kind kind, const std::string& path) const { return armed_.contains({kind, path}); }
  /// A failed operation: session expired or closed -> the session is lost; else read the cluster again
  /// in a second.
  void on_zk_error(zk_code c);

 private:
  struct event_sink;  // lets ZooKeeper callbacks post to the coordination thread while it lives

  watch_fn watcher(watch_kind kind, const std::string& path);
  void on_watch(uint64_t generation, watch_kind kind, watch_event ev, const std::string& path);
  void on_session_event(uint64_t generation, session_event ev);
  void session_lost();
  void try_reconnect();
  void schedule_resync();

  const zk_options options_;
  const std::shared_ptr<zk_connector> connector_;
  session_listener& listener_;

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::shared_ptr<event_sink> sink_;
  boost::asio::steady_timer disconnect_timer_;

  // Shared with caller threads.
  mutable std::mutex mutex_;
  std::shared_ptr<zk_session> session_;  // mutex_
  std::atomic<bool> registered_{false};
  std::atomic<bool> stopped_{false};

  // Coordination thread only.
  std::optional<broker_registration> self_;
  uint64_t generation_ = 0;  // session generation: events of an older session are dropped
  std::set<std::pair<int, std::string>> armed_;
};

template <typename F>
auto zk_session_manager::run_sync(F fn) -> decltype(fn()) {
  if (on_thread()) return fn();
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto done = task.get_future();
  boost::asio::post(io_, [&task] { task(); });
  return done.get();
}

}  // namespace sluice::coordination::zk
