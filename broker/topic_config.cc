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

using ct = config_type;

// Kafka 4.4's LogConfig: name, broker synonym (ServerTopicConfigSynonyms), default, type.
constexpr std::array<topic_config_key, 38> kKeys = {{
    {"cleanup.policy", "log.cleanup.policy", "delete", ct::list},
    {"compression.gzip.level", "compression.gzip.level", "-1", ct::int32},
    {"compression.lz4.level", "compression.lz4.level", "9", ct::int32},
    {"compression.type", "compression.type", "producer", ct::string},
    {"compression.zstd.level", "compression.zstd.level", "3", ct::int32},
    {"delete.retention.ms", "log.cleaner.delete.retention.ms", "86400000", ct::int64},
    {"errors.deadletterqueue.group.enable", "", "false", ct::boolean},
    {"file.delete.delay.ms", "log.segment.delete.delay.ms", "60000", ct::int64},
    {"flush.messages", "log.flush.interval.messages", "9223372036854775807", ct::int64},
    {"flush.ms", "log.flush.interval.ms", "9223372036854775807", ct::int64},
    {"follower.replication.throttled.replicas", "", "", ct::list},
    {"index.interval.bytes", "log.index.interval.bytes", "4096", ct::int32},
    {"leader.replication.throttled.replicas", "", "", ct::list},
    {"local.retention.bytes", "log.local.retention.bytes", "-2", ct::int64},
    {"local.retention.ms", "log.local.retention.ms", "-2", ct::int64},
    {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807", ct::int64},
    {"max.decompressed.message.bytes", "max.decompressed.message.bytes", "2147483639", ct::int32},
    {"max.message.bytes", "message.max.bytes", "1048588", ct::int32},
    {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "3600000", ct::int64},
    {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "9223372036854775807", ct::int64},
    {"message.timestamp.type", "log.message.timestamp.type", "CreateTime", ct::string},
    {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "0.5", ct::float64},
    {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "0", ct::int64},
    {"min.insync.replicas", "min.insync.replicas", "1", ct::int32},
    {"preallocate", "log.preallocate", "false", ct::boolean},
    {"remote.copy.lag.bytes", "log.remote.copy.lag.bytes", "-1", ct::int64},
    {"remote.copy.lag.ms", "log.remote.copy.lag.ms", "0", ct::int64},
    {"remote.log.copy.disable", "", "false", ct::boolean},
    {"remote.log.delete.on.disable", "", "false", ct::boolean},
    {"remote.storage.enable", "", "false", ct::boolean},
    {"retention.bytes", "log.retention.bytes", "-1", ct::int64},
    {"retention.ms", "log.retention.ms", "604800000", ct::int64},
    {"segment.bytes", "log.segment.bytes", "1073741824", ct::int32},
    {"segment.index.bytes", "log.index.size.max.bytes", "10485760", ct::int32},
    {"segment.jitter.ms", "log.roll.jitter.ms", "0", ct::int64},
    {"segment.ms", "log.roll.ms", "604800000", ct::int64},
    {"unclean.leader.election.enable", "unclean.leader.election.enable", "false", ct::boolean},
    // Kafka 4.x's escape hatch below segment.bytes' 1 MiB minimum (tests and tools): no default, no bounds; it
    // replaces segment.bytes when set. message.downconversion.enable is gone since Kafka 4.0 (KIP-724).
    {"internal.segment.bytes", "", "", ct::int32, true},
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

/// The lower bound (Kafka's Range.atLeast) of a numeric topic key, from Kafka 4.4's LogConfig; nullopt when
/// any value of its type is accepted (retention.bytes, internal.segment.bytes) or the key has its own check
/// (compression levels, max.decompressed.message.bytes).
std::optional<int64_t> lower_bound(std::string_view name) {
  struct bound {
    std::string_view name;
    int64_t min;
  };
  static constexpr std::array<bound, 21> kBounds = {{
      {"segment.bytes", 1048576},  // 1 MiB since Kafka 4.0 (KIP-1030); 14 before
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
      {"remote.copy.lag.bytes", -1},
      {"remote.copy.lag.ms", -1},
      {"max.decompressed.message.bytes", 1},
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
  const auto* key = find_topic_config_key(name);
  return static_cast<int8_t>(key ? key->type : config_type::string);
}

bool topic_config_is_list(std::string_view name) {
  const auto* key = find_topic_config_key(name);
  return key && key->type == config_type::list;
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

namespace {
// ConfigSource (KIP-226).
constexpr int8_t kTopicSource = 1, kStaticBrokerSource = 4, kDefaultSource = 5;

/// DynamicBrokerConfig.brokerConfigSynonyms: the broker keys that set the same thing, the preferred first.
std::vector<std::string_view> broker_synonym_group(std::string_view name) {
  if (name == "log.roll.ms" || name == "log.roll.hours") return {"log.roll.ms", "log.roll.hours"};
  if (name == "log.roll.jitter.ms" || name == "log.roll.jitter.hours") return {"log.roll.jitter.ms", "log.roll.jitter.hours"};
  if (name == "log.flush.interval.ms") return {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"};
  if (name == "log.retention.ms" || name == "log.retention.minutes" || name == "log.retention.hours")
    return {"log.retention.ms", "log.retention.minutes", "log.retention.hours"};
  return {name};
}
}  // namespace

std::vector<config_synonym> broker_config_synonyms(const broker_config& broker, std::string_view name,
                                                   std::optional<std::string_view> fallback_default) {
  std::vector<config_synonym> all;
  const auto group = broker_synonym_group(name);
  for (auto member : group) {
    const std::string key(member);
    if (!broker.explicit_keys.contains(key)) continue;
    auto it = broker.values.find(key);
    all.push_back({key, it == broker.values.end() ? std::optional<std::string>() : it->second, kStaticBrokerSource});
  }
  for (auto member : group) {
    const std::string key(member);
    std::optional<std::string> def = broker_config_default(key);
    if (!def && member == name && fallback_default) def = std::string(*fallback_default);
    if (def && !def->empty()) all.push_back({key, *def, kDefaultSource});  // "": a null default, no synonym
  }
  // ConfigHelper.configSynonyms: allSynonyms.dropWhile(s => s.name != name).
  auto first = std::find_if(all.begin(), all.end(), [&](const config_synonym& s) { return s.name == name; });
  return {first, all.end()};
}

std::vector<config_synonym> topic_config_synonyms(const broker_config& broker, const topic_config_key& key,
                                                  const std::map<std::string, std::string>& overrides) {
  std::vector<config_synonym> out;
  if (auto it = overrides.find(std::string(key.name)); it != overrides.end())
    out.push_back({it->first, it->second, kTopicSource});
  if (!key.broker_key.empty())
    for (auto& s : broker_config_synonyms(broker, key.broker_key, key.default_value)) out.push_back(std::move(s));
  return out;
}

bool topic_config_set_by_broker(const broker_config& broker, const topic_config_key& key) {
  if (key.broker_key.empty()) return false;
  for (auto member : broker_synonym_group(key.broker_key))
    if (broker.explicit_keys.contains(std::string(member))) return true;
  return false;
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
      if (name == "max.decompressed.message.bytes" && *n > 2147483639)  // Range.between(1, Integer.MAX_VALUE - 8)
        return invalid(name, value, "Value must be no more than 2147483639");
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
  // Kafka's LogConfig.segmentSize(): internal.segment.bytes when set (any INT: Kafka then rolls at every batch
  // for 0 or less, which a size of 1 does here too).
  if (auto n = topic_config_long(overrides, "internal.segment.bytes")) c.segment_bytes = std::max<int64_t>(*n, 1);
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

bool throttled_replica_listed(std::string_view list, int32_t partition, int32_t broker) {
  const auto items = split_list(list);
  if (items.size() == 1 && items[0] == "*") return true;
  const std::string wanted = std::to_string(partition) + ":" + std::to_string(broker);
  return std::find(items.begin(), items.end(), wanted) != items.end();
}

bool replica_throttled(const std::map<std::string, std::string>& configs, const std::string& key, int32_t partition,
                       int32_t broker) {
  auto list = configs.find(key);
  return list != configs.end() && throttled_replica_listed(list->second, partition, broker);
}

}  // namespace sluice::broker
