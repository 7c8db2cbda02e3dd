#pragma once
// Cluster mode on ZooKeeper: one object per broker implementing both cluster_store (topics, configs,
// producer id blocks, cluster id: synchronous admin calls) and cluster_view (registration, following the
// cluster through watches, ISR updates, controlled shutdown), plus the controller that runs on the broker
// that wins /controller. coordination/README.md describes the znodes and what the controller does.
//
// zk_cluster is a facade over four parts sharing one session and one coordination thread:
// - zk_session_manager: the coordination thread, the session and its generation, this broker's
//   registration, watch arming, session loss and reconnection;
// - cluster_follower: reads with watches into the one followed_state, publishes snapshots;
// - zk_controller: election and the controller's writes, reading and updating the follower's state;
// - zk_store: the cluster_store calls and update_isr, ZooKeeper round trips on the caller's thread.
//
// Threads: one coordination thread (its own io_context) owns the session's watches, the followed state
// and the controller; ZooKeeper callbacks only post events to it. Subscribers are called on it. The
// cluster_store calls and update_isr run on the caller's thread (synchronous by contract: a ZooKeeper
// round trip); start, controlled_shutdown and stop wait for the coordination thread.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "coordination/zk/cluster_follower.h"
#include "coordination/zk/controller_logic.h"
#include "coordination/zk/zk_client.h"
#include "coordination/zk/zk_controller.h"
#include "coordination/zk/zk_options.h"
#include "coordination/zk/zk_session_manager.h"
#include "coordination/zk/zk_store.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

class zk_cluster final : public cluster_store, public cluster_view, private session_listener {
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
  result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(
      const std::string& entity_type) const override;
  result<void> set_entity_configs(const std::string& entity_type, const std::string& name,
                                  std::map<std::string, std::string> configs) override;
  result<std::vector<std::string>> entity_names(const std::string& entity_type) const override;
  result<std::map<acl_node_key, std::string>> acl_nodes() const override;
  result<void> set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) override;

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
  /// Rewrites /brokers/topics/<t> with `broker` first, then adds the partition to
  /// /admin/preferred_replica_election; the controller elects and deletes the znode.
  result<void> request_leader_move(const std::string& topic, int32_t partition, int32_t broker) override;
  /// On the coordination thread, by the controller part (zk_controller::alter_reassignments); publishes the
  /// resulting snapshot before returning. not_controller when this broker is not the controller.
  result<std::vector<partition_outcome>> alter_reassignments(const std::vector<reassignment_request>& requests,
                                                             bool allow_rf_change) override;
  /// On the coordination thread (zk_controller::elect_leaders); publishes before returning.
  result<std::vector<partition_outcome>> elect_leaders(
      bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) override;
  void stop() override;

  // For tests and diagnostics.
  int64_t session_id() const;
  bool is_controller() const { return controller_.is_controller(); }
  int32_t controller_epoch() const { return controller_.controller_epoch(); }

 private:
  zk_cluster(const zk_options& options, std::shared_ptr<zk_connector> connector);

  // session_listener (coordination thread)
  void watch_fired(const std::string& path) override;
  void resync() override;
  void session_lost() override;
  void session_closed() override;
  void registered_again() override;

  void after_change();  // the controller reconciles, then the follower publishes

  /// Runs `step` (a controller step returning partition outcomes) on the coordination thread, then publishes;
  /// `what` names the caller in the error when called on that thread itself (which would deadlock).
  template <typename Step>
  result<std::vector<partition_outcome>> run_controller_step(const char* what, Step step);

  // The parts, in construction order (each refers only to those before it; the follower's listener is the
  // controller, set in the constructor).
  zk_session_manager session_;
  zk_store store_;
  cluster_follower follower_;
  zk_controller controller_;
};

}  // namespace sluice::coordination::zk
