#pragma once
// The controller part of zk_cluster: takes part in the election of /controller and, while this broker is
// the controller, applies controller_logic.h to ZooKeeper: partition states (conditional on the
// controller epoch), topic deletion, answers to controlled-shutdown markers, the preferred-leader
// rebalance timer, preferred replica elections asked for in /admin/preferred_replica_election.
// coordination/README.md lists what it writes for each event.
//
// Owns: whether this broker is the controller and its controller epoch (with the epoch znode's version,
// which fences every write), the registrations it has acted on (czxid per broker), the answers it wrote
// per controlled-shutdown marker, the rebalance timer.
// Reads and updates cluster_follower's followed_state: it keeps no copy of the cluster of its own.
//
// Threads: the coordination thread; is_controller() and controller_epoch() from any thread.
#include <atomic>
#include <functional>
#include <optional>
#include <utility>
#include <vector>
#include <map>
#include <set>
#include <string>

#include <boost/asio/steady_timer.hpp>

#include "coordination/zk/cluster_follower.h"
#include "coordination/zk/controller_logic.h"
#include "coordination/zk/zk_session_manager.h"

namespace sluice::coordination::zk {

class zk_controller final : public follower_listener {
 public:
  zk_controller(zk_session_manager& session, cluster_follower& follower);

  bool is_controller() const { return is_controller_.load(); }
  int32_t controller_epoch() const { return controller_epoch_.load(); }

  /// Tries to become the controller when registered and not already it: creates the ephemeral /controller
  /// and bumps /controller_epoch in one multi conditional on the epoch's version (Kafka's
  /// registerControllerAndIncrementControllerEpoch). On success reconciles at once and arms the
  /// rebalance timer; otherwise records who holds /controller.
  void try_elect();
  /// Stops acting as the controller (lost /controller, the epoch moved on, or the session was lost).
  void resign();
  /// Level-triggered: deletes topics marked for deletion, corrects every partition state against who is
  /// alive (bounced brokers handled as gone, then as registered), answers controlled-shutdown markers.
  /// Nothing unless controller and registered.
  void reconcile();
  /// On zk_cluster::stop: cancels the rebalance timer and stops acting as the controller.
  void stop();

  /// cluster_view::alter_reassignments on the controller (KIP-455, Kafka's ZooKeeper-mode
  /// onPartitionReassignment): validates each partition, then for a move writes the topic znode with the
  /// replica set target + original replicas and the adding/removing lists, and the partition state with the
  /// leader epoch bumped (the leader learns its new followers); a move whose target is already in the ISR
  /// completes at once (complete_reassignments). A cancel reverts to the original replicas. Errors:
  /// not_controller.
  result<std::vector<partition_outcome>> alter_reassignments(const std::vector<reassignment_request>& requests,
                                                             bool allow_rf_change);
  /// cluster_view::elect_leaders on the controller.
  result<std::vector<partition_outcome>> elect_leaders(
      bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions);

  // follower_listener
  void controller_gone() override;
  void controller_seen(int64_t owner) override;
  void shutdown_markers_read() override;

 private:
  void delete_topic_znodes(const std::string& topic);
  /// Writes one partition state fenced by the controller epoch; true when written (followed_state then
  /// holds it). False on BADVERSION / NODEEXISTS / NONODE of the state (re-read and decide again) or when
  /// the epoch moved on (resigned).
  bool write_state(const std::string& topic, int32_t partition, const partition_state& next);
  void answer_shutdowns();
  /// Read-modify-write of /brokers/topics/<t> fenced by the controller epoch (retried on BADVERSION); on success
  /// followed_state holds the result. False when the topic is gone, on ZooKeeper errors, or when resigned.
  bool write_assignment(const std::string& topic, const std::function<void(topic_assignment&)>& change);
  /// Writes state_for_replicas(replicas) for one partition (re-read and retried on a version conflict). True
  /// when written or when the partition has no state yet (its first state is made from the assignment).
  bool write_state_for_replicas(const std::string& topic, int32_t partition, const std::vector<int32_t>& replicas);
  /// Ends a reassignment: the state for `replicas` first (removed replicas leave the ISR, the leader moves when
  /// it is not among them), then the topic znode with replicas[p] = `replicas` and no adding/removing entry.
  bool finish_reassignment(const std::string& topic, int32_t partition, const std::vector<int32_t>& replicas);
  /// In reconcile: finishes every reassignment whose target replicas are all in the ISR (KIP-455 phase B).
  void complete_reassignments();
  /// One partition of alter_reassignments.
  partition_outcome reassign(const reassignment_request& r, bool allow_rf_change);
  /// One partition of elect_leaders.
  partition_outcome elect(const std::string& topic, int32_t partition, bool unclean, const cluster_liveness& live);
  /// /admin/preferred_replica_election (Kafka's ZooKeeper-mode PreferredReplicaElectionHandler): for each
  /// partition named, the assignment read fresh, its first replica made leader where controller_logic's
  /// preferred_state allows (alive, not shutting down, in the ISR; epoch + 1), then the znode deleted on the
  /// version read (a request added meanwhile is handled in another round).
  void handle_preferred_elections();
  void arm_rebalance_timer();
  void rebalance_preferred_leaders();
  cluster_liveness liveness(const std::set<int32_t>& treat_as_dead = {}) const;
  bool unclean_for(const std::string& topic) const;

  zk_session_manager& session_;
  cluster_follower& follower_;
  const zk_options& options_;
  boost::asio::steady_timer rebalance_timer_;

  std::atomic<bool> is_controller_{false};
  std::atomic<int32_t> controller_epoch_{0};
  // Coordination thread only.
  int32_t controller_epoch_version_ = -1;
  std::map<int32_t, int64_t> known_czxid_;        // registrations the controller has acted on
  std::map<int32_t, int32_t> shutdown_answered_;  // remaining_leaders last written per broker
};

}  // namespace sluice::coordination::zk
