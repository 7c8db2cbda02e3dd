#pragma once
// The coordination interface: what the broker needs to know about the cluster, wherever it is kept.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "base/result.h"

namespace sluice::coordination {

/// A topic's 128-bit id (KIP-516). All zero means "no id".
using topic_id = std::array<uint8_t, 16>;

/// A topic as the controller assigned it: `replicas[p]` lists the broker ids holding partition p, the
/// first being the preferred leader (Kafka's /brokers/topics/<topic> "partitions" map). `configs` holds
/// topic-level overrides with Kafka's topic config keys (retention.ms, segment.bytes, ...).
struct topic_assignment {
  std::string name;
  topic_id id{};
  std::vector<std::vector<int32_t>> replicas;
  std::map<std::string, std::string> configs;
  /// Ongoing reassignments (KIP-455; the topic znode's "adding_replicas" and "removing_replicas"): partition ->
  /// the replicas being added, and those removed once every target replica is in the ISR. While a partition is
  /// reassigned, replicas[p] is its target followed by the replicas to remove. No entry: none ongoing.
  std::map<int32_t, std::vector<int32_t>> adding_replicas;
  std::map<int32_t, std::vector<int32_t>> removing_replicas;

  int32_t partition_count() const { return static_cast<int32_t>(replicas.size()); }
  /// Whether partition `p` has a reassignment in progress.
  bool reassigning(int32_t p) const { return adding_replicas.contains(p) || removing_replicas.contains(p); }
  /// replicas[p] without the replicas being removed: where the partition is going (its replicas when none).
  std::vector<int32_t> target_replicas(int32_t p) const { return without(p, removing_replicas); }
  /// replicas[p] without the replicas being added: where the partition was before the reassignment.
  std::vector<int32_t> original_replicas(int32_t p) const { return without(p, adding_replicas); }

 private:
  std::vector<int32_t> without(int32_t p, const std::map<int32_t, std::vector<int32_t>>& drop) const {
    std::vector<int32_t> out;
    if (p < 0 || p >= partition_count()) return out;
    auto d = drop.find(p);
    for (int32_t b : replicas[static_cast<size_t>(p)])
      if (d == drop.end() || std::find(d->second.begin(), d->second.end(), b) == d->second.end()) out.push_back(b);
    return out;
  }
};

/// A range of producer ids reserved by one broker (Kafka's /latest_producer_id_block znode:
/// {"version":1,"broker":<id>,"block_start":"<first>","block_end":"<last>"}). Inclusive bounds.
struct producer_id_block {
  int32_t broker_id = -1;
  int64_t first = 0;
  int64_t last = -1;
  int64_t size() const { return last - first + 1; }
};

/// Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
inline constexpr int64_t producer_id_block_size = 1000;

/// Error codes of cluster_store operations, carried in sluice::error::code as std::error_code of the
/// "coordination" category. Kafka: TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR
/// (broker/error_map).
enum class errc : int { ok = 0, topic_exists, unknown_topic, io_error };

}  // namespace sluice::coordination

template <>
struct std::is_error_code_enum<sluice::coordination::errc> : std::true_type {};

namespace sluice::coordination {

/// The std::error_category of errc ("coordination"); defined in coordination/errc.cc.
const std::error_category& coordination_category() noexcept;
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), coordination_category()}; }

/// One ACL node: a resource pattern. `pattern_type` "LITERAL" or "PREFIXED", `resource_type` Kafka's ZooKeeper
/// spelling ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User").
struct acl_node_key {
  std::string pattern_type;
  std::string resource_type;
  std::string name;
  auto operator<=>(const acl_node_key&) const = default;
};

/// Cluster metadata store. Implementations: embedded_store (single node, a file under log.dirs) and, for
/// clusters, ZooKeeper. Thread-safe: callers may use it from any strand (admin path, not the data path).
class cluster_store {
 public:
  virtual ~cluster_store() = default;
  /// The cluster id (22-character base64 of a random UUID, as Kafka), created on first start.
  virtual std::string cluster_id() const = 0;
  /// All topics, in name order.
  virtual std::vector<topic_assignment> topics() const = 0;
  /// Adds a topic. errc::topic_exists if the name is taken; errc::io_error if it cannot be persisted.
  virtual result<void> create_topic(const topic_assignment& topic) = 0;
  /// Removes a topic. errc::unknown_topic if absent.
  virtual result<void> delete_topic(const std::string& name) = 0;
  /// Replaces a topic's config overrides. errc::unknown_topic if absent.
  virtual result<void> set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) = 0;
  /// Adds partitions to a topic: `replicas` are appended. errc::unknown_topic if absent.
  virtual result<void> add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) = 0;
  /// Reserves the next `size` producer ids for `broker_id` and persists the reservation before returning,
  /// so ids are unique across restarts and brokers (KIP-98; Kafka's ProducerIdManager). The first block
  /// starts at 0. errc::io_error if the reservation cannot be persisted (nothing is handed out then).
  virtual result<producer_id_block> allocate_producer_id_block(int32_t broker_id,
                                                               int64_t size = producer_id_block_size) = 0;
  /// The dynamic configs of every entity of `entity_type` ("users" or "clients"), Kafka's
  /// /config/<type>/<name> znodes: entity name -> key -> value. SCRAM credentials are the users' keys
  /// "SCRAM-SHA-256" / "SCRAM-SHA-512" (KIP-554); quotas their *_byte_rate keys (KIP-55). Read from the store
  /// on every call, so a change made through any broker is seen at once. errc::io_error when unreadable.
  virtual result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(
      const std::string& entity_type) const = 0;
  /// Replaces one entity's configs; empty `configs` removes the entity. errc::io_error if not persisted.
  /// `entity_type` may be a nested type, "users/<user>/clients" (a user's per-client-id quotas, Kafka's
  /// /config/users/<user>/clients/<client-id>, KIP-55); the parents are made as needed.
  virtual result<void> set_entity_configs(const std::string& entity_type, const std::string& name,
                                          std::map<std::string, std::string> configs) = 0;
  /// The names of every entity of `entity_type` that has a node, with configs or only nested entities (a user
  /// with only per-client-id quotas). errc::io_error when unreadable.
  virtual result<std::vector<std::string>> entity_names(const std::string& entity_type) const = 0;
  /// The ACL nodes of the cluster: Kafka's /kafka-acl/<ResourceType>/<name> (LITERAL patterns) and
  /// /kafka-acl-extended/prefixed/<ResourceType>/<name> (PREFIXED, KIP-290), each holding
  /// {"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]} (encoded and decoded by
  /// broker/security/acl.h). Read from the store on every call. errc::io_error when unreadable.
  virtual result<std::map<acl_node_key, std::string>> acl_nodes() const = 0;
  /// Writes one ACL node (nullopt or an empty ACL list deletes it) and leaves Kafka's change notification
  /// (/kafka-acl-changes or /kafka-acl-extended-changes). errc::io_error if not persisted.
  virtual result<void> set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) = 0;
};

/// A fresh random topic id (never all-zero), as Kafka's Uuid.randomUuid.
topic_id random_topic_id();

/// URL-safe base64 without padding of a 16-byte id: Kafka's textual form of Uuid (22 characters).
std::string to_base64(const topic_id& id);

/// Parses Kafka's 22-character textual Uuid form; nullopt when malformed.
std::optional<topic_id> topic_id_from_base64(const std::string& text);

}  // namespace sluice::coordination
