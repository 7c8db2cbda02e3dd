#include "broker/topic_config.h"

#include <array>
#include <charconv>

#include "storage/compression.h"

namespace sluice::broker {
namespace {

constexpr std::array<topic_config_key, 34> kKeys = {{
    {"cleanup.policy", "log.cleanup.policy", "delete", false},
    {"compression.gzip.level", "compression.gzip.level", "-1", true},
    {"compression.lz4.level", "compression.lz4.level", "9", true},
    {"compression.type", "compression.type", "producer", false},
    {"compression.zstd.level", "compression.zstd.level", "3", true},
    {"delete.retention.ms", "log.cleaner.delete.retention.ms", "86400000", true},
    {"file.delete.delay.ms", "log.segment.delete.delay.ms", "60000", true},
    {"flush.messages", "log.flush.interval.messages", "9223372036854775807", true},
    {"flush.ms", "log.flush.interval.ms", "9223372036854775807", true},
    {"follower.replication.throttled.replicas", "", "", false},
    {"index.interval.bytes", "log.index.interval.bytes", "4096", true},
    {"leader.replication.throttled.replicas", "", "", false},
    {"local.retention.bytes", "log.local.retention.bytes", "-2", true},
    {"local.retention.ms", "log.local.retention.ms", "-2", true},
    {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807", true},
    {"max.message.bytes", "message.max.bytes", "1048588", true},
    {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "3600000", true},
    {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "9223372036854775807", true},
    {"message.timestamp.type", "log.message.timestamp.type", "CreateTime", false},
    {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "0.5", false},
    {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "0", true},
    {"min.insync.replicas", "min.insync.replicas", "1", true},
    {"preallocate", "log.preallocate", "false", false},
    {"remote.log.copy.disable", "", "false", false},
    {"remote.log.delete.on.disable", "", "false", false},
    {"remote.storage.enable", "", "false", false},
    {"retention.bytes", "log.retention.bytes", "-1", true},
    {"retention.ms", "log.retention.ms", "604800000", true},
    {"segment.bytes", "log.segment.bytes", "1073741824", true},
    {"segment.index.bytes", "log.index.size.max.bytes", "10485760", true},
    {"segment.jitter.ms", "log.roll.jitter.ms", "0", true},
    {"segment.ms", "log.roll.ms", "604800000", true},
    {"unclean.leader.election.enable", "unclean.leader.election.enable", "false", false},
    {"message.downconversion.enable", "log.message.downconversion.enable", "true", false},
}};

bool is_integer(const std::string& text) {
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && ptr == text.data() + text.size();
}

int64_t to_int(const std::string& text, int64_t fallback) {
  int64_t n = fallback;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

}  // namespace

std::span<const topic_config_key> topic_config_keys() { return kKeys; }

const topic_config_key* find_topic_config_key(std::string_view name) {
  for (const auto& k : kKeys)
    if (k.name == name) return &k;
  return nullptr;
}

int8_t topic_config_type(std::string_view name) {
  static const std::array<std::string_view, 8> ints = {"index.interval.bytes", "max.message.bytes", "min.insync.replicas",
                                                       "segment.bytes", "segment.index.bytes", "compression.gzip.level",
                                                       "compression.lz4.level", "compression.zstd.level"};
  static const std::array<std::string_view, 6> bools = {"preallocate", "unclean.leader.election.enable",
                                                        "remote.storage.enable", "message.downconversion.enable",
                                                        "remote.log.copy.disable", "remote.log.delete.on.disable"};
  for (auto n : ints)
    if (n == name) return 3;
  for (auto n : bools)
    if (n == name) return 1;
  if (topic_config_is_list(name)) return 7;
  if (name == "min.cleanable.dirty.ratio") return 6;
  const auto* key = find_topic_config_key(name);
  return key && key->is_long ? 5 : 2;
}

bool topic_config_is_list(std::string_view name) {
  return name == "cleanup.policy" || name == "follower.replication.throttled.replicas" ||
         name == "leader.replication.throttled.replicas";
}

std::string topic_config_default(const broker_config& broker, const topic_config_key& key) {
  // Broker keys whose effective value is computed from several keys.
  if (key.name == "retention.ms") return std::to_string(broker.log_retention_ms);
  if (key.name == "segment.ms") return std::to_string(broker.log_roll_ms);
  if (key.name == "flush.ms" && broker.log_flush_interval_ms >= 0) return std::to_string(broker.log_flush_interval_ms);
  if (!key.broker_key.empty()) {
    auto it = broker.values.find(std::string(key.broker_key));
    if (it != broker.values.end() && !it->second.empty()) return it->second;
  }
  return std::string(key.default_value);
}

std::optional<std::string> validate_topic_configs(const std::map<std::string, std::string>& overrides) {
  for (const auto& [name, value] : overrides) {
    const auto* key = find_topic_config_key(name);
    if (!key) return "Unknown topic config name: " + name;
    if (key->is_long && !is_integer(value))
      return "Invalid value " + value + " for configuration " + name + ": Not a number of type LONG";
    auto one_of = [&](std::initializer_list<std::string_view> allowed) {
      for (auto a : allowed)
        if (value == a) return true;
      return false;
    };
    if (name == "message.timestamp.type" && !one_of({"CreateTime", "LogAppendTime"}))
      return "Invalid value " + value + " for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime";
    if (name == "cleanup.policy" && !one_of({"delete", "compact", "compact,delete", "delete,compact"}))
      return "Invalid value " + value + " for configuration cleanup.policy: String must be one of: compact, delete";
    if (name == "compression.type" && !one_of({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}))
      return "Invalid value " + value + " for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer";
    // KIP-390 level ranges (Kafka's CompressionType validators).
    auto in_range = [&](int64_t lo, int64_t hi) {
      const int64_t n = to_int(value, lo - 1);
      return n >= lo && n <= hi;
    };
    if (name == "compression.gzip.level" && !(to_int(value, 0) == -1 || in_range(1, 9)))
      return "Invalid value " + value + " for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1";
    if (name == "compression.lz4.level" && !in_range(1, 17))
      return "Invalid value " + value + " for configuration compression.lz4.level: Value must be between 1 and 17";
    if (name == "compression.zstd.level" && !in_range(-131072, 22))
      return "Invalid value " + value + " for configuration compression.zstd.level: Value must be between -131072 and 22";
  }
  return std::nullopt;
}

storage::log_config make_log_config(const broker_config& broker, const std::map<std::string, std::string>& overrides) {
  storage::log_config c;
  c.segment_bytes = broker.log_segment_bytes;
  c.index_interval_bytes = broker.log_index_interval_bytes;
  c.max_message_bytes = broker.message_max_bytes;
  c.producer_id_expiration_ms = broker.producer_id_expiration_ms;  // a broker key in Kafka, not a topic key
  if (auto it = overrides.find("segment.bytes"); it != overrides.end()) c.segment_bytes = to_int(it->second, c.segment_bytes);
  if (auto it = overrides.find("index.interval.bytes"); it != overrides.end())
    c.index_interval_bytes = static_cast<int32_t>(to_int(it->second, c.index_interval_bytes));
  if (auto it = overrides.find("max.message.bytes"); it != overrides.end())
    c.max_message_bytes = static_cast<int32_t>(to_int(it->second, c.max_message_bytes));
  c.segment_ms = broker.log_roll_ms;
  if (auto it = overrides.find("segment.ms"); it != overrides.end()) c.segment_ms = to_int(it->second, c.segment_ms);
  c.flush_messages = broker.log_flush_interval_messages;
  if (auto it = overrides.find("flush.messages"); it != overrides.end())
    c.flush_messages = to_int(it->second, c.flush_messages);
  c.flush_ms = broker.log_flush_interval_ms >= 0 ? broker.log_flush_interval_ms : INT64_MAX;
  if (auto it = overrides.find("flush.ms"); it != overrides.end()) c.flush_ms = to_int(it->second, c.flush_ms);
  std::string ts_type = broker.values.count("log.message.timestamp.type") ? broker.values.at("log.message.timestamp.type")
                                                                          : "CreateTime";
  if (auto it = overrides.find("message.timestamp.type"); it != overrides.end()) ts_type = it->second;
  c.message_timestamp_type =
      ts_type == "LogAppendTime" ? storage::timestamp_type::log_append_time : storage::timestamp_type::create_time;
  // compression.type and the KIP-390 levels: the broker keys of the same names, then the topic's overrides.
  auto value_of = [&](const char* key, const char* fallback) {
    if (auto it = overrides.find(key); it != overrides.end()) return it->second;
    if (auto it = broker.values.find(key); it != broker.values.end() && !it->second.empty()) return it->second;
    return std::string(fallback);
  };
  c.compression_type = storage::parse_topic_compression_type(value_of("compression.type", "producer"));
  c.compression_level.gzip = static_cast<int>(to_int(value_of("compression.gzip.level", "-1"), -1));
  c.compression_level.lz4 = static_cast<int>(to_int(value_of("compression.lz4.level", "9"), 9));
  c.compression_level.zstd = static_cast<int>(to_int(value_of("compression.zstd.level", "3"), 3));
  return c;
}

int32_t topic_min_insync_replicas(const broker_config& broker, const std::map<std::string, std::string>& overrides) {
  auto it = overrides.find("min.insync.replicas");
  if (it == overrides.end()) return broker.min_insync_replicas;
  try {
    return std::max(1, std::stoi(it->second));
  } catch (...) {
    return broker.min_insync_replicas;
  }
}

}  // namespace sluice::broker
