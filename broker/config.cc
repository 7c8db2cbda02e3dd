#include "broker/config.h"

#include <algorithm>
#include <cctype>

#include "broker/session.h"

#include <charconv>
#include <functional>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace sluice::broker {
namespace {

error config_error(const std::string& message) { return error{base_errc::failed, message}; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\f')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\f')) --e;
  return std::string(s.substr(b, e - b));
}

/// Known keys and their defaults as Kafka documents them (text form, parsed by make_config).
const std::map<std::string, std::string>& defaults() {
  static const std::map<std::string, std::string> d = {
      {"broker.id", "0"},
      {"listeners", "PLAINTEXT://localhost:9092"},
      {"advertised.listeners", ""},
      {"log.dirs", ""},
      {"log.dir", "data"},
      {"num.partitions", "1"},
      {"default.replication.factor", "1"},
      {"auto.create.topics.enable", "true"},
      {"delete.topic.enable", "true"},
      {"log.segment.bytes", "1073741824"},
      {"log.index.interval.bytes", "4096"},
      {"log.roll.ms", ""},
      {"log.roll.hours", "168"},
      {"log.retention.ms", ""},
      {"log.retention.minutes", ""},
      {"log.retention.hours", "168"},
      {"log.retention.bytes", "-1"},
      {"log.retention.check.interval.ms", "300000"},
      {"log.flush.interval.messages", "9223372036854775807"},
      {"log.flush.interval.ms", ""},
      {"message.max.bytes", "1048588"},
      {"socket.request.max.bytes", "104857600"},
      {"max.connections", "2147483647"},
      {"max.connections.per.ip", "2147483647"},
      {"max.connection.creation.rate", "2147483647"},
      {"offsets.commit.timeout.ms", "5000"},
      {"min.insync.replicas", "1"},
      {"offsets.topic.replication.factor", "3"},
      {"offsets.topic.num.partitions", "50"},
      {"group.initial.rebalance.delay.ms", "3000"},
      {"group.min.session.timeout.ms", "6000"},
      {"group.max.session.timeout.ms", "1800000"},
      {"group.max.size", "2147483647"},
      {"offsets.retention.minutes", "10080"},
      {"offsets.retention.check.interval.ms", "600000"},
      {"offset.metadata.max.bytes", "4096"},
      // KIP-848 consumer groups (broker/groups/consumer_heartbeat.cc)
      {"group.consumer.session.timeout.ms", "45000"},
      {"group.consumer.heartbeat.interval.ms", "5000"},
      {"group.consumer.max.size", "2147483647"},
      {"group.consumer.assignors", "uniform,range"},
      // transaction coordinator (KIP-98; broker/txn_service.cc)
      {"transaction.state.log.num.partitions", "50"},
      {"transaction.state.log.replication.factor", "3"},
      {"transaction.state.log.min.isr", "2"},
      {"transaction.max.timeout.ms", "900000"},
      {"transactional.id.expiration.ms", "604800000"},
      {"transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000"},
      {"transaction.remove.expired.transaction.cleanup.interval.ms", "3600000"},
      {"request.timeout.ms", "30000"},
      {"zookeeper.connect", ""},
      // cluster mode (coordination/zk, broker/replication): Kafka's keys and defaults
      {"zookeeper.session.timeout.ms", "18000"},
      {"zookeeper.connection.timeout.ms", ""},
      {"broker.rack", ""},
      {"replica.selector.class", ""},
      {"replica.lag.time.max.ms", "30000"},
      {"replica.fetch.wait.max.ms", "500"},
      {"replica.fetch.min.bytes", "1"},
      {"replica.fetch.max.bytes", "1048576"},
      {"replica.fetch.response.max.bytes", "10485760"},
      {"auto.leader.rebalance.enable", "true"},
      {"leader.imbalance.check.interval.seconds", "300"},
      {"leader.imbalance.per.broker.percentage", "10"},
      {"controlled.shutdown.enable", "true"},
      {"sluice.zookeeper.registration.retry.ms", "0"},
      {"sluice.leader.imbalance.check.interval.ms", ""},
      {"num.io.threads", "0"},
      {"max.incremental.fetch.session.cache.slots", "1000"},
      {"num.network.threads", "3"},
      {"sluice.log.level", "info"},
      // idempotent producers (KIP-98)
      {"producer.id.expiration.ms", "86400000"},
      // the HTTP side (issue #18, broker/http/README.md): metrics, admin API, fault injection and test controls
      {"http.listeners", "http://127.0.0.1:9644"},
      {"http.max.connections", "64"},
      {"http.max.request.bytes", "1048576"},
      {"http.request.timeout.ms", "30000"},
      {"sluice.test.faults.enable", "false"},
      {"sluice.test.faults.seed", "1"},
      {"sluice.metrics.enable", "true"},
      {"log.message.timestamp.type", "CreateTime"},
      {"log.cleanup.policy", "delete"},
      {"compression.type", "producer"},
      {"log.flush.offset.checkpoint.interval.ms", "60000"},
      {"log.flush.scheduler.interval.ms", "9223372036854775807"},
      {"unclean.leader.election.enable", "false"},
      {"log.preallocate", "false"},
      {"log.index.size.max.bytes", "10485760"},
      {"log.roll.jitter.ms", ""},  // null in Kafka: segment.jitter.ms' default (0) applies
      {"log.segment.delete.delay.ms", "60000"},
      {"log.cleaner.delete.retention.ms", "86400000"},
      // compaction (broker/log_cleaner_manager.h): Kafka's LogCleaner keys and defaults
      {"offsets.topic.segment.bytes", "104857600"},
      {"transaction.state.log.segment.bytes", "104857600"},
      {"log.cleaner.enable", "true"},
      {"log.cleaner.threads", "1"},
      {"log.cleaner.dedupe.buffer.size", "134217728"},
      {"log.cleaner.io.buffer.size", "524288"},
      {"log.cleaner.io.buffer.load.factor", "0.9"},
      {"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308"},
      {"log.cleaner.backoff.ms", "15000"},
      {"log.cleaner.min.cleanable.ratio", "0.5"},
      {"log.cleaner.min.compaction.lag.ms", "0"},
      {"log.cleaner.max.compaction.lag.ms", "9223372036854775807"},
      // security (issue #17): Kafka's keys and defaults (BrokerSecurityConfigs, SslConfigs, SaslConfigs).
      // Each ssl.* and sasl.* key may also be given per listener as listener.name.<listener>.<key>.
      {"listener.security.protocol.map", "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"},
      {"inter.broker.listener.name", ""},
      {"security.inter.broker.protocol", "PLAINTEXT"},
      {"ssl.keystore.type", "JKS"},
      {"ssl.keystore.location", ""},
      {"ssl.keystore.password", ""},
      {"ssl.key.password", ""},
      {"ssl.keystore.certificate.chain", ""},
      {"ssl.keystore.key", ""},
      {"ssl.truststore.type", "JKS"},
      {"ssl.truststore.location", ""},
      {"ssl.truststore.password", ""},
      {"ssl.truststore.certificates", ""},
      {"ssl.client.auth", "none"},
      {"ssl.enabled.protocols", "TLSv1.2,TLSv1.3"},
      {"ssl.protocol", "TLSv1.3"},
      {"ssl.cipher.suites", ""},
      {"ssl.principal.mapping.rules", "DEFAULT"},
      {"ssl.endpoint.identification.algorithm", "https"},
      {"sasl.enabled.mechanisms", "GSSAPI"},
      {"sasl.mechanism.inter.broker.protocol", "GSSAPI"},
      {"sasl.jaas.config", ""},
      {"sasl.server.max.receive.size", "524288"},
      {"connections.max.reauth.ms", "0"},
      {"connection.failed.authentication.delay.ms", "100"},
      // authorization (KIP-11; broker/security/authorizer.h): off unless authorizer.class.name is set
      {"authorizer.class.name", ""},
      {"super.users", ""},
      {"allow.everyone.if.no.acl.found", "false"},
      {"sluice.acl.refresh.interval.ms", "500"},
      // client quotas (KIP-13, KIP-55; broker/quota_manager.h)
      {"quota.window.num", "11"},
      {"quota.window.size.seconds", "1"},
  };
  return d;
}

/// KafkaConfig's types of the known keys (DescribeConfigs config_type); keys Kafka does not have get ours.
int8_t type_of(const std::string& key) {
  constexpr int8_t B = 1, S = 2, I = 3, H = 4, L = 5, D = 6, LIST = 7, P = 8;  // P: PASSWORD (sensitive)
  static const std::map<std::string, int8_t> types = {
      {"broker.id", I}, {"listeners", LIST}, {"advertised.listeners", LIST}, {"log.dirs", LIST}, {"log.dir", LIST},
      {"num.partitions", I}, {"default.replication.factor", I}, {"auto.create.topics.enable", B},
      {"delete.topic.enable", B}, {"log.segment.bytes", I}, {"log.index.interval.bytes", I}, {"log.roll.ms", L},
      {"log.roll.hours", I}, {"log.retention.ms", L}, {"log.retention.minutes", I}, {"log.retention.hours", I},
      {"log.retention.bytes", L}, {"log.retention.check.interval.ms", L}, {"log.flush.interval.messages", L},
      {"log.flush.interval.ms", L}, {"message.max.bytes", I}, {"socket.request.max.bytes", I},
      {"max.connections", I}, {"max.connections.per.ip", I}, {"max.connection.creation.rate", I}, {"offsets.commit.timeout.ms", I},
      {"min.insync.replicas", I}, {"offsets.topic.replication.factor", H}, {"offsets.topic.num.partitions", I},
      {"group.initial.rebalance.delay.ms", I}, {"group.min.session.timeout.ms", I},
      {"group.max.session.timeout.ms", I}, {"group.max.size", I}, {"offsets.retention.minutes", I},
      {"offsets.retention.check.interval.ms", L}, {"offset.metadata.max.bytes", I},
      {"group.consumer.session.timeout.ms", I}, {"group.consumer.heartbeat.interval.ms", I},
      {"group.consumer.max.size", I}, {"group.consumer.assignors", LIST},
      {"transaction.state.log.num.partitions", I}, {"transaction.state.log.replication.factor", H},
      {"transaction.state.log.min.isr", I}, {"transaction.max.timeout.ms", I}, {"transactional.id.expiration.ms", I},
      {"transaction.abort.timed.out.transaction.cleanup.interval.ms", I},
      {"transaction.remove.expired.transaction.cleanup.interval.ms", I}, {"request.timeout.ms", I},
      {"zookeeper.connect", S}, {"zookeeper.session.timeout.ms", I}, {"zookeeper.connection.timeout.ms", I},
      {"broker.rack", S}, {"replica.selector.class", S}, {"replica.lag.time.max.ms", L}, {"replica.fetch.wait.max.ms", I},
      {"replica.fetch.min.bytes", I}, {"replica.fetch.max.bytes", I}, {"replica.fetch.response.max.bytes", I},
      {"auto.leader.rebalance.enable", B}, {"leader.imbalance.check.interval.seconds", L},
      {"leader.imbalance.per.broker.percentage", I}, {"controlled.shutdown.enable", B},
      {"sluice.zookeeper.registration.retry.ms", L}, {"sluice.leader.imbalance.check.interval.ms", L},
      {"num.io.threads", I}, {"max.incremental.fetch.session.cache.slots", I}, {"num.network.threads", I}, {"sluice.log.level", S}, {"producer.id.expiration.ms", I},
      {"http.listeners", S}, {"http.max.connections", I}, {"http.max.request.bytes", I},
      {"http.request.timeout.ms", I}, {"sluice.test.faults.enable", B}, {"sluice.test.faults.seed", L},
      {"sluice.metrics.enable", B},
      {"log.message.timestamp.type", S}, {"log.cleanup.policy", LIST}, {"compression.type", S},
      {"log.flush.offset.checkpoint.interval.ms", I}, {"log.flush.scheduler.interval.ms", L},
      {"unclean.leader.election.enable", B}, {"log.preallocate", B}, {"log.index.size.max.bytes", I},
      {"log.roll.jitter.ms", L}, {"log.segment.delete.delay.ms", L}, {"log.cleaner.delete.retention.ms", L},
      {"offsets.topic.segment.bytes", I}, {"transaction.state.log.segment.bytes", I}, {"log.cleaner.enable", B}, {"log.cleaner.threads", I}, {"log.cleaner.dedupe.buffer.size", L},
      {"log.cleaner.io.buffer.size", I}, {"log.cleaner.io.buffer.load.factor", D},
      {"log.cleaner.io.max.bytes.per.second", D}, {"log.cleaner.backoff.ms", L},
      {"log.cleaner.min.cleanable.ratio", D}, {"log.cleaner.min.compaction.lag.ms", L},
      {"log.cleaner.max.compaction.lag.ms", L},
      {"listener.security.protocol.map", S}, {"inter.broker.listener.name", S}, {"security.inter.broker.protocol", S},
      {"ssl.keystore.type", S}, {"ssl.keystore.location", S}, {"ssl.keystore.password", P}, {"ssl.key.password", P},
      {"ssl.keystore.certificate.chain", P}, {"ssl.keystore.key", P}, {"ssl.truststore.type", S},
      {"ssl.truststore.location", S}, {"ssl.truststore.password", P}, {"ssl.truststore.certificates", P},
      {"ssl.client.auth", S}, {"ssl.enabled.protocols", LIST}, {"ssl.protocol", S}, {"ssl.cipher.suites", LIST},
      {"ssl.principal.mapping.rules", S}, {"ssl.endpoint.identification.algorithm", S},
      {"sasl.enabled.mechanisms", LIST}, {"sasl.mechanism.inter.broker.protocol", S}, {"sasl.jaas.config", P},
      {"sasl.server.max.receive.size", I}, {"connections.max.reauth.ms", L},
      {"connection.failed.authentication.delay.ms", I}, {"authorizer.class.name", S}, {"super.users", S},
      {"allow.everyone.if.no.acl.found", B}, {"sluice.acl.refresh.interval.ms", I}, {"quota.window.num", I},
      {"quota.window.size.seconds", I},
  };
  auto it = types.find(key);
  return it == types.end() ? S : it->second;
}

template <typename T>
result<T> parse_int(const std::map<std::string, std::string>& v, const std::string& key, int64_t min, int64_t max) {
  const std::string& text = v.at(key);
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return config_error("invalid value '" + text + "' for " + key + ": not an integer");
  if (n < min || n > max)
    return config_error("invalid value '" + text + "' for " + key + ": must be in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]");
  return static_cast<T>(n);
}

result<bool> parse_bool(const std::map<std::string, std::string>& v, const std::string& key) {
  const std::string& text = v.at(key);
  if (text == "true") return true;
  if (text == "false") return false;
  return config_error("invalid value '" + text + "' for " + key + ": expected true or false");
}

}  // namespace

result<std::vector<endpoint>> parse_listeners(const std::string& text) {
  std::vector<endpoint> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    auto scheme = item.find("://");
    if (scheme == std::string::npos) return config_error("listener '" + item + "' is not of the form NAME://host:port");
    endpoint ep;
    ep.listener_name = item.substr(0, scheme);
    std::string hostport = item.substr(scheme + 3);
    auto colon = hostport.rfind(':');
    if (colon == std::string::npos) return config_error("listener '" + item + "' has no port");
    ep.host = hostport.substr(0, colon);
    if (ep.host.size() >= 2 && ep.host.front() == '[' && ep.host.back() == ']') ep.host = ep.host.substr(1, ep.host.size() - 2);
    std::string port = hostport.substr(colon + 1);
    int p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535)
      return config_error("listener '" + item + "' has an invalid port");
    ep.port = static_cast<uint16_t>(p);
    if (ep.listener_name.empty()) return config_error("listener '" + item + "' has no name");
    for (char& ch : ep.listener_name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    for (const auto& other : out)
      if (other.listener_name == ep.listener_name)
        return config_error("listener '" + item + "': each listener must have a different name");
    out.push_back(std::move(ep));
  }
  return out;
}

result<std::vector<http_endpoint>> parse_http_listeners(const std::string& text) {
  std::vector<http_endpoint> out;
  // Entry by entry: Kafka's listener parser wants a different name per entry, and here every entry is HTTP.
  std::stringstream entries(text);
  for (std::string entry; std::getline(entries, entry, ',');) {
    auto one = parse_listeners(entry);
    if (!one) return error{one.err().code, "http.listeners: " + one.err().message};
    for (const auto& ep : *one) {
      if (ep.listener_name != "HTTP" && ep.listener_name != "HTTPS")
        return config_error("http.listeners: '" + ep.listener_name + "://" + ep.host + ":" + std::to_string(ep.port) +
                            "' must start with http:// or https://");
      out.push_back({ep.listener_name == "HTTPS", ep.host, ep.port});
    }
  }
  return out;
}

namespace {

bool properties_space(char c) { return c == ' ' || c == '\t' || c == '\f'; }

/// java.util.Properties.loadConvert: \uXXXX, \t \n \r \f, and a backslash before any other character
/// stands for that character. Empty when a \u escape is malformed (Java throws IllegalArgumentException).
std::optional<std::string> properties_unescape(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c != '\\' || i + 1 == in.size()) {
      out += c;
      continue;
    }
    c = in[++i];
    switch (c) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (in.size() - i - 1 < 4) return std::nullopt;
        uint32_t cp = 0;
        for (int k = 1; k <= 4; ++k) {
          char h = in[i + k];
          cp <<= 4;
          if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
          else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
          else return std::nullopt;
        }
        i += 4;
        // UTF-8 of the code unit (surrogates are written as they come, as three bytes each).
        if (cp < 0x80) {
          out += static_cast<char>(cp);
        } else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> config_from_environment(const char* const* environment) {
  std::map<std::string, std::string> kafka, sluice;
  for (auto* e = environment; e && *e; ++e) {
    const std::string_view var(*e);
    const auto eq = var.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = var.substr(0, eq);
    std::map<std::string, std::string>* into = nullptr;
    if (name.starts_with("KAFKA_CFG_")) {
      into = &kafka;
      name.remove_prefix(10);
    } else if (name.starts_with("SLUICE_CFG_")) {
      into = &sluice;
      name.remove_prefix(11);
    } else {
      continue;
    }
    if (name.empty()) continue;
    std::string key;
    for (size_t i = 0; i < name.size(); ++i) {
      const char c = name[i];
      if (c == '_' && i + 1 < name.size() && name[i + 1] == '_') {
        key.push_back('_');
        ++i;
      } else if (c == '_') {
        key.push_back('.');
      } else {
        key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    }
    (*into)[key] = std::string(var.substr(eq + 1));
  }
  for (auto& [k, v] : sluice) kafka[k] = std::move(v);
  return kafka;
}

result<std::map<std::string, std::string>> parse_properties(const std::string& text) {
  // java.util.Properties.load: natural lines end at \n, \r or \r\n; leading blanks are skipped; '#' or '!'
  // starts a comment line; an odd number of trailing backslashes continues the logical line on the next one
  // (its leading blanks skipped); the key ends at the first unescaped '=', ':' or blank; escapes are decoded.
  std::vector<std::string> lines;
  {
    std::string cur;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '\n' || c == '\r') {
        lines.push_back(std::move(cur));
        cur.clear();
        if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) lines.push_back(std::move(cur));
  }
  std::map<std::string, std::string> out;
  std::string logical;
  bool continuing = false;
  int first_line = 0;
  for (size_t n = 0; n < lines.size(); ++n) {
    std::string_view line = lines[n];
    size_t b = 0;
    while (b < line.size() && properties_space(line[b])) ++b;
    line.remove_prefix(b);
    if (!continuing) {
      if (line.empty() || line[0] == '#' || line[0] == '!') continue;
      first_line = static_cast<int>(n) + 1;
    }
    size_t slashes = 0;
    while (slashes < line.size() && line[line.size() - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 1) {
      logical.append(line.substr(0, line.size() - 1));
      continuing = true;
      if (n + 1 < lines.size()) continue;
    } else {
      logical.append(line);
    }
    continuing = false;
    size_t k = 0;
    bool escaped = false;
    for (; k < logical.size(); ++k) {
      char c = logical[k];
      if (escaped) { escaped = false; continue; }
      if (c == '\\') { escaped = true; continue; }
      if (c == '=' || c == ':' || properties_space(c)) break;
    }
    size_t v = k;
    while (v < logical.size() && properties_space(logical[v])) ++v;
    if (v < logical.size() && (logical[v] == '=' || logical[v] == ':')) ++v;
    while (v < logical.size() && properties_space(logical[v])) ++v;
    auto key = properties_unescape(std::string_view(logical).substr(0, k));
    auto value = properties_unescape(std::string_view(logical).substr(v));
    if (!key || !value) return config_error("line " + std::to_string(first_line) + ": malformed \\uxxxx escape");
    if (key->empty()) return config_error("line " + std::to_string(first_line) + ": no key");
    out[*key] = trim(*value);  // Kafka's ConfigDef trims values before parsing them
    logical.clear();
  }
  return out;
}

result<broker_config> make_config(const std::map<std::string, std::string>& file_values,
                                  const std::vector<std::pair<std::string, std::string>>& overrides) {
  broker_config c;
  std::map<std::string, std::string> v = defaults();
  auto apply = [&](const std::string& k, const std::string& val) {
    if (k.starts_with("listener.name.")) {  // per-listener overrides (Kafka's ListenerName.configPrefix)
      c.listener_values[k] = val;
      return;
    }
    if (!v.contains(k)) {
      if (std::find(c.unknown_keys.begin(), c.unknown_keys.end(), k) == c.unknown_keys.end()) c.unknown_keys.push_back(k);
      return;
    }
    v[k] = val;
    c.explicit_keys.insert(k);
  };
  for (const auto& [k, val] : file_values) apply(k, val);
  for (const auto& [k, val] : overrides) apply(k, val);

#define SLUICE_INT(field, key, T, lo, hi)                  \
  if (auto r = parse_int<T>(v, key, lo, hi); r) c.field = *r; \
  else return r.err();
#define SLUICE_BOOL(field, key)                            \
  if (auto r = parse_bool(v, key); r) c.field = *r;         \
  else return r.err();

  SLUICE_INT(broker_id, "broker.id", int32_t, 0, INT32_MAX);
  SLUICE_INT(num_partitions, "num.partitions", int32_t, 1, INT32_MAX);
  SLUICE_INT(default_replication_factor, "default.replication.factor", int16_t, 1, INT16_MAX);
  SLUICE_BOOL(auto_create_topics_enable, "auto.create.topics.enable");
  SLUICE_BOOL(delete_topic_enable, "delete.topic.enable");
  SLUICE_INT(log_segment_bytes, "log.segment.bytes", int64_t, 1048576, INT32_MAX);  // 1 MiB since Kafka 4.0 (KIP-1030)
  SLUICE_INT(log_index_interval_bytes, "log.index.interval.bytes", int32_t, 0, INT32_MAX);
  SLUICE_INT(log_retention_bytes, "log.retention.bytes", int64_t, -1, INT64_MAX);
  SLUICE_INT(log_retention_check_interval_ms, "log.retention.check.interval.ms", int64_t, 1, INT64_MAX);
  SLUICE_INT(log_flush_interval_messages, "log.flush.interval.messages", int64_t, 1, INT64_MAX);
  SLUICE_INT(message_max_bytes, "message.max.bytes", int32_t, 0, INT32_MAX);
  SLUICE_INT(socket_request_max_bytes, "socket.request.max.bytes", int32_t, 1, INT32_MAX);
  SLUICE_INT(min_insync_replicas, "min.insync.replicas", int32_t, 1, INT32_MAX);
  SLUICE_INT(offsets_topic_replication_factor, "offsets.topic.replication.factor", int16_t, 1, INT16_MAX);
  SLUICE_INT(offsets_topic_num_partitions, "offsets.topic.num.partitions", int32_t, 1, INT32_MAX);
  SLUICE_INT(group_initial_rebalance_delay_ms, "group.initial.rebalance.delay.ms", int32_t, 0, INT32_MAX);
  SLUICE_INT(num_io_threads, "num.io.threads", int32_t, 0, 256);
  SLUICE_INT(max_incremental_fetch_session_cache_slots, "max.incremental.fetch.session.cache.slots", int32_t, 0,
             INT32_MAX);
  // Coordinator keys: read by broker/group_service.cc and broker/txn_service.cc from `values`; validated here as
  // Kafka does.
  {
    struct group_key { const char* key; int64_t lo, hi; };
    for (const group_key& k : {group_key{"group.min.session.timeout.ms", 0, INT32_MAX},
                               group_key{"group.max.session.timeout.ms", 0, INT32_MAX},
                               group_key{"group.max.size", 1, INT32_MAX},
                               group_key{"offsets.retention.minutes", 1, INT32_MAX},
                               group_key{"offsets.retention.check.interval.ms", 1, INT64_MAX},
                               group_key{"offset.metadata.max.bytes", 0, INT32_MAX},
                               group_key{"group.consumer.session.timeout.ms", 1, INT32_MAX},
                               group_key{"group.consumer.heartbeat.interval.ms", 1, INT32_MAX},
                               group_key{"group.consumer.max.size", 1, INT32_MAX},
                               // Transaction coordinator keys (broker/txn_service.cc), Kafka's ranges.
                               group_key{"transaction.state.log.num.partitions", 1, INT32_MAX},
                               group_key{"transaction.state.log.replication.factor", 1, INT16_MAX},
                               group_key{"transaction.state.log.min.isr", 1, INT32_MAX},
                               group_key{"transaction.max.timeout.ms", 1, INT32_MAX},
                               group_key{"transactional.id.expiration.ms", 1, INT32_MAX},
                               group_key{"transaction.abort.timed.out.transaction.cleanup.interval.ms", 1, INT32_MAX},
                               group_key{"transaction.remove.expired.transaction.cleanup.interval.ms", 1, INT32_MAX},
                               group_key{"request.timeout.ms", 0, INT32_MAX}}) {
      if (auto r = parse_int<int64_t>(v, k.key, k.lo, k.hi); !r) return r.err();
    }
  }

  if (!v["log.flush.interval.ms"].empty()) {
    SLUICE_INT(log_flush_interval_ms, "log.flush.interval.ms", int64_t, 0, INT64_MAX);
  }
  // Kafka's precedence: the .ms key over .minutes over .hours.
  if (!v["log.retention.ms"].empty()) {
    SLUICE_INT(log_retention_ms, "log.retention.ms", int64_t, -1, INT64_MAX);
  } else if (!v["log.retention.minutes"].empty()) {
    SLUICE_INT(log_retention_ms, "log.retention.minutes", int64_t, -1, INT64_MAX / 60000);
    if (c.log_retention_ms > 0) c.log_retention_ms *= 60000;
  } else {
    SLUICE_INT(log_retention_ms, "log.retention.hours", int64_t, -1, INT64_MAX / 3600000);
    if (c.log_retention_ms > 0) c.log_retention_ms *= 3600000;
  }
  if (!v["log.roll.ms"].empty()) {
    SLUICE_INT(log_roll_ms, "log.roll.ms", int64_t, 1, INT64_MAX);
  } else {
    SLUICE_INT(log_roll_ms, "log.roll.hours", int64_t, 1, INT64_MAX / 3600000);
    c.log_roll_ms *= 3600000;
  }
  // --- idempotent producers (KIP-98) ---
  SLUICE_INT(producer_id_expiration_ms, "producer.id.expiration.ms", int64_t, 1, INT64_MAX);
  // --- the HTTP side (issue #18) ---
  SLUICE_INT(http_max_connections, "http.max.connections", int32_t, 1, INT32_MAX);
  SLUICE_INT(http_max_request_bytes, "http.max.request.bytes", int32_t, 1024, INT32_MAX);
  SLUICE_INT(http_request_timeout_ms, "http.request.timeout.ms", int32_t, 1, INT32_MAX);
  SLUICE_BOOL(test_faults_enable, "sluice.test.faults.enable");
  SLUICE_BOOL(metrics_enable, "sluice.metrics.enable");
  SLUICE_INT(test_faults_seed, "sluice.test.faults.seed", uint64_t, 0, INT64_MAX);
  {
    auto parsed = parse_http_listeners(v["http.listeners"]);
    if (!parsed) return parsed.err();
    c.http_listeners = std::move(*parsed);
  }
#define SLUICE_CHECK_INT(key, lo) \
  if (auto r = parse_int<int64_t>(v, key, lo, INT64_MAX); !r) return r.err();
  SLUICE_CHECK_INT("log.flush.offset.checkpoint.interval.ms", 1);
  SLUICE_BOOL(allow_everyone_if_no_acl_found, "allow.everyone.if.no.acl.found");
  SLUICE_INT(acl_refresh_interval_ms, "sluice.acl.refresh.interval.ms", int32_t, 10, INT32_MAX);
  SLUICE_INT(quota_window_num, "quota.window.num", int32_t, 1, INT32_MAX);
  SLUICE_INT(quota_window_size_seconds, "quota.window.size.seconds", int32_t, 1, INT32_MAX);
  {
    // Kafka's two built-in authorizers (ZooKeeper and KRaft); both mean the ACL authorizer here.
    const std::string& a = v["authorizer.class.name"];
    if (!a.empty() && a != "kafka.security.authorizer.AclAuthorizer" &&
        a != "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
      return config_error("invalid value '" + a +
                          "' for authorizer.class.name: expected kafka.security.authorizer.AclAuthorizer or "
                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or empty: no authorization)");
    c.authorizer_enabled = !a.empty();
  }
  {
    // KIP-392: Kafka's one built-in selector; Kafka refuses to start on a class it cannot load.
    const std::string r = trim(v["replica.selector.class"]);  // Kafka trims a class name
    if (!r.empty() && r != rack_aware_replica_selector)
      return config_error("invalid value '" + r + "' for replica.selector.class: expected " +
                          std::string(rack_aware_replica_selector) + " (or empty: consumers read from the leader)");
    c.rack_aware_replica_selector = !r.empty();
  }
#undef SLUICE_INT
#undef SLUICE_BOOL

  auto listeners = parse_listeners(v["listeners"]);
  if (!listeners) return config_error("invalid value for listeners: " + listeners.err().message);
  if (listeners->empty()) return config_error("listeners must name at least one endpoint");
  c.listeners = *listeners;
  if (v["advertised.listeners"].empty()) {
    c.advertised_listeners = c.listeners;
  } else {
    auto adv = parse_listeners(v["advertised.listeners"]);
    if (!adv) return config_error("invalid value for advertised.listeners: " + adv.err().message);
    c.advertised_listeners = *adv;
  }
  for (auto& ep : c.advertised_listeners)
    if (ep.host.empty() || ep.host == "0.0.0.0" || ep.host == "::") ep.host = "localhost";
  for (const auto& ep : c.advertised_listeners) {
    if (std::none_of(c.listeners.begin(), c.listeners.end(), [&](const endpoint& l) { return l.listener_name == ep.listener_name; }))
      return config_error("advertised.listeners names " + ep.listener_name + ", which is not one of listeners");
  }
  // Every listener needs a security protocol (Kafka: "No security protocol defined for listener X").
  for (const auto& ep : c.listeners) {
    const std::string protocol = security_protocol_of(v, ep.listener_name);
    if (protocol.empty())
      return config_error("no security protocol defined for listener " + ep.listener_name +
                          " (listener.security.protocol.map)");
    if (protocol != "PLAINTEXT" && protocol != "SSL" && protocol != "SASL_PLAINTEXT" && protocol != "SASL_SSL")
      return config_error("listener " + ep.listener_name + ": unknown security protocol " + protocol +
                          " (expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)");
  }
  {
    // Kafka: inter.broker.listener.name and security.inter.broker.protocol are exclusive; the listener must exist.
    const bool named = c.explicit_keys.contains("inter.broker.listener.name") && !v["inter.broker.listener.name"].empty();
    if (named && c.explicit_keys.contains("security.inter.broker.protocol"))
      return config_error("only one of inter.broker.listener.name and security.inter.broker.protocol should be set");
    std::string name = named ? v["inter.broker.listener.name"] : v["security.inter.broker.protocol"];
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const bool found = std::any_of(c.listeners.begin(), c.listeners.end(), [&](const endpoint& l) { return l.listener_name == name; });
    if (found) {
      c.inter_broker_listener_name = name;
    } else if (named || c.explicit_keys.contains("security.inter.broker.protocol")) {
      return config_error("inter.broker.listener.name " + name + " must be one of listeners");
    } else {
      c.inter_broker_listener_name = c.listeners.front().listener_name;  // a single SSL listener, say
    }
  }

  std::string dirs = v["log.dirs"].empty() ? v["log.dir"] : v["log.dirs"];
  std::stringstream ds(dirs);
  std::string d;
  while (std::getline(ds, d, ','))
    if (!trim(d).empty()) c.log_dirs.emplace_back(trim(d));
  if (c.log_dirs.empty()) return config_error("log.dirs must name at least one directory");

  if (v["log.message.timestamp.type"] != "CreateTime" && v["log.message.timestamp.type"] != "LogAppendTime")
    return config_error("invalid value '" + v["log.message.timestamp.type"] +
                        "' for log.message.timestamp.type: expected CreateTime or LogAppendTime");
  c.zookeeper_connect = v["zookeeper.connect"];
  c.log_level = v["sluice.log.level"];
#undef SLUICE_CHECK_INT
  static const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::find(std::begin(levels), std::end(levels), c.log_level) == std::end(levels))
    return config_error("invalid value '" + c.log_level + "' for sluice.log.level: expected trace, debug, info, warn, error or off");
  c.values = std::move(v);
  return c;
}

std::optional<std::string> broker_config_default(const std::string& key) {
  auto it = defaults().find(key);
  if (it == defaults().end()) return std::nullopt;
  return it->second;
}

int8_t broker_config_type(const std::string& key) {
  const int8_t t = type_of(key);
  return t == 8 ? 9 : t;  // KIP-569 numbers PASSWORD 9 (CLASS 8)
}

bool broker_config_sensitive(const std::string& key) { return type_of(key) == 8; }

std::string listener_config(const broker_config& config, const std::string& listener, const std::string& key) {
  std::string lower = listener;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (auto it = config.listener_values.find("listener.name." + lower + "." + key); it != config.listener_values.end())
    return it->second;
  if (auto it = config.values.find(key); it != config.values.end()) return it->second;
  return {};
}

bool listener_config_set(const broker_config& config, const std::string& listener, const std::string& key) {
  std::string lower = listener;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return config.listener_values.contains("listener.name." + lower + "." + key) || config.explicit_keys.contains(key);
}

const endpoint* advertised_endpoint(const broker_config& config, const std::string& listener) {
  for (const auto& ep : config.advertised_listeners)
    if (ep.listener_name == listener) return &ep;
  return nullptr;
}

int64_t config_long(const broker_config& config, const std::string& key, int64_t fallback) {
  auto it = config.values.find(key);
  if (it == config.values.end() || it->second.empty()) return fallback;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return fallback;
  }
}

}  // namespace sluice::broker
