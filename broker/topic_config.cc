#include "broker/topic_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <vector>

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

// Java's String.trim(): Kafka's ConfigDef trims every value before parsing it.
std::string_view trim(std::string_view text) {
  while (!text.empty() && static_cast<unsigned char>(text.front()) <= ' ') text.remove_prefix(1);
  while (!text.empty() && static_cast<unsigned char>(text.back()) <= ' ') text.remove_suffix(1);
  return text;
}

std::string invalid(std::string_view name, std::string_view value, std::string_view why) {
  return "Invalid value " + std::string(value) + " for configuration " + std::string(name) + ": " + std::string(why);
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (value == a) return true;
  return false;
}

/// The lower bound (Kafka's Range.atLeast) of a numeric topic key, from Kafka 3.x's LogConfig; nullopt when
/// any value of its type is accepted (retention.bytes) or the key has its own check (compression levels).
std::optional<int64_t> lower_bound(std::string_view name) {
  struct bound {
    std::string_view name;
    int64_t min;
  };
  static constexpr std::array<bound, 18> kBounds = {{
      {"segment.bytes", 14},  // LegacyRecord.RECORD_OVERHEAD_V0
      {"segment.ms", 1},
      {"segment.jitter.ms", 0},
      {"segment.index.bytes", 4},
      {"flush.messages", 1},
      {"flush.ms", 0},
      {"retention.ms", -1},
      {"max.message.bytes", 0},
      {"index.interval.bytes", 0},
      {"file.delete.delay.ms", 0},
      {"delete.retention.ms", 0},
      {"min.compaction.lag.ms", 0},
      {"max.compaction.lag.ms", 1},
      {"min.insync.replicas", 1},
      {"message.timestamp.before.max.ms", 0},
      {"message.timestamp.after.max.ms", 0},
      {"local.retention.ms", -2},
      {"local.retention.bytes", -2},
  }};
  for (const auto& b : kBounds)
    if (b.name == name) return b.min;
  return std::nullopt;
}

std::optional<double> parse_double(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double d = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return d;
}

/// Splits a LIST value as Kafka's ConfigDef does: trimmed; empty means no items; else items separated by
/// commas with any whitespace around them (an empty item is kept, and is then invalid).
std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> out;
  text = trim(text);
  if (text.empty()) return out;
  for (;;) {
    auto comma = text.find(',');
    out.push_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

std::optional<int64_t> topic_config_long(const std::map<std::string, std::string>& overrides, const char* key) {
  auto it = overrides.find(key);
  if (it == overrides.end() || validate_topic_config(key, it->second)) return std::nullopt;
  return parse_config_long(it->second);
}

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

std::optional<int64_t> parse_config_long(std::string_view text) {
  text = trim(text);
  // Long.parseLong accepts one leading sign, '+' included; std::from_chars only '-'.
  if (text.size() > 1 && text.front() == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return n;
}

std::optional<std::string> validate_topic_config(std::string_view name, std::string_view value) {
  const auto* key = find_topic_config_key(name);
  if (!key) return "Unknown topic config name: " + std::string(name);
  const std::string_view v = trim(value);
  const int8_t type = topic_config_type(name);
  switch (type) {
    case 1: {  // BOOLEAN: true or false in any case
      std::string lower(v);
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower != "true" && lower != "false") return invalid(name, value, "Expected value to be either true or false");
      return std::nullopt;
    }
    case 3:    // INT
    case 5: {  // LONG
      const bool is_int = type == 3;
      auto n = parse_config_long(value);
      if (!n || (is_int && (*n < INT32_MIN || *n > INT32_MAX)))
        return invalid(name, value, is_int ? "Not a number of type INT" : "Not a number of type LONG");
      if (auto min = lower_bound(name); min && *n < *min) return invalid(name, value, "Value must be at least " + std::to_string(*min));
      // KIP-390 level ranges (Kafka's CompressionType validators).
      if (name == "compression.gzip.level" && !(*n == -1 || (*n >= 1 && *n <= 9)))
        return invalid(name, value, "Value must be between 1 and 9 or equal to -1");
      if (name == "compression.lz4.level" && !(*n >= 1 && *n <= 17))
        return invalid(name, value, "Value must be between 1 and 17");
      if (name == "compression.zstd.level" && !(*n >= -131072 && *n <= 22))
        return invalid(name, value, "Value must be between -131072 and 22");
      return std::nullopt;
    }
    case 6: {  // DOUBLE: min.cleanable.dirty.ratio, Range.between(0, 1)
      auto d = parse_double(value);
      if (!d) return invalid(name, value, "Not a number of type DOUBLE");
      if (*d < 0) return invalid(name, value, "Value must be at least 0");
      if (*d > 1) return invalid(name, value, "Value must be no more than 1");
      return std::nullopt;
    }
    case 7: {  // LIST
      const auto items = split_list(value);
      if (name == "cleanup.policy") {
        for (auto item : items)
          if (!one_of(item, {"compact", "delete"})) return invalid(name, item, "String must be one of: compact, delete");
        return std::nullopt;
      }
      // The throttled replica lists (Kafka's ThrottledReplicaListValidator): "*" or partition:broker pairs.
      if (items.size() == 1 && items[0] == "*") return std::nullopt;
      for (auto item : items) {
        const auto colon = item.find(':');
        auto digits = [](std::string_view s) {
          return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        };
        if (item.empty()) continue;
        if (colon == std::string_view::npos || !digits(item.substr(0, colon)) || !digits(item.substr(colon + 1)))
          return invalid(name, value,
                         std::string(name) +
                             " must be the literal '*' or a list of replicas in the following format: "
                             "[partitionId]:[brokerId],[partitionId]:[brokerId],...");
      }
      return std::nullopt;
    }
    default:  // STRING
      if (name == "message.timestamp.type" && !one_of(v, {"CreateTime", "LogAppendTime"}))
        return invalid(name, value, "String must be one of: CreateTime, LogAppendTime");
      if (name == "compression.type" && !one_of(v, {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}))
        return invalid(name, value, "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer");
      return std::nullopt;
  }
}

std::optional<std::string> validate_topic_configs(const std::map<std::string, std::string>& overrides) {
  for (const auto& [name, value] : overrides)
    if (auto bad = validate_topic_config(name, value)) return bad;
  return std::nullopt;
}

storage::log_config make_log_config(const broker_config& broker, const std::map<std::string, std::string>& overrides) {
  // Overrides were validated on their way in (validate_topic_configs); one that is not valid anyway (stored
  // by an older version) is ignored here, so the log is never built from a value storage cannot take.
  storage::log_config c;
  c.segment_bytes = broker.log_segment_bytes;
  c.index_interval_bytes = broker.log_index_interval_bytes;
  c.max_message_bytes = broker.message_max_bytes;
  c.producer_id_expiration_ms = broker.producer_id_expiration_ms;  // a broker key in Kafka, not a topic key
  if (auto n = topic_config_long(overrides, "segment.bytes")) c.segment_bytes = *n;
  if (auto n = topic_config_long(overrides, "index.interval.bytes")) c.index_interval_bytes = static_cast<int32_t>(*n);
  if (auto n = topic_config_long(overrides, "max.message.bytes")) c.max_message_bytes = static_cast<int32_t>(*n);
  c.segment_ms = broker.log_roll_ms;
  if (auto n = topic_config_long(overrides, "segment.ms")) c.segment_ms = *n;
  c.flush_messages = broker.log_flush_interval_messages;
  if (auto n = topic_config_long(overrides, "flush.messages")) c.flush_messages = *n;
  c.flush_ms = broker.log_flush_interval_ms >= 0 ? broker.log_flush_interval_ms : INT64_MAX;
  if (auto n = topic_config_long(overrides, "flush.ms")) c.flush_ms = *n;
  // String keys: the broker key of the same meaning, then a valid topic override (trimmed, as Kafka parses).
  auto value_of = [&](const char* key, const char* broker_key, const char* fallback) {
    if (auto it = overrides.find(key); it != overrides.end() && !validate_topic_config(key, it->second))
      return std::string(trim(it->second));
    if (auto it = broker.values.find(broker_key); it != broker.values.end() && !it->second.empty())
      return std::string(trim(it->second));
    return std::string(fallback);
  };
  c.message_timestamp_type = value_of("message.timestamp.type", "log.message.timestamp.type", "CreateTime") == "LogAppendTime"
                                 ? storage::timestamp_type::log_append_time
                                 : storage::timestamp_type::create_time;
  // compression.type and the KIP-390 levels: the broker keys of the same names, then the topic's overrides.
  c.compression_type = storage::parse_topic_compression_type(value_of("compression.type", "compression.type", "producer"));
  auto level = [&](const char* key, int fallback) {
    return static_cast<int>(parse_config_long(value_of(key, key, "")).value_or(fallback));
  };
  c.compression_level.gzip = level("compression.gzip.level", -1);
  c.compression_level.lz4 = level("compression.lz4.level", 9);
  c.compression_level.zstd = level("compression.zstd.level", 3);
  // Record rules (Kafka's LogValidator): keys on compacted topics, CreateTime timestamps in range.
  c.compacted = value_of("cleanup.policy", "log.cleanup.policy", "delete").find("compact") != std::string::npos;
  auto millis = [&](const char* key, int64_t fallback) { return parse_config_long(value_of(key, ("log." + std::string(key)).c_str(), "")).value_or(fallback); };
  c.timestamp_before_max_ms = millis("message.timestamp.before.max.ms", INT64_MAX);
  c.timestamp_after_max_ms = millis("message.timestamp.after.max.ms", 3600000);
  return c;
}

int32_t topic_min_insync_replicas(const broker_config& broker, const std::map<std::string, std::string>& overrides) {
  if (auto n = topic_config_long(overrides, "min.insync.replicas")) return static_cast<int32_t>(*n);
  return broker.min_insync_replicas;
}

}  // namespace sluice::broker
