#pragma once
// Topic-level configs with Kafka's topic keys, their defaults and the broker keys they inherit from.
#include <map>
#include <optional>
#include <span>
#include <string>

#include "broker/config.h"
#include "storage/log.h"

namespace sluice::broker {

/// One topic config key: its Kafka name, the broker key that supplies its default (empty if none) and
/// the default when that broker key is unset. Source: Kafka's TopicConfig / LogConfig.
struct topic_config_key {
  std::string_view name;
  std::string_view broker_key;
  std::string_view default_value;
  bool is_long;  // numeric; validated as an integer on create/alter
};

/// Every topic config key Kafka 4.0 documents.
std::span<const topic_config_key> topic_config_keys();
const topic_config_key* find_topic_config_key(std::string_view name);

/// The value a topic gets for `key` when it has no override: the broker's value of the matching broker
/// key, or the static default.
std::string topic_config_default(const broker_config& broker, const topic_config_key& key);

/// DescribeConfigs ConfigType (KIP-569): BOOLEAN 1, STRING 2, INT 3, SHORT 4, LONG 5, DOUBLE 6, LIST 7.
int8_t topic_config_type(std::string_view name);
/// Whether a key holds a list (IncrementalAlterConfigs APPEND/SUBTRACT apply only to these).
bool topic_config_is_list(std::string_view name);

/// Checks one topic config value as Kafka's LogConfig does (Kafka 3.x bounds): the key must be known; the
/// value (trimmed, as Kafka's ConfigDef parses it) must parse as the key's type (INT within 32 bits, LONG,
/// DOUBLE, BOOLEAN true/false in any case, LIST) and pass the key's validator: Range.atLeast bounds
/// (segment.bytes >= 14, segment.ms >= 1, retention.ms >= -1, max.message.bytes >= 0, min.insync.replicas
/// >= 1, flush.messages >= 1, ...), min.cleanable.dirty.ratio in [0, 1], the allowed strings of
/// cleanup.policy, compression.type and message.timestamp.type, the KIP-390 compression level ranges and
/// the throttled replica lists. Returns Kafka's message ("Invalid value V for configuration K: ...") when
/// invalid; every admin path answers INVALID_CONFIG with it.
std::optional<std::string> validate_topic_config(std::string_view name, std::string_view value);

/// validate_topic_config over a set of overrides: the first problem (CreateTopics, AlterConfigs,
/// IncrementalAlterConfigs and their validate_only all go through this one check).
std::optional<std::string> validate_topic_configs(const std::map<std::string, std::string>& overrides);

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
