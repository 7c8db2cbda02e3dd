#pragma once
// Broker configuration with Kafka's own server.properties keys and meanings (DESIGN.md §3).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace sluice::broker {

/// One listener endpoint, `NAME://host:port` as Kafka writes it (e.g. PLAINTEXT://localhost:9092).
/// An empty host means every interface; a host name binds every address it resolves to.
struct endpoint {
  std::string listener_name;  // PLAINTEXT
  std::string host;
  uint16_t port = 0;
};

/// Parses a comma-separated listener list. Errors name the bad entry.
result<std::vector<endpoint>> parse_listeners(const std::string& text);

/// One address of `http.listeners`: `http://host:port` or `https://host:port` (port 0: any free port).
struct http_endpoint {
  bool tls = false;
  std::string host;
  uint16_t port = 0;
};
/// Parses `http.listeners`, a comma-separated list; empty: none. Errors name the bad entry.
result<std::vector<http_endpoint>> parse_http_listeners(const std::string& text);

/// Kafka's rack-aware selector class (KIP-392), the one value replica.selector.class takes besides empty.
inline constexpr const char* rack_aware_replica_selector = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

/// The effective configuration: every known key with its value after defaults, the config file and the
/// `--override key=value` arguments, in that order of precedence (last wins). Typed fields are read once.
struct broker_config {
  int32_t broker_id = 0;                            // broker.id
  std::vector<endpoint> listeners;                  // listeners
  std::vector<endpoint> advertised_listeners;       // advertised.listeners (default: listeners)
  std::vector<std::filesystem::path> log_dirs;      // log.dirs, else log.dir
  int32_t num_partitions = 1;                       // num.partitions
  int16_t default_replication_factor = 1;           // default.replication.factor
  bool auto_create_topics_enable = true;            // auto.create.topics.enable
  bool delete_topic_enable = true;                  // delete.topic.enable
  int64_t log_segment_bytes = 1073741824;           // log.segment.bytes
  int32_t log_index_interval_bytes = 4096;          // log.index.interval.bytes
  int64_t log_roll_ms = 168LL * 3600 * 1000;        // log.roll.ms | log.roll.hours
  int64_t log_retention_ms = 168LL * 3600 * 1000;   // log.retention.ms | minutes | hours (-1: forever)
  int64_t log_retention_bytes = -1;                 // log.retention.bytes
  int64_t log_retention_check_interval_ms = 300000; // log.retention.check.interval.ms
  int64_t log_flush_interval_messages = INT64_MAX;  // log.flush.interval.messages
  int64_t log_flush_interval_ms = -1;               // log.flush.interval.ms (-1: unset)
  int32_t message_max_bytes = 1048588;              // message.max.bytes
  int32_t socket_request_max_bytes = 104857600;     // socket.request.max.bytes
  int32_t min_insync_replicas = 1;                  // min.insync.replicas
  int16_t offsets_topic_replication_factor = 3;     // offsets.topic.replication.factor
  int32_t offsets_topic_num_partitions = 50;        // offsets.topic.num.partitions
  int32_t group_initial_rebalance_delay_ms = 3000;  // group.initial.rebalance.delay.ms
  std::string zookeeper_connect;                    // zookeeper.connect (empty: embedded single node)
  int32_t num_io_threads = 0;                       // num.io.threads (0: one per core)
  int32_t max_incremental_fetch_session_cache_slots = 1000;  // max.incremental.fetch.session.cache.slots (KIP-227)
  std::string log_level = "info";                   // sluice.log.level: trace, debug, info, warn, error
  // --- idempotent producers (KIP-98); the HTTP side and its test controls (broker/http/README.md) ---
  int64_t producer_id_expiration_ms = 86400000;     // producer.id.expiration.ms
  std::vector<http_endpoint> http_listeners;       // http.listeners (empty: no HTTP side)
  int32_t http_max_connections = 64;                // http.max.connections
  int32_t http_max_request_bytes = 1048576;         // http.max.request.bytes
  int32_t http_request_timeout_ms = 30000;          // http.request.timeout.ms
  bool metrics_enable = true;                       // sluice.metrics.enable (request-path series; off for benchmarks)
  bool test_faults_enable = false;                  // sluice.test.faults.enable (fault injection, test controls)
  uint64_t test_faults_seed = 1;                    // sluice.test.faults.seed

  bool authorizer_enabled = false;                  // authorizer.class.name set (broker/security/authorizer.h)
  /// replica.selector.class is RackAwareReplicaSelector (KIP-392): a leader names a follower in a consumer's rack
  /// as its preferred read replica (broker/replication/replica_selector.h).
  bool rack_aware_replica_selector = false;
  bool allow_everyone_if_no_acl_found = false;      // allow.everyone.if.no.acl.found
  int32_t acl_refresh_interval_ms = 500;            // sluice.acl.refresh.interval.ms: re-read of the cluster's ACLs
  int32_t quota_window_num = 11;                    // quota.window.num: samples of a client's rate
  int32_t quota_window_size_seconds = 1;            // quota.window.size.seconds: length of one sample

  /// The listener inter-broker traffic uses (inter.broker.listener.name, else the listener named by
  /// security.inter.broker.protocol, else the first listener).
  std::string inter_broker_listener_name = "PLAINTEXT";

  /// Every known key with its effective value as text (for DescribeConfigs and the log at start).
  std::map<std::string, std::string> values;
  /// Per-listener keys as given: "listener.name.<lowercase listener>.<key>" -> value (Kafka's
  /// ListenerName.configPrefix; read through listener_config).
  std::map<std::string, std::string> listener_values;
  /// Known keys set by the config file or an override (not left at their default).
  std::set<std::string> explicit_keys;
  /// Keys given that are not known; logged at start, not fatal.
  std::vector<std::string> unknown_keys;
};

/// The integer value of a known key from `config.values`, or `fallback` when it is unset or not a number
/// (for keys read in one place only, such as the replica.fetch.* settings).
int64_t config_long(const broker_config& config, const std::string& key, int64_t fallback);

/// The default of a broker key this broker knows, as text ("" where Kafka's default is null, e.g.
/// log.retention.ms); nullopt for a key it does not know.
std::optional<std::string> broker_config_default(const std::string& key);

/// The DescribeConfigs ConfigType (KIP-569: BOOLEAN 1, STRING 2, INT 3, SHORT 4, LONG 5, DOUBLE 6, LIST 7) of a
/// known broker key, Kafka's KafkaConfig type where Kafka has the key; STRING for an unknown key.
int8_t broker_config_type(const std::string& key);

/// Whether a known key is a PASSWORD-type key (ssl.keystore.key, sasl.jaas.config, ...): DescribeConfigs reports
/// it with a null value and is_sensitive, as Kafka.
bool broker_config_sensitive(const std::string& key);

/// The value of `key` for `listener`: "listener.name.<listener lowercased>.<key>" when given, else the broker-wide
/// key (Kafka's per-listener config lookup). "" when neither is known.
std::string listener_config(const broker_config& config, const std::string& listener, const std::string& key);
/// Whether `key` was given for `listener` or broker-wide (not left at its default).
bool listener_config_set(const broker_config& config, const std::string& listener, const std::string& key);

/// The advertised endpoint of `listener`, or null when advertised.listeners does not name it.
const endpoint* advertised_endpoint(const broker_config& config, const std::string& listener);

/// Reads `server.properties`-format text as java.util.Properties.load does: `key=value`, `key: value` or
/// `key value` lines ended by \n, \r or \r\n, `#`/`!` comments, a trailing backslash continues a line,
/// escapes (\uXXXX, \t, \n, \r, \f, backslash + any character) decoded in keys and values; values are
/// trimmed (as Kafka's ConfigDef does before parsing). Errors (no key, malformed \u) carry the line number.
result<std::map<std::string, std::string>> parse_properties(const std::string& text);

/// Broker keys from environment variables, as Bitnami's Kafka image reads them (`sluice --config-env`, the Docker
/// image): `KAFKA_CFG_LOG_DIRS=/data` and `SLUICE_CFG_LOG_DIRS=/data` both give `log.dirs=/data`. The name after the
/// prefix is lowercased and each `_` becomes `.`; a `__` gives a literal `_`. `SLUICE_CFG_` wins over `KAFKA_CFG_` for
/// the same key. `environment` is `environ`-shaped: NUL-terminated `NAME=value` strings, then nullptr. Variables with
/// an empty name after the prefix are ignored.
std::map<std::string, std::string> config_from_environment(const char* const* environment);

/// Builds the effective config from defaults, `file_values` then `overrides`. Invalid values (a
/// non-number for a numeric key, a value out of range, a malformed listener) are errors naming the key
/// and the value; unknown keys are kept in `unknown_keys`.
result<broker_config> make_config(const std::map<std::string, std::string>& file_values,
                                  const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace sluice::broker
