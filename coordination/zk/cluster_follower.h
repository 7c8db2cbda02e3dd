#pragma once
// The follower part of zk_cluster: reads the cluster with watches and keeps the one copy of what this
// broker knows of it (followed_state), builds and publishes cluster_snapshots, calls the subscribers.
// Also waits for the controller's answer to this broker's own controlled shutdown.
//
// Owns: followed_state (live brokers with their czxid, controller id, topics with configs, partition
// states, topics being deleted, controlled-shutdown markers, the pending preferred replica election), the published snapshot, the subscribers,
// this broker's controlled-shutdown request.
//
// Threads: the coordination thread, except snapshot() and subscribe() (any thread, under a mutex).
// zk_controller reads and updates followed_state through state() on the same thread: after a write of
// its own it stores the outcome without waiting for the watch.
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "coordination/cluster_view.h"
#include "coordination/zk/zk_session_manager.h"

namespace sluice::coordination::zk {

class zk_store;

/// What this broker knows of the cluster, as last read from ZooKeeper (and written by its controller).
struct followed_state {
  struct broker_entry {
    broker_registration reg;
    int64_t czxid = 0;  // of /brokers/ids/<id>: a new one means the broker registered again
  };
  std::map<int32_t, broker_entry> brokers;  // /brokers/ids
  int32_t controller_id = -1;                // /controller, -1 when none
  std::map<std::string, topic_assignment, std::less<>> topics;             // with /config/topics/<t>
  std::map<std::string, std::vector<partition_state>, std::less<>> states;  // [topic][partition]
  std::set<std::string, std::less<>> deleting;  // /admin/delete_topics
  std::set<int32_t> shutdown_markers;           // /admin/controlled_shutdown
  /// /admin/preferred_replica_election: the (topic, partition)s asked for and the znode's version, -1 when
  /// absent. Malformed data reads as no partitions at its version (the controller deletes it).
  std::set<std::pair<std::string, int32_t>> preferred_elections;
  int32_t preferred_election_version = -1;

  /// The state of one partition, nullptr when the topic or partition has none read.
  const partition_state* state(std::string_view topic, int32_t partition) const {
    auto it = states.find(topic);
    if (it == states.end() || partition < 0 || static_cast<size_t>(partition) >= it->second.size()) return nullptr;
    return &it->second[static_cast<size_t>(partition)];
  }
};

/// What the follower tells the controller part when it reads /controller or the shutdown markers.
class follower_listener {
 public:
  /// /controller is absent (followed_state::controller_id is -1 already).
  virtual void controller_gone() = 0;
  /// /controller names followed_state::controller_id, held by session `owner`.
  virtual void controller_seen(int64_t owner) = 0;
  /// followed_state::shutdown_markers was read again.
  virtual void shutdown_markers_read() = 0;

 protected:
  ~follower_listener() = default;
};

class cluster_follower {
 public:
  /// `store` gives the cluster id for snapshots. set_listener() before any read.
  cluster_follower(zk_session_manager& session, const zk_store& store);
  void set_listener(follower_listener& listener) { listener_ = &listener; }

  followed_state& state() { return state_; }
  const followed_state& state() const { return state_; }

  /// Reads the whole cluster again, arming every watch (start, a new session, after an error).
  void sync_all();
  /// A watch fired on `path`: reads that node (or list) again.
  void on_watch(const std::string& path);
  /// Reads /brokers/topics/<t>/partitions/<p>/state again (watched); the controller re-reads before deciding.
  void load_state(const std::string& topic, int32_t partition);
  /// Reads /brokers/topics/<t> again (watched; gone: the topic and its states are dropped). The controller
  /// reads the assignment fresh before a preferred replica election.
  void load_topic(const std::string& name);
  /// Reads /admin/preferred_replica_election again (watched, also while absent).
  void sync_preferred_election();

  /// Publishes a snapshot of followed_state (registered from the session) when it differs from the last
  /// one, with the next sequence number, and calls the subscribers with it on this thread.
  void publish();
  /// The last published snapshot; any thread. Never null once zk_cluster::open returned.
  std::shared_ptr<const cluster_snapshot> snapshot() const;
  /// Any thread; called on the coordination thread from then on.
  void subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change);

  /// controlled_shutdown's coordination-thread half: creates the ephemeral /admin/controlled_shutdown/<id>
  /// and returns a future set when the controller writes remaining_leaders 0 into it. Errors:
  /// not_registered, unavailable (the marker could not be created).
  result<std::shared_future<void>> request_controlled_shutdown();
  /// In a new session: creates the marker again when a controlled shutdown was requested.
  void recreate_shutdown_marker();
  /// On stop: drops the pending wait (a waiting controlled_shutdown returns).
  void drop_shutdown_wait() { shutdown_done_.reset(); }

 private:
  void sync_brokers();
  void sync_controller();
  void sync_topics();
  void forget_topics_except(const std::set<std::string>& present);  // drops topics (and states) not listed
  void load_config(const std::string& topic);
  void sync_delete_markers();
  void sync_shutdown_markers();
  void check_own_shutdown_marker();

  zk_session_manager& session_;
  const zk_store& store_;
  follower_listener* listener_ = nullptr;

  // Coordination thread only.
  followed_state state_;
  uint64_t sequence_ = 0;
  bool shutdown_requested_ = false;
  std::shared_ptr<std::promise<void>> shutdown_done_;

  // Shared with caller threads (mutex_).
  mutable std::mutex mutex_;
  std::shared_ptr<const cluster_snapshot> snapshot_;
  std::vector<std::function<void(std::shared_ptr<const cluster_snapshot>)>> subscribers_;
};

}  // namespace sluice::coordination::zk
