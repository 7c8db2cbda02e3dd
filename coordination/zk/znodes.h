#pragma once
// One small struct per znode: its path and its data in Kafka's JSON (Kafka's kafka.zk.ZkData describes
// each; the layout is Kafka's so that people who know Kafka can read it with zkCli.sh). Decoders return an
// error for malformed data (zk_errc::malformed), never throw or crash.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "base/result.h"
#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"

namespace sluice::coordination::zk {

/// Error codes of this folder, carried in sluice::error::code as std::error_code of the "zookeeper"
/// category (broker/error_map: UNKNOWN_SERVER_ERROR).
enum class zk_errc : int { malformed = 1, registration_conflict, zookeeper_error };

}  // namespace sluice::coordination::zk

template <>
struct std::is_error_code_enum<sluice::coordination::zk::zk_errc> : std::true_type {};

namespace sluice::coordination::zk {

/// The std::error_category of zk_errc ("zookeeper"); defined in coordination/errc.cc.
const std::error_category& zk_category() noexcept;
inline std::error_code make_error_code(zk_errc e) noexcept { return {static_cast<int>(e), zk_category()}; }

/// Persistent parents, created at startup as Kafka does (KafkaZkClient.createTopLevelPaths).
inline constexpr const char* kBrokerIdsPath = "/brokers/ids";
inline constexpr const char* kTopicsPath = "/brokers/topics";
inline constexpr const char* kConfigTopicsPath = "/config/topics";
inline constexpr const char* kDeleteTopicsPath = "/admin/delete_topics";
/// Kafka's (ZooKeeper mode): partitions whose preferred replica should lead (preferred_replica_election_znode).
inline constexpr const char* kPreferredReplicaElectionPath = "/admin/preferred_replica_election";
/// Sluice's own (Kafka asks the controller by RPC): brokers asking for a controlled shutdown.
inline constexpr const char* kControlledShutdownPath = "/admin/controlled_shutdown";

/// /brokers/ids/<id>, ephemeral. v5: {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
/// "endpoints":["PLAINTEXT://host:port"],"jmx_port":-1,"port":p,"host":"h","version":5,"timestamp":"<ms>"}
/// (+ "rack" when set).
struct broker_znode {
  static std::string path(int32_t id) { return std::string(kBrokerIdsPath) + "/" + std::to_string(id); }
  static std::string encode(const broker_registration& b, int64_t timestamp_ms);
  /// Reads v1 (host, port) to v5 (endpoints first). `id` comes from the path.
  static result<broker_registration> decode(int32_t id, const std::string& data);
};

/// /controller, ephemeral: {"version":2,"brokerid":N,"timestamp":"<ms>","kraftControllerEpoch":-1}.
struct controller_znode {
  static std::string path() { return "/controller"; }
  static std::string encode(int32_t broker_id, int64_t timestamp_ms);
  static result<int32_t> decode(const std::string& data);
};

/// /controller_epoch, persistent: the epoch as plain decimal text ("1").
struct controller_epoch_znode {
  static std::string path() { return "/controller_epoch"; }
  static std::string encode(int32_t epoch) { return std::to_string(epoch); }
  static result<int32_t> decode(const std::string& data);
};

/// /brokers/topics/<t>: {"partitions":{"0":[1,2,3]},"topic_id":"<base64>","adding_replicas":{"0":[4]},
/// "removing_replicas":{"0":[1]},"version":3}: adding/removing name only partitions being reassigned (KIP-455).
/// `configs` is not part of it (see topic_config_znode).
struct topic_znode {
  static std::string path(const std::string& topic) { return std::string(kTopicsPath) + "/" + topic; }
  static std::string partitions_path(const std::string& topic) { return path(topic) + "/partitions"; }
  static std::string encode(const topic_assignment& t);
  /// Partitions must be numbered 0..n-1; topic_id may be absent (all-zero id then).
  static result<topic_assignment> decode(const std::string& topic, const std::string& data);
};

/// /brokers/topics/<t>/partitions/<p>/state:
/// {"controller_epoch":..,"leader":..,"version":1,"leader_epoch":..,"isr":[..]}.
struct partition_state_znode {
  static std::string partition_path(const std::string& topic, int32_t partition) {
    return topic_znode::partitions_path(topic) + "/" + std::to_string(partition);
  }
  static std::string path(const std::string& topic, int32_t partition) {
    return partition_path(topic, partition) + "/state";
  }
  static std::string encode(const partition_state& s);
  /// `zk_version` is the znode's Stat.version, stored in the result's `version`.
  static result<partition_state> decode(const std::string& data, int32_t zk_version);
};

/// /config/topics/<t>: {"version":1,"config":{"retention.ms":"1000"}}.
struct topic_config_znode {
  static std::string path(const std::string& topic) { return std::string(kConfigTopicsPath) + "/" + topic; }
  static std::string encode(const std::map<std::string, std::string>& configs);
  static result<std::map<std::string, std::string>> decode(const std::string& data);
};

/// /admin/delete_topics/<t>: an empty marker; the controller deletes the topic, then the marker.
struct delete_topic_znode {
  static std::string path(const std::string& topic) { return std::string(kDeleteTopicsPath) + "/" + topic; }
};

/// /admin/preferred_replica_election, persistent: {"version":1,"partitions":[{"topic":"t","partition":0}]}
/// (Kafka's PreferredReplicaElectionZNode, written by kafka-preferred-replica-election.sh). The controller
/// watches it, makes each partition's first replica leader where it is alive and in the ISR, then deletes it.
struct preferred_replica_election_znode {
  using partitions = std::set<std::pair<std::string, int32_t>>;  // (topic, partition), no duplicates
  static std::string path() { return kPreferredReplicaElectionPath; }
  static std::string encode(const partitions& ps);
  /// Malformed: not an object, no "partitions" array, an entry without a string topic and a partition >= 0.
  static result<partitions> decode(const std::string& data);
};

/// /cluster/id: {"version":"1","id":"<22 chars>"} (Kafka writes the version as a string here).
struct cluster_id_znode {
  static std::string path() { return "/cluster/id"; }
  static std::string encode(const std::string& id);
  static result<std::string> decode(const std::string& data);
};

/// /latest_producer_id_block: {"version":1,"broker":..,"block_start":"..","block_end":".."}. Empty data
/// (the node as created at startup) means no block was handed out yet.
struct producer_id_block_znode {
  static std::string path() { return "/latest_producer_id_block"; }
  static std::string encode(const producer_id_block& b);
  static result<producer_id_block> decode(const std::string& data);
};

/// /admin/controlled_shutdown/<id>, ephemeral, Sluice's own: created by a broker asking for a controlled
/// shutdown {"version":1,"broker":id,"timestamp":"<ms>"}; the controller adds "remaining_leaders": the
/// number of partitions with more than one replica this broker still leads (0: done).
struct controlled_shutdown_znode {
  static std::string path(int32_t id) { return std::string(kControlledShutdownPath) + "/" + std::to_string(id); }
  struct value {
    int32_t broker = -1;
    int64_t timestamp_ms = 0;
    int32_t remaining_leaders = -1;  // -1: not answered yet
  };
  static std::string encode(const value& v);
  static result<value> decode(const std::string& data);
};

}  // namespace sluice::coordination::zk
