#pragma once
// The single-node default: cluster metadata kept in one JSON file under the first log dir, written
// atomically (temp file, fsync, rename, fsync of the directory) on every change.
#include <atomic>
#include <filesystem>
#include <mutex>

#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"

namespace sluice::coordination {

/// File: `<dir>/__cluster_metadata.json`:
///   {"version":1,"cluster_id":"...","topics":[{"name":..,"id":"<base64>","replicas":[[0],[0]],"configs":{..}}],
///    "latest_producer_id_block":{"broker":0,"block_start":"0","block_end":"999"},
///    "entity_configs":{"users":{"alice":{"SCRAM-SHA-512":"salt=..,stored_key=..,server_key=..,iterations=4096"}}}}
///   (the producer id key once ids were reserved; block bounds are strings as in Kafka's znode, int64 does not
///   fit a JSON double; entity_configs once a user or client has a config)
/// Thread-safe through one mutex (admin path only).
///
/// Also the single-node cluster_view, so that the broker follows one code path in both modes: the only
/// broker is the registered self (also the controller); every partition has leader self, leader_epoch 0,
/// isr [self], controller_epoch 0, version 0. A new snapshot is published (on the calling thread, in
/// order) after every topic create/delete, config change and add_partitions.
class embedded_store final : public cluster_store, public cluster_view {
 public:
  /// Loads the file if present, else creates it with a new cluster id. Errors: io_error when the file
  /// exists but cannot be read or parsed (never silently replaced: that would lose topics).
  static result<std::unique_ptr<embedded_store>> open(const std::filesystem::path& dir);
  /// `<dir>/__cluster_metadata.json`, the file open() reads or creates (the broker checks it exists before
  /// open() would start a new cluster in a log dir that belongs to another one).
  static std::filesystem::path file_in(const std::filesystem::path& dir);
  /// The single node's broker.id: the one broker a reassignment may name (KIP-455 on one node).
  void set_broker_id(int32_t id) { broker_id_.store(id, std::memory_order_relaxed); }

  std::string cluster_id() const override;
  std::vector<topic_assignment> topics() const override;
  result<void> create_topic(const topic_assignment& topic) override;
  result<void> delete_topic(const std::string& name) override;
  result<void> set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) override;
  result<void> add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) override;
  /// Kept in the file as "latest_producer_id_block": {"broker":..,"block_start":..,"block_end":..}.
  result<producer_id_block> allocate_producer_id_block(int32_t broker_id,
                                                       int64_t size = producer_id_block_size) override;
  /// Kept in the file as "entity_configs": {"users": {"alice": {"SCRAM-SHA-512": "salt=..."}}}.
  result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(
      const std::string& entity_type) const override;
  result<void> set_entity_configs(const std::string& entity_type, const std::string& name,
                                  std::map<std::string, std::string> configs) override;
  /// Nested types are kept as their own type keys ("users/alice/clients": {"c1": {..}}).
  result<std::vector<std::string>> entity_names(const std::string& entity_type) const override;
  /// Kept in the file as "acls": [{"pattern_type":"LITERAL","resource_type":"Topic","name":"t","data":"{..}"}].
  result<std::map<acl_node_key, std::string>> acl_nodes() const override;
  result<void> set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) override;

  // cluster_view
  result<void> start(const broker_registration& self) override;
  std::shared_ptr<const cluster_snapshot> snapshot() const override;
  void subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) override;
  /// The ISR is always [self]: returns the stored state when `next` asks for nothing else, else
  /// version_conflict.
  result<partition_state> update_isr(const std::string& topic, int32_t partition, const partition_state& next) override;
  /// Nothing to move: returns at once.
  result<void> controlled_shutdown(int64_t timeout_ms) override;
  /// not_supported: the one broker leads every partition.
  result<void> request_leader_move(const std::string& topic, int32_t partition, int32_t broker) override;
  /// A single-broker cluster's answers: a target of [self] is already in place (ok), any other broker is not
  /// registered (invalid_assignment), a cancel finds nothing ongoing (no_reassignment).
  result<std::vector<partition_outcome>> alter_reassignments(const std::vector<reassignment_request>& requests,
                                                             bool allow_rf_change) override;
  /// Self leads every partition already: election_not_needed (and, for every partition, an empty answer).
  result<std::vector<partition_outcome>> elect_leaders(
      bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) override;
  void stop() override;

 private:
  void publish();  // builds and delivers a snapshot; takes publish_mutex_ then mutex_
  result<void> do_create_topic(const topic_assignment& topic);
  result<void> do_delete_topic(const std::string& name);
  result<void> do_set_topic_configs(const std::string& name, std::map<std::string, std::string> configs);
  result<void> do_add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas);

  explicit embedded_store(std::filesystem::path file) : file_(std::move(file)) {}
  result<void> persist() const;  // caller holds mutex_

  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::string cluster_id_;
  std::map<std::string, topic_assignment> topics_;
  std::optional<producer_id_block> latest_producer_id_block_;
  std::map<std::string, std::map<std::string, std::map<std::string, std::string>>> entity_configs_;
  std::map<acl_node_key, std::string> acl_nodes_;  // type -> name -> key

  std::mutex publish_mutex_;  // one publication at a time, in order
  mutable std::mutex view_mutex_;
  std::optional<broker_registration> self_;
  bool started_ = false;
  std::atomic<int32_t> broker_id_{-1};
  std::shared_ptr<const cluster_snapshot> snapshot_;
  std::vector<std::function<void(std::shared_ptr<const cluster_snapshot>)>> subscribers_;
  uint64_t sequence_ = 0;
};

}  // namespace sluice::coordination
