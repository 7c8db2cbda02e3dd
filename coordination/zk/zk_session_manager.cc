#include "coordination/zk/zk_session_manager.h"

#include <chrono>
#include <cstdio>

#include "base/logging.h"
#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

using detail::now_ms;
using detail::view_fail;

// ---------------------------------------------------------------------------------------------------------
// the coordination thread

struct zk_session_manager::event_sink {
  std::mutex mutex;
  boost::asio::io_context* io;
  bool alive = true;
  template <typename F>
  void post(F fn) {
    std::lock_guard lock(mutex);
    if (alive) boost::asio::post(*io, std::move(fn));
  }
};

zk_session_manager::zk_session_manager(const zk_options& options, std::shared_ptr<zk_connector> connector,
                                       session_listener& listener)
    : options_(options),
      connector_(std::move(connector)),
      listener_(listener),
      sink_(std::make_shared<event_sink>()),
      disconnect_timer_(io_) {
  sink_->io = &io_;
  work_.emplace(io_.get_executor());
  thread_ = std::thread([this] { io_.run(); });
  thread_id_ = thread_.get_id();
}

void zk_session_manager::join_thread() {
  if (thread_.joinable()) {
    if (on_thread()) thread_.detach();  // destroyed by its own subscriber
    else thread_.join();
  }
}

void zk_session_manager::after_ms(int64_t ms, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(ms));
  timer->async_wait([this, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !stopped_) fn();
  });
}

bool zk_session_manager::mark_stopped() {
  bool expected = false;
  if (!stopped_.compare_exchange_strong(expected, true)) return false;
  return thread_.joinable();
}

void zk_session_manager::close() {
  disconnect_timer_.cancel();
  registered_ = false;
  std::shared_ptr<zk_session> s;
  {
    std::lock_guard lock(mutex_);
    s.swap(session_);
  }
  if (s) s->close();  // ephemerals (/brokers/ids/<id>, /controller) go at once
}

void zk_session_manager::stop_thread() {
  {
    std::lock_guard lock(sink_->mutex);
    sink_->alive = false;
  }
  work_.reset();
  io_.stop();
  if (!on_thread()) thread_.join();  // else the destructor detaches it
}

// ---------------------------------------------------------------------------------------------------------
// the session

std::shared_ptr<zk_session> zk_session_manager::current() const {
  std::lock_guard lock(mutex_);
  return session_;
}

int64_t zk_session_manager::session_id() const {
  auto s = current();
  return s ? s->session_id() : 0;
}

result<void> zk_session_manager::connect() {
  const uint64_t gen = ++generation_;
  armed_.clear();
  auto sink = sink_;
  auto r = connector_->connect(options_.session_timeout_ms, options_.effective_connection_timeout_ms(),
                               [this, sink, gen](session_event ev) {
                                 sink->post([this, gen, ev] { on_session_event(gen, ev); });
                               });
  if (!r.ok())
    return view_fail(view_errc::unavailable, "no ZooKeeper session at " + options_.connect + " within " +
                                                 std::to_string(options_.effective_connection_timeout_ms()) +
                                                 " ms (" + to_string(r.code) + ")");
  std::lock_guard lock(mutex_);
  session_ = r.value;
  return {};
}

void zk_session_manager::on_session_event(uint64_t generation, session_event ev) {
  if (generation != generation_ || stopped_) return;
  switch (ev) {
    case session_event::expired:
      log::warn("zookeeper: session 0x{:x} expired", session_id());
      session_lost();
      break;
    case session_event::disconnected: {
      log::warn("zookeeper: disconnected; the session is given up after {} ms without a server",
                options_.session_timeout_ms);
      disconnect_timer_.expires_after(std::chrono::milliseconds(options_.session_timeout_ms));
      disconnect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
        if (ec || generation != generation_ || stopped_) return;
        log::warn("zookeeper: no server for the session timeout; treating the session as expired");
        session_lost();
      });
      break;
    }
    case session_event::connected:
      disconnect_timer_.cancel();
      log::info("zookeeper: reconnected (same session)");
      break;
  }
}

void zk_session_manager::session_lost() {
  std::shared_ptr<zk_session> old;
  {
    std::lock_guard lock(mutex_);
    old.swap(session_);
  }
  if (!old) return;
  registered_ = false;
  listener_.session_lost();
  ++generation_;
  armed_.clear();
  disconnect_timer_.cancel();
  old->close();
  listener_.session_closed();
  try_reconnect();
}

void zk_session_manager::try_reconnect() {
  if (stopped_ || !self_) return;
  if (!current()) {
    if (auto r = connect(); !r) {
      log::warn("zookeeper: {}; retrying in 1 s", r.err().message);
      after_ms(1000, [this] { try_reconnect(); });
      return;
    }
  }
  const uint64_t gen = generation_;
  if (auto r = register_self(false); !r) {
    log::warn("zookeeper: re-registration failed: {}; retrying in 1 s", r.err().message);
    after_ms(1000, [this, gen] {
      if (gen == generation_) try_reconnect();
    });
    return;
  }
  listener_.registered_again();
}

// ---------------------------------------------------------------------------------------------------------
// registration

result<void> zk_session_manager::register_self(bool retry) {
  auto s = current();
  if (!s) return view_fail(view_errc::unavailable, "no ZooKeeper session");
  const std::string path = broker_znode::path(self_->id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry ? options_.registration_retry_ms : 0);
  while (true) {
    auto r = s->create(path, broker_znode::encode(*self_, now_ms()), create_mode::ephemeral);
    if (r.ok()) return {};
    if (r.code != zk_code::node_exists)
      return view_fail(view_errc::unavailable, "cannot register " + path + ": " + to_string(r.code));
    auto e = s->exists(path, nullptr);
    if (!e.ok()) return view_fail(view_errc::unavailable, "cannot read " + path + ": " + to_string(e.code));
    if (!e.value) continue;  // went away meanwhile
    if (e.value->ephemeral_owner == s->session_id()) return {};  // ours already (a retried create)
    if (std::chrono::steady_clock::now() >= deadline) {
      char owner[32];
      std::snprintf(owner, sizeof owner, "0x%llx", static_cast<unsigned long long>(e.value->ephemeral_owner));
      return error{zk_errc::registration_conflict,
                   "broker.id " + std::to_string(self_->id) + " is already registered at " + path +
                       " by another live ZooKeeper session (" + owner + "): is another broker running with this id?"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// ---------------------------------------------------------------------------------------------------------
// watches and errors

watch_fn zk_session_manager::watcher(watch_kind kind, const std::string& path) {
  if (!armed_.insert({kind, path}).second) return nullptr;  // one pending watch per path and kind
  auto sink = sink_;
  const uint64_t gen = generation_;
  return [this, sink, gen, kind, path](watch_event ev, const std::string&) {
    sink->post([this, gen, kind, ev, path] { on_watch(gen, kind, ev, path); });
  };
}

void zk_session_manager::on_watch(uint64_t generation, watch_kind kind, watch_event, const std::string& path) {
  if (generation != generation_ || stopped_) return;
  armed_.erase({kind, path});
  listener_.watch_fired(path);
}

std::optional<zk_node> zk_session_manager::read_watched(const std::string& path, bool* failed) {
  *failed = false;
  auto s = current();
  if (!s) {
    *failed = true;
    return std::nullopt;
  }
  auto w = watcher(data_watch, path);
  const bool armed_here = static_cast<bool>(w);
  auto r = s->get(path, std::move(w));
  if (r.ok()) return r.value;
  if (armed_here) armed_.erase({data_watch, path});
  if (r.code != zk_code::no_node) {
    *failed = true;
    on_zk_error(r.code);
    return std::nullopt;
  }
  // Absent: an exists watch tells us when it appears.
  auto w2 = watcher(data_watch, path);
  const bool armed2 = static_cast<bool>(w2);
  auto e = s->exists(path, std::move(w2));
  if (!e.ok()) {
    if (armed2) armed_.erase({data_watch, path});
    *failed = true;
    on_zk_error(e.code);
    return std::nullopt;
  }
  if (!e.value) return std::nullopt;
  auto again = s->get(path, nullptr);  // created meanwhile; the exists watch covers later changes
  if (again.ok()) return again.value;
  if (again.code != zk_code::no_node) {
    *failed = true;
    on_zk_error(again.code);
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> zk_session_manager::read_children(const std::string& path) {
  auto s = current();
  if (!s) return std::nullopt;
  auto w = watcher(child_watch, path);
  const bool armed_here = static_cast<bool>(w);
  auto r = s->get_children(path, std::move(w));
  if (r.ok()) return std::move(r.value);
  if (armed_here) armed_.erase({child_watch, path});
  if (r.code == zk_code::no_node) {
    log::warn("zookeeper: {} is missing; re-creating it", path);
    create_recursive(*s, path);
    schedule_resync();
  } else {
    on_zk_error(r.code);
  }
  return std::nullopt;
}

void zk_session_manager::on_zk_error(zk_code c) {
  if (c == zk_code::session_expired || c == zk_code::closed) {
    const uint64_t gen = generation_;
    boost::asio::post(io_, [this, gen] {
      if (gen == generation_ && !stopped_) session_lost();
    });
  } else {
    log::warn("zookeeper: operation failed ({}); reading the cluster again shortly", to_string(c));
    schedule_resync();
  }
}

void zk_session_manager::schedule_resync() {
  const uint64_t gen = generation_;
  after_ms(1000, [this, gen] {
    if (gen != generation_ || !current()) return;
    listener_.resync();
  });
}

}  // namespace sluice::coordination::zk
