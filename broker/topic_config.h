#pragma once
// Topic-level configs with Kafka's topic keys, their defaults and the broker keys they inherit from.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "broker/config.h"
#include "storage/log.h"

namespace sluice::broker {

/// DescribeConfigs ConfigType (KIP-569).
enum class config_type : int8_t { boolean = 1, string = 2, int32 = 3, int16 = 4, int64 = 5, float64 = 6, list = 7 };

/// One topic config key: its Kafka name, the broker key that supplies its default (Kafka's
/// ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS; empty if none), the default when that broker key is unset
/// and its type. `internal`: Kafka's LogConfig defines it with defineInternal (internal.segment.bytes): it is
/// accepted, but listed by DescribeConfigs and CreateTopics only when a topic sets it. Source: Kafka 4.4's
/// TopicConfig / LogConfig.
struct topic_config_key {
  std::string_view name;
  std::string_view broker_key;
  std::string_view default_value;
  config_type type;
  bool internal = false;
};

/// Every topic config key of Kafka 4.4 (LogConfig.configNames()): 37 public keys and internal.segment.bytes.
std::span<const topic_config_key> topic_config_keys();
const topic_config_key* find_topic_config_key(std::string_view name);

/// The value a topic gets for `key` when it has no override: the broker's value of the matching broker
/// key, or the static default.
std::string topic_config_default(const broker_config& broker, const topic_config_key& key);

/// DescribeConfigs ConfigType (KIP-569) of a topic key: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7;
/// STRING for an unknown name.
int8_t topic_config_type(std::string_view name);

/// A DescribeConfigs synonym (KIP-226): a config name, its value, where it comes from (ConfigSource:
/// DYNAMIC_TOPIC_CONFIG 1, STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5).
struct config_synonym {
  std::string name;
  std::optional<std::string> value;
  int8_t source;
};

/// The synonyms of topic key `key` in Kafka's order (ConfigHelper.createTopicConfigEntry): the topic's override,
/// then the broker key's synonym group (broker_config_synonyms). The first one's source is the config's
/// config_source; none means DEFAULT_CONFIG.
std::vector<config_synonym> topic_config_synonyms(const broker_config& broker, const topic_config_key& key,
                                                  const std::map<std::string, std::string>& overrides);

/// The synonyms of broker key `name` as Kafka's ConfigHelper.configSynonyms lists them: over the key's synonym
/// group (log.retention.ms|minutes|hours, log.roll.ms|hours, log.roll.jitter.ms|hours,
/// log.flush.interval.ms + log.flush.scheduler.interval.ms, else the key alone) first every member set in
/// server.properties or --override (STATIC_BROKER_CONFIG), then every member with a non-null default
/// (DEFAULT_CONFIG), and of that list only the part from the first entry named `name` on (so log.retention.ms
/// has none while only log.retention.hours' default applies, as in Kafka). `fallback_default`: the default of a
/// broker key this broker does not read (a topic key's broker synonym such as log.local.retention.ms).
std::vector<config_synonym> broker_config_synonyms(const broker_config& broker, std::string_view name,
                                                   std::optional<std::string_view> fallback_default = std::nullopt);

/// Whether a key holds a list (IncrementalAlterConfigs APPEND/SUBTRACT apply only to these).
bool topic_config_is_list(std::string_view name);

/// Whether a member of `key`'s broker synonym group is set in server.properties or --override: CreateTopics then
/// lists the key as STATIC_BROKER_CONFIG (Kafka's KafkaConfigSchema.resolveEffectiveTopicConfig).
bool topic_config_set_by_broker(const broker_config& broker, const topic_config_key& key);

/// Checks one topic config value as Kafka's LogConfig does (Kafka 4.4 bounds): the key must be known; the
/// value (trimmed, as Kafka's ConfigDef parses it) must parse as the key's type (INT within 32 bits, LONG,
/// DOUBLE, BOOLEAN true/false in any case, LIST) and pass the key's validator: Range.atLeast bounds
/// (segment.bytes >= 1048576 since Kafka 4.0, KIP-1030; internal.segment.bytes has none; segment.ms >= 1,
/// retention.ms >= -1, max.message.bytes >= 0, min.insync.replicas >= 1, flush.messages >= 1, ...),
/// min.cleanable.dirty.ratio in [0, 1], max.decompressed.message.bytes in [1, 2147483639], the allowed strings of
/// cleanup.policy, compression.type and message.timestamp.type, the KIP-390 compression level ranges and
/// the throttled replica lists. Returns Kafka's message ("Invalid value V for configuration K: ...") when
/// invalid; every admin path answers INVALID_CONFIG with it.
std::optional<std::string> validate_topic_config(std::string_view name, std::string_view value);

/// validate_topic_config over a set of overrides: the first problem (CreateTopics, AlterConfigs,
/// IncrementalAlterConfigs and their validate_only all go through this one check).
std::optional<std::string> validate_topic_configs(const std::map<std::string, std::string>& overrides);

/// Whether a throttled replica list (leader.replication.throttled.replicas or follower.replication.throttled.replicas:
/// "*" or "partition:broker,..."; KIP-73) names broker `broker`'s replica of `partition`.
bool throttled_replica_listed(std::string_view list, int32_t partition, int32_t broker);
/// The topic configs holding those lists (KIP-73).
inline const std::string leader_throttled_replicas_key = "leader.replication.throttled.replicas";
inline const std::string follower_throttled_replicas_key = "follower.replication.throttled.replicas";
/// Whether a topic's configs list broker `broker`'s replica of `partition` under `key` (one of the two above).
bool replica_throttled(const std::map<std::string, std::string>& configs, const std::string& key, int32_t partition,
                       int32_t broker);

/// A LONG config value as Java's Long.parseLong reads it after ConfigDef's trim; nullopt if not a number.
std::optional<int64_t> parse_config_long(std::string_view text);

/// A numeric topic override when it is present and valid (validate_topic_config), else nullopt: an invalid
/// value stored by an older version is ignored, as make_log_config does.
std::optional<int64_t> topic_config_long(const std::map<std::string, std::string>& overrides, const char* key);

/// min.insync.replicas of a topic: its override, else the broker's min.insync.replicas.
int32_t topic_min_insync_replicas(const broker_config& broker, const std::map<std::string, std::string>& overrides);

/// The storage settings of a topic's partitions: broker defaults, then the topic's overrides.
storage::log_config make_log_config(const broker_config& broker, const std::map<std::string, std::string>& overrides);

}  // namespace sluice::broker
