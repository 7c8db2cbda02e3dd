#pragma once
// The broker process: storage, coordination, topics and the network, wired together.
#include <boost/asio.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/fault_injection.h"
#include "broker/http/admin_api.h"
#include "broker/http/http_server.h"
#include "broker/producer_id_manager.h"
#include "broker/quota_manager.h"
#include "broker/fetch_session_cache.h"
#include "broker/log_cleaner_manager.h"
#include "broker/log_maintenance.h"
#include "broker/group_service.h"
#include "broker/txn_service.h"
#include "broker/net/server.h"
#include "broker/broker_services.h"
#include "broker/dispatcher.h"
#include "broker/topic_registry.h"
#include "broker/replication/replica_manager.h"
#include "broker/security/authorizer.h"
#include "broker/security/credential_store.h"
#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "storage/log_manager.h"

namespace sluice::broker {

/// Lifecycle: construct, `start()` (opens the logs, binds the listeners, starts one io thread per core),
/// `wait()` until SIGINT/SIGTERM or `stop()`, then `close()` flushes and closes every log.
///
/// The io_context and everything a suspended coroutine may still reference are deliberately never
/// destroyed before process exit: strands must not outlive their io_context, and tearing down parked
/// coroutines buys nothing when the process is about to end. Data safety comes from `close()`.
class broker {
 public:
  explicit broker(broker_config config);

  /// Opens everything and starts serving. Errors are fatal start-up problems (unusable log dir, port in
  /// use) with a message for the operator.
  result<void> start();
  /// Blocks until the broker is stopped (signal or stop()) and the io threads have finished.
  void wait();
  /// Stops accepting and ends the io threads. Thread-safe.
  void stop();
  /// Cluster mode: controlled shutdown first (leadership moved away, bounded wait), then stop().
  void begin_shutdown();
  /// Flushes and closes every partition log. Call after wait().
  void close();

  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const { return server_->local_endpoints(); }
  /// The bound http.listeners endpoints (empty without an HTTP side).
  std::vector<boost::asio::ip::tcp::endpoint> http_endpoints() const {
    return http_ ? http_->local_endpoints() : std::vector<boost::asio::ip::tcp::endpoint>{};
  }

 private:
  broker_config config_;
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  /// Single node: an embedded_store; cluster mode: a zk_cluster. Both are store and view at once.
  std::unique_ptr<coordination::cluster_store> store_;
  std::unique_ptr<security::credential_store> credentials_;  // over store_
  std::unique_ptr<security::authorizer> authorizer_;         // authorizer.class.name set
  std::unique_ptr<quota_manager> quotas_;                    // client byte-rate quotas
  std::unique_ptr<fetch_session_cache> fetch_sessions_;     // KIP-227 incremental fetch sessions
  int fetch_session_metrics_ = 0;                            // their /metrics collector's handle
  coordination::cluster_view* view_ = nullptr;  // the same object as store_
  bool cluster_mode_ = false;
  std::unique_ptr<replica_manager> replicas_;
  std::thread shutdown_thread_;
  std::unique_ptr<storage::log_manager> logs_;
  std::unique_ptr<topic_registry> topics_;
  std::unique_ptr<group_service> groups_;
  std::unique_ptr<txn_service> txns_;
  std::unique_ptr<producer_id_manager> producer_ids_;
  std::unique_ptr<fault_injector> faults_;
  std::unique_ptr<broker_services> services_;  // built once, after everything it names
  std::unique_ptr<dispatcher> dispatcher_;
  std::unique_ptr<net::server> server_;
  std::unique_ptr<http::admin_api> admin_;      // the routes of the HTTP side
  std::unique_ptr<http::http_server> http_;     // http.listeners (null: none)
  std::unique_ptr<log_maintenance> maintenance_;
  std::unique_ptr<log_cleaner_manager> cleaner_;  // compaction (cleanup.policy=compact)
  std::vector<std::thread> threads_;
  std::vector<int> log_dir_locks_;  // flock'ed <log dir>/.lock files
};

}  // namespace sluice::broker
