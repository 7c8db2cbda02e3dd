#pragma once
// Cluster mode on ZooKeeper: one object per broker implementing both cluster_store (topics, configs,
// producer id blocks, cluster id: synchronous admin calls) and cluster_view (registration, following the
// cluster through watches, ISR updates, controlled shutdown), plus the controller that runs on the broker
// that wins /controller. coordination/README.md describes the znodes and what the controller does.
//
// Threads: one coordination thread (its own io_context) owns the session's watches, the followed state
// and the controller; ZooKeeper callbacks only post events to it. Subscribers are called on it. The
// cluster_store calls and update_isr run on the caller's thread (synchronous by contract: a ZooKeeper
// round trip); start, controlled_shutdown and stop wait for the coordination thread.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "coordination/zk/controller_logic.h"
#include "coordination/zk/zk_client.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

/// Settings, with Kafka's broker keys and defaults (zk_options::from_config reads them).
struct zk_options {
  std::string connect;                            // zookeeper.connect: host:port[,host:port...][/chroot]
  int32_t session_timeout_ms = 18000;             // zookeeper.session.timeout.ms
  int32_t connection_timeout_ms = -1;             // zookeeper.connection.timeout.ms (-1: the session timeout)
  bool unclean_leader_election = false;           // unclean.leader.election.enable (topic config overrides)
  bool auto_leader_rebalance = true;              // auto.leader.rebalance.enable
  int64_t leader_imbalance_check_interval_ms = 300'000;  // leader.imbalance.check.interval.seconds * 1000
  int32_t leader_imbalance_per_broker_percentage = 10;   // leader.imbalance.per.broker.percentage
  /// How long start() keeps retrying when the broker id is registered by another session (a restarted
  /// broker whose previous session has not expired yet). 0: fail at once, as Kafka does.
  int64_t registration_retry_ms = 0;              // sluice.zookeeper.registration.retry.ms

  int32_t effective_connection_timeout_ms() const {
    return connection_timeout_ms > 0 ? connection_timeout_ms : session_timeout_ms;
  }
  /// Reads the keys above from broker properties (missing keys keep the defaults;
  /// `sluice.leader.imbalance.check.interval.ms`, when present, overrides the seconds key for tests).
  /// Errors: zk_errc::malformed naming the key with a bad value.
  static result<zk_options> from_config(const std::map<std::string, std::string>& props);
};

class zk_cluster final : public cluster_store, public cluster_view {
 public:
  /// Connects to options.connect with the C client, creates the top-level paths and reads or creates the
  /// cluster id (Kafka: getOrGenerateClusterId). Errors: view_errc::unavailable when no session could be
  /// opened within the connection timeout; zk_errc::malformed for a corrupt /cluster/id.
  static result<std::unique_ptr<zk_cluster>> open(const zk_options& options);
  /// The same over any connector (the fake ZooKeeper in unit tests).
  static result<std::unique_ptr<zk_cluster>> open(const zk_options& options, std::shared_ptr<zk_connector> connector);
  ~zk_cluster() override;

  // cluster_store (ZooKeeper round trips on the caller's thread; errc::io_error when ZooKeeper fails)
  std::string cluster_id() const override;
  std::vector<topic_assignment> topics() const override;
  /// Writes /config/topics/<t> then /brokers/topics/<t> (the controller then creates the partition
  /// states). topic_exists also when the topic is still marked for deletion.
  result<void> create_topic(const topic_assignment& topic) override;
  /// Creates the marker /admin/delete_topics/<t> and returns; the controller deletes the topic (the
  /// snapshot drops it once done).
  result<void> delete_topic(const std::string& name) override;
  result<void> set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) override;
  /// Read-modify-write of /brokers/topics/<t> conditional on its version (retried on BADVERSION).
  result<void> add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) override;
  /// Read-modify-write of /latest_producer_id_block conditional on its version (Kafka's ZkProducerIdManager).
  result<producer_id_block> allocate_producer_id_block(int32_t broker_id, int64_t size = producer_id_block_size) override;

  // cluster_view
  /// Registers the ephemeral /brokers/ids/<id>, reads the cluster with watches, takes part in the
  /// controller election, publishes the first snapshot. Errors: zk_errc::registration_conflict when the id
  /// is registered by another live session; view_errc::unavailable.
  result<void> start(const broker_registration& self) override;
  std::shared_ptr<const cluster_snapshot> snapshot() const override;
  void subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) override;
  /// Conditional set of the state znode (BADVERSION -> version_conflict, NONODE -> version_conflict).
  result<partition_state> update_isr(const std::string& topic, int32_t partition, const partition_state& next) override;
  /// Creates /admin/controlled_shutdown/<id> and waits until the controller reports no remaining leadership
  /// of a partition with more than one replica. Errors: timeout, not_registered, unavailable (also when
  /// called from a subscriber: it would wait on its own thread).
  result<void> controlled_shutdown(int64_t timeout_ms) override;
  void stop() override;

  // For tests and diagnostics.
  int64_t session_id() const;
  bool is_controller() const { return is_controller_flag_.load(); }
  int32_t controller_epoch() const { return controller_epoch_flag_.load(); }

 private:
  zk_cluster(const zk_options& options, std::shared_ptr<zk_connector> connector);

  struct event_sink;  // lets ZooKeeper callbacks post to the coordination thread while it lives
  enum watch_kind : int { data_watch = 0, child_watch = 1 };
  struct broker_entry {
    broker_registration reg;
    int64_t czxid = 0;
  };

  // Runs `fn` on the coordination thread and waits for it (inline when already there).
  template <typename F>
  auto run_sync(F fn) -> decltype(fn());

  std::shared_ptr<zk_session> current_session() const;
  result<void> connect_session();          // coordination thread
  result<void> init_paths_and_cluster_id();
  result<void> register_self(bool retry);
  watch_fn watcher(watch_kind kind, const std::string& path);
  std::optional<zk_node> read_watched(const std::string& path, bool* failed);
  std::optional<std::vector<std::string>> read_children(const std::string& path);

  void on_watch(uint64_t generation, watch_kind kind, watch_event ev, const std::string& path);
  void on_session_event(uint64_t generation, session_event ev);
  void on_zk_error(zk_code c);
  void session_lost();
  void try_reconnect();
  void schedule_resync();
  void after_ms(int64_t ms, std::function<void()> fn);  // runs fn on the coordination thread later
  void after_change();                                  // controller reconcile, then publish

  void sync_all();
  void sync_brokers();
  void sync_controller();
  void sync_topics();
  void forget_topics_except(const std::set<std::string>& present);  // drops topics (and states) not listed
  void load_topic(const std::string& name);
  void load_state(const std::string& topic, int32_t partition);
  void load_config(const std::string& topic);
  void sync_delete_markers();
  void sync_shutdown_markers();
  void check_own_shutdown_marker();

  void try_elect();
  void resign();
  void reconcile();
  void delete_topic_znodes(const std::string& topic);
  bool write_state(const std::string& topic, int32_t partition, const partition_state& next);
  void answer_shutdowns();
  void arm_rebalance_timer();
  void rebalance_preferred_leaders();
  cluster_liveness liveness(const std::set<int32_t>& treat_as_dead = {}) const;
  bool unclean_for(const std::string& topic) const;
  void publish();

  const zk_options options_;
  const std::shared_ptr<zk_connector> connector_;

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::shared_ptr<event_sink> sink_;
  boost::asio::steady_timer rebalance_timer_;
  boost::asio::steady_timer disconnect_timer_;

  // Shared with caller threads (mutex_).
  mutable std::mutex mutex_;
  std::shared_ptr<zk_session> session_;
  std::shared_ptr<const cluster_snapshot> snapshot_;
  std::vector<std::function<void(std::shared_ptr<const cluster_snapshot>)>> subscribers_;
  std::string cluster_id_;
  std::atomic<bool> registered_flag_{false};
  std::atomic<bool> is_controller_flag_{false};
  std::atomic<int32_t> controller_epoch_flag_{0};
  std::atomic<bool> stopped_{false};
  int32_t self_id_ = -1;

  // Coordination thread only.
  std::optional<broker_registration> self_;
  uint64_t generation_ = 0;  // session generation: events of an older session are dropped
  std::set<std::pair<int, std::string>> armed_;
  bool registered_ = false;
  std::map<int32_t, broker_entry> brokers_;
  int32_t controller_id_ = -1;
  std::map<std::string, topic_assignment, std::less<>> topics_;
  std::map<std::string, std::vector<partition_state>, std::less<>> states_;
  std::set<std::string, std::less<>> deleting_;
  std::set<int32_t> shutdown_markers_;
  uint64_t sequence_ = 0;
  // controlled shutdown of this broker
  bool shutdown_requested_ = false;
  std::shared_ptr<std::promise<void>> shutdown_done_;
  // controller
  bool is_controller_ = false;
  int32_t controller_epoch_ = 0;
  int32_t controller_epoch_version_ = -1;
  std::map<int32_t, int64_t> known_czxid_;         // registrations the controller has acted on
  std::map<int32_t, int32_t> shutdown_answered_;   // remaining_leaders last written per broker
};

}  // namespace sluice::coordination::zk
