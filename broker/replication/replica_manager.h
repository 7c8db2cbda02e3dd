#pragma once
// Cluster mode: turns the cluster's partition states into roles on this broker (Kafka's ReplicaManager
// becomeLeaderOrFollower), runs one replica fetcher per leader broker, writes ISR changes proposed by
// led partitions to the coordination store, and checks for lagging followers (replica.lag.time.max.ms).
#include <boost/asio.hpp>
#include <map>
#include <memory>
#include <thread>

#include "base/metrics.h"
#include "base/clock.h"
#include "broker/config.h"
#include "broker/partition.h"
#include "broker/replication/replica_fetcher.h"
#include "coordination/cluster_view.h"

namespace sluice::broker {

class topic_registry;
class group_service;

/// Threading: snapshots are applied on the manager's strand; roles are set on each partition's strand;
/// ISR writes (blocking coordination calls) run on a worker thread of their own.
class replica_manager {
 public:
  replica_manager(const broker_config& config, coordination::cluster_view& view, topic_registry& topics,
                  asio::any_io_executor executor, sluice::clock& clock);
  ~replica_manager();

  /// Applies the current snapshot, subscribes to the next ones and starts the ISR shrink check.
  void start();
  /// Stops fetchers, timers and the ISR worker.
  void stop();
  /// Controlled shutdown: this broker stops fetching as a follower, so that leaders elsewhere do not take
  /// it back into their ISR while the controller moves leadership away (Kafka's StopReplica to a
  /// shutting-down broker). Snapshots applied later start no fetcher. Waits until done (not on the
  /// manager's strand).
  void stop_following();

  /// The follower side of the replication throttle, given to every fetcher made from then on. Before start().
  void set_follower_throttle(follower_throttle throttle) { throttle_ = std::move(throttle); }

  /// Called after a led partition's role changed (group coordinators load or unload their shard).
  void on_leadership_change(std::function<void(std::shared_ptr<partition>, bool leader)> f) { leadership_ = std::move(f); }

  /// Leader: writes a proposed ISR change (conditional on its version) and applies what was stored.
  /// Thread-safe.
  void submit_isr_change(std::shared_ptr<partition> p, isr_change change);

 private:
  struct applied {
    std::weak_ptr<partition> p;
    replica_role role = replica_role::offline;
    int32_t leader = -1;
    int32_t leader_epoch = -1;
    int32_t version = -2;
    std::vector<int32_t> replicas;  // the assignment applied to a led partition (reassignments change it)
  };
  void apply(std::shared_ptr<const coordination::cluster_snapshot> s);
  asio::awaitable<void> shrink_loop();
  std::shared_ptr<replica_fetcher> fetcher_for(int32_t leader_id, const coordination::cluster_snapshot& s);

  const broker_config& config_;
  coordination::cluster_view& view_;
  topic_registry& topics_;
  asio::any_io_executor executor_;
  sluice::clock& clock_;
  asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer shrink_timer_;
  std::map<std::pair<std::string, int32_t>, applied> applied_;
  std::map<int32_t, std::shared_ptr<replica_fetcher>> fetchers_;
  follower_throttle throttle_;
  std::function<void(std::shared_ptr<partition>, bool)> leadership_;
  bool stopped_ = false;
  bool following_stopped_ = false;
  asio::io_context isr_io_;
  asio::executor_work_guard<asio::io_context::executor_type> isr_work_;
  std::thread isr_thread_;
};

/// Kafka's ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec as /metrics counters, counted when a leader's ISR
/// change is stored.
metrics::counter& isr_shrinks_counter();
metrics::counter& isr_expands_counter();

}  // namespace sluice::broker
