#pragma once
// The store part of zk_cluster: the cluster_store operations (topics, configs, partitions, producer id
// blocks, cluster id) and update_isr, each one or a few ZooKeeper round trips in the current session.
// zk_cluster.h documents each operation's contract; coordination/README.md the znodes.
//
// Owns: the cluster id (read or created once at open, by init_paths_and_cluster_id).
// Threads: init_paths_and_cluster_id on the coordination thread (in zk_cluster::open); every other call
// on the caller's thread (ZooKeeper's client is thread-safe). It keeps no state of the followed cluster.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "coordination/zk/zk_session_manager.h"

namespace sluice::coordination::zk {

class zk_store {
 public:
  explicit zk_store(zk_session_manager& session) : session_(session) {}

  /// Creates Kafka's top-level paths and reads /cluster/id, creating it when absent (Kafka:
  /// getOrGenerateClusterId). Errors: view_errc::unavailable; zk_errc::malformed for a corrupt /cluster/id.
  result<void> init_paths_and_cluster_id();
  /// Any thread.
  std::string cluster_id() const;

  std::vector<topic_assignment> topics() const;
  result<void> create_topic(const topic_assignment& topic);
  result<void> delete_topic(const std::string& name);
  result<void> set_topic_configs(const std::string& name, const std::map<std::string, std::string>& configs);
  result<void> add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas);
  result<producer_id_block> allocate_producer_id_block(int32_t broker_id, int64_t size);
  /// /config/<type>/<name> as {"version":1,"config":{..}} (Kafka's entity config znodes; Kafka's ConfigCommand
  /// writes the same), each read on every call. set writes the znode (or deletes it when `configs` is empty)
  /// and a /config/changes/config_change_ notification {"version":2,"entity_path":"<type>/<name>"}, as Kafka
  /// does for its brokers' config listeners.
  result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(const std::string& type) const;
  result<void> set_entity_configs(const std::string& type, const std::string& name,
                                  const std::map<std::string, std::string>& configs);
  result<std::vector<std::string>> entity_names(const std::string& type) const;
  /// /kafka-acl/<Type>/<name> and /kafka-acl-extended/prefixed/<Type>/<name>.
  result<std::map<acl_node_key, std::string>> acl_nodes() const;
  /// Writes (or deletes) one node and creates Kafka's change notification for it.
  result<void> set_acl_node(const acl_node_key& key, const std::optional<std::string>& data);
  result<partition_state> update_isr(const std::string& topic, int32_t partition, const partition_state& next);
  /// cluster_view::request_leader_move: the assignment reordered (conditional on the topic znode's version),
  /// then the partition merged into /admin/preferred_replica_election (created, or set on the version read).
  result<void> request_leader_move(const std::string& topic, int32_t partition, int32_t broker);

 private:
  zk_session_manager& session_;
  mutable std::mutex mutex_;
  std::string cluster_id_;  // mutex_
};

}  // namespace sluice::coordination::zk
