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

/// Checks overrides given at CreateTopics/AlterConfigs: unknown keys and non-numeric values of numeric
/// keys are errors (Kafka: INVALID_CONFIG) with a message naming the key.
std::optional<std::string> validate_topic_configs(const std::map<std::string, std::string>& overrides);

/// min.insync.replicas of a topic: its override, else the broker's min.insync.replicas.
int32_t topic_min_insync_replicas(const broker_config& broker, const std::map<std::string, std::string>& overrides);

/// The storage settings of a topic's partitions: broker defaults, then the topic's overrides.
storage::log_config make_log_config(const broker_config& broker, const std::map<std::string, std::string>& overrides);

}  // namespace sluice::broker
