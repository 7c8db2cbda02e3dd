#pragma once
// The broker's view of its topics: names, ids, configs and the partition objects, with lock-free lookups
// for the data path and serialized changes for the admin path.
#include <atomic>
#include <boost/asio.hpp>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/published.h"
#include "broker/config.h"
#include "broker/error_map.h"
#include "broker/partition.h"
#include "broker/purgatory.h"
#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "storage/log_manager.h"

namespace sluice::broker {

/// A topic and its partitions. Immutable once published; a change publishes a new topic object.
struct topic {
  std::string name;
  coordination::topic_id id{};
  int16_t replication_factor = 1;
  std::map<std::string, std::string> configs;  // overrides only
  std::vector<std::shared_ptr<partition>> partitions;
  bool internal = false;
};

/// Partition `index` of `t`, or nullptr when there is no such topic or partition, or (cluster mode) this
/// broker holds no replica of it. See missing_partition_error() for the error to answer.
inline std::shared_ptr<partition> partition_of(const std::shared_ptr<const topic>& t, int32_t index) {
  if (!t || index < 0 || index >= static_cast<int32_t>(t->partitions.size())) return nullptr;
  return t->partitions[static_cast<size_t>(index)];
}

/// The error for a partition partition_of() did not find: NOT_LEADER_OR_FOLLOWER when the partition exists
/// in the cluster but has no replica here (the client refreshes its metadata), else
/// UNKNOWN_TOPIC_OR_PARTITION.
inline protocol::error_code missing_partition_error(const std::shared_ptr<const topic>& t, int32_t index) {
  if (t && index >= 0 && index < static_cast<int32_t>(t->partitions.size())) return protocol::error_code::not_leader_or_follower;
  return protocol::error_code::unknown_topic_or_partition;
}

/// What CreateTopics asks for (after defaults are resolved by the caller).
struct topic_spec {
  std::string name;
  int32_t num_partitions = 1;
  int16_t replication_factor = 1;
  std::map<std::string, std::string> configs;
  /// A manual replica assignment (CreateTopics' Assignments): `assignments[p]` lists partition p's replicas,
  /// the first the preferred leader. Every broker must be registered; num_partitions and
  /// replication_factor then follow from it.
  std::optional<std::vector<std::vector<int32_t>>> assignments;
};

/// Thread-safety: lookups (`find`, `all`) read an immutable snapshot published atomically and may be
/// called from any strand. Changes (`create`, `remove`, `set_configs`, `add_partitions`) are serialized by a
/// mutex; they persist through the cluster_store first, then open or delete the logs, then publish the new
/// snapshot (`add_partitions` opens its new logs before the store commit: the store cannot take partitions back).
class topic_registry {
 public:
  topic_registry(const broker_config& config, coordination::cluster_store& store, storage::log_manager& logs,
                 asio::any_io_executor executor);

  /// Opens the partitions of every topic in the store (creating missing log directories).
  result<void> load();

  /// Cluster mode: the registry follows `snapshot` instead of the store. Every topic of the cluster is
  /// published with its partitions (nullptr where broker `self_id` holds no replica); new
  /// partition logs are created (as followers, offline until the replica manager applies their state);
  /// topics gone from the snapshot are dropped and their logs deleted. Create/remove/set_configs then
  /// only write the cluster store; the change comes back through the next snapshot.
  void sync(const coordination::cluster_snapshot& snapshot, int32_t self_id);
  bool cluster_mode() const { return cluster_mode_.load(std::memory_order_acquire); }
  /// Cluster mode: the live brokers used for replica assignment (set by the replica manager).
  void set_cluster(std::shared_ptr<const coordination::cluster_snapshot> snapshot) { cluster_.store(std::move(snapshot)); }
  std::shared_ptr<const coordination::cluster_snapshot> cluster() const { return cluster_.load(); }
  /// Cluster mode: wakes `waiter` once the next snapshot is applied (at the end of the next sync(), which
  /// follows set_cluster(): cluster() and the topics then both show it). Any thread. Park first, then read
  /// cluster(): a snapshot applied in between then wakes it (handlers/cluster_wait.h).
  void wake_on_next_snapshot(const std::shared_ptr<purgatory_waiter>& waiter);

  std::shared_ptr<const topic> find(std::string_view name) const;
  std::shared_ptr<const topic> find(const coordination::topic_id& id) const;
  std::vector<std::shared_ptr<const topic>> all() const;

  /// Validates and (unless `validate_only`) creates a topic. Errors as Kafka answers CreateTopics, in its
  /// order: INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION (collision), INVALID_CONFIG,
  /// INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, KAFKA_STORAGE_ERROR.
  /// `id_out`, when given, receives the new topic's id once it is stored (single node and cluster mode alike).
  kafka_error create(const topic_spec& spec, bool validate_only, coordination::topic_id* id_out = nullptr);

  /// The name checks of a new topic, the first of create's (Kafka's validateNewTopicNames and the existing
  /// topics): INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, then INVALID_TOPIC_EXCEPTION for a name that
  /// collides with an existing one ('.' vs '_'). CreateTopics runs them before its null-config check.
  kafka_error check_new_name(const std::string& name) const;

  /// Deletes a topic: drops it from the store and from lookups, then closes each partition's log on its
  /// strand and deletes the files. UNKNOWN_TOPIC_OR_PARTITION if absent.
  /// `rewrite_checkpoints` false (single node): the caller deletes several topics and calls write_checkpoints()
  /// once after them (POST /v1/reset).
  asio::awaitable<kafka_error> remove(std::string name, bool rewrite_checkpoints = true);

  /// Called with the name and partition count of every topic this registry drops (single node: remove(); cluster
  /// mode: a topic gone from the snapshot, or deleted and created again under its name), after it left the
  /// lookups, as its logs are dropped (drop_local, on the registry's executor). Set once, before the first remove()
  /// or sync().
  using deleted_listener = std::function<void(const std::string& name, int32_t partition_count)>;
  void on_deleted(deleted_listener listener) { on_deleted_ = std::move(listener); }

  /// Replaces a topic's config overrides (AlterConfigs semantics: the full set) after validating them;
  /// persists, publishes the new topic object and applies the storage settings on each partition's
  /// strand. UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG, KAFKA_STORAGE_ERROR.
  kafka_error set_configs(const std::string& name, const std::map<std::string, std::string>& overrides,
                          bool validate_only);

  /// Raises a topic's partition count to `new_count` (CreatePartitions, KIP-195). `assignments`, when
  /// present, lists the replicas of each NEW partition in order (first = preferred leader). Checks and
  /// messages follow Kafka 4.0's controller (ReplicationControlManager.createPartitions):
  /// UNKNOWN_TOPIC_OR_PARTITION; INVALID_PARTITIONS when `new_count` is not above the current count;
  /// INVALID_REPLICA_ASSIGNMENT when the number of assignments is not the increase, a list is empty, names
  /// a broker twice or a broker that is not registered, or its size differs from the topic's replication
  /// factor; POLICY_VIOLATION above 10000 new partitions (Kafka's MAX_PARTITIONS_PER_BATCH);
  /// KAFKA_STORAGE_ERROR. Without assignments each new partition gets this broker (the only live one).
  /// Opens the new logs first, then persists through the store (which cannot take partitions back), then
  /// publishes the grown topic; a failure before the store commit removes the logs it created.
  kafka_error add_partitions(const std::string& name, int32_t new_count,
                             const std::optional<std::vector<std::vector<int32_t>>>& assignments, bool validate_only);

  /// Writes the recovery-point and log-start-offset checkpoints of every log dir (thread-safe).
  void write_checkpoints();
  const std::vector<std::filesystem::path>& log_dirs() const { return logs_.log_dirs(); }
  /// The logs of this broker's replicas (AlterReplicaLogDirs moves them between log dirs).
  storage::log_manager& logs() { return logs_; }

  /// Closes every partition's log (clean shutdown). Call after the io threads have stopped.
  void close_all();

 private:
  using topic_map = std::map<std::string, std::shared_ptr<const topic>, std::less<>>;
  enum class open_mode { existing_or_new, new_only };
  static std::shared_ptr<topic> topic_without_partitions(const coordination::topic_assignment& a);
  storage::log_config topic_log_config(const topic& t) const;  // broker defaults + overrides (+ internal rule)
  std::shared_ptr<const topic> open_topic(const coordination::topic_assignment& a, open_mode mode, kafka_error& err);
  void publish(std::shared_ptr<const topic_map> next);
  asio::awaitable<void> drop_local(std::shared_ptr<const topic> t, bool rewrite_checkpoints = true);
  /// Cluster mode: this broker left the replicas of one partition (a reassignment moved it away; Kafka's
  /// StopReplica with deletion): closes the partition on its strand and deletes its log, then syncs again (a
  /// partition given back meanwhile is opened once the drop ends).
  asio::awaitable<void> drop_local_partition(std::string topic, std::shared_ptr<partition> p);
  /// Closes `p` on its strand (no fsync: its files go next) and deletes its log; false (logged) when the
  /// deletion failed.
  asio::awaitable<bool> delete_partition_log(const std::string& topic, std::shared_ptr<partition> p, bool rewrite_checkpoints);
  /// After a drop: `unmark` (under the change mutex) forgets the drop's marker, then in cluster mode the last
  /// snapshot is synced again (what the marker left out meanwhile is opened now).
  void sync_after_drop(const std::function<void()>& unmark);
  kafka_error create_in_cluster(const topic_spec& spec, bool validate_only, coordination::topic_id* id_out);

  const broker_config& config_;
  coordination::cluster_store& store_;
  storage::log_manager& logs_;
  asio::any_io_executor executor_;
  std::mutex change_mutex_;
  /// Names whose logs drop_local() is still closing and deleting (under change_mutex_). The log manager holds
  /// their logs until then, so a topic of the same name must not open logs yet: create() answers
  /// TOPIC_ALREADY_EXISTS "marked for deletion" (Kafka's answer while a deletion is pending), and sync() leaves
  /// such a topic out until the drop ends, then syncs again.
  std::set<std::string, std::less<>> dropping_;
  /// (topic, partition) whose log drop_local_partition() is deleting (under change_mutex_): left out until done.
  std::set<std::pair<std::string, int32_t>> dropping_partitions_;
  int32_t self_id_ = -1;  // from the last sync()
  published<const topic_map> topics_;
  std::atomic<bool> cluster_mode_{false};
  published<const coordination::cluster_snapshot> cluster_;
  std::mutex snapshot_waiters_mutex_;
  waiter_list snapshot_waiters_;  // under snapshot_waiters_mutex_
  deleted_listener on_deleted_;
};

}  // namespace sluice::broker
