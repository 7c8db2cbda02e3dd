#include "coordination/zk/znodes.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <climits>

namespace sluice::coordination::zk {
namespace json = boost::json;
namespace {

error malformed(const std::string& what, const std::string& data) {
  std::string shown = data.size() > 200 ? data.substr(0, 200) + "..." : data;
  return error{zk_errc::malformed, what + ": " + shown};
}

// Parses `data` as a JSON object; nullptr when it is not one.
bool parse_object(const std::string& data, json::object& out) {
  boost::system::error_code ec;
  auto v = json::parse(data, ec);
  if (ec || !v.is_object()) return false;
  out = std::move(v.as_object());
  return true;
}

bool get_int(const json::object& o, std::string_view key, int64_t& out, int64_t lo = INT32_MIN,
             int64_t hi = INT32_MAX) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return false;
  if (v->is_int64()) out = v->as_int64();
  else if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) out = static_cast<int64_t>(v->as_uint64());
  else return false;
  return out >= lo && out <= hi;
}

bool get_string(const json::object& o, std::string_view key, std::string& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return false;
  out = std::string(v->as_string());
  return true;
}

bool parse_i64(std::string_view text, int64_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

bool get_int_list(const json::value& v, std::vector<int32_t>& out) {
  if (!v.is_array()) return false;
  for (const auto& e : v.as_array()) {
    if (!e.is_int64() || e.as_int64() < INT32_MIN || e.as_int64() > INT32_MAX) return false;
    out.push_back(static_cast<int32_t>(e.as_int64()));
  }
  return true;
}

json::array to_array(const std::vector<int32_t>& ids) {
  json::array a;
  for (int32_t b : ids) a.push_back(b);
  return a;
}

std::string endpoint(const listener_endpoint& e) {
  bool v6 = e.host.find(':') != std::string::npos;
  return e.listener_name + "://" + (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

// "NAME://host:port" or "NAME://[v6]:port".
bool parse_endpoint(const std::string& text, listener_endpoint& b) {
  auto sep = text.find("://");
  if (sep == std::string::npos || sep == 0) return false;
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon < sep + 3) return false;
  std::string host = text.substr(sep + 3, colon - sep - 3);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int64_t port = 0;
  if (!parse_i64(std::string_view(text).substr(colon + 1), port) || port < 0 || port > 65535) return false;
  b.listener_name = text.substr(0, sep);
  b.host = host;
  b.port = static_cast<int32_t>(port);
  return true;
}

}  // namespace

std::string broker_znode::encode(const broker_registration& b, int64_t timestamp_ms) {
  json::object o;
  o["features"] = json::object{};
  std::vector<listener_endpoint> all = b.endpoints;
  if (all.empty()) all.push_back({b.listener_name, b.host, b.port, "PLAINTEXT"});
  json::object protocols;
  json::array endpoints;
  for (const auto& e : all) {
    protocols[e.listener_name] = e.security_protocol;
    endpoints.push_back(json::value(endpoint(e)));
  }
  o["listener_security_protocol_map"] = std::move(protocols);
  o["endpoints"] = std::move(endpoints);
  o["jmx_port"] = -1;
  // Kafka's host/port: the PLAINTEXT endpoint's, else null/-1.
  const auto plain = std::find_if(all.begin(), all.end(), [](const listener_endpoint& e) { return e.security_protocol == "PLAINTEXT"; });
  o["port"] = plain != all.end() ? plain->port : -1;
  if (plain != all.end()) o["host"] = plain->host;
  else o["host"] = nullptr;
  o["version"] = 5;
  o["timestamp"] = std::to_string(timestamp_ms);
  if (b.rack) o["rack"] = *b.rack;
  return json::serialize(o);
}

result<broker_registration> broker_znode::decode(int32_t id, const std::string& data) {
  json::object o;
  if (!parse_object(data, o)) return malformed("broker " + std::to_string(id) + " registration is not JSON", data);
  int64_t version = 0;
  if (!get_int(o, "version", version) || version < 1)
    return malformed("broker " + std::to_string(id) + " registration has no valid version", data);
  broker_registration b;
  b.id = id;
  const auto* endpoints = o.if_contains("endpoints");
  if (version >= 2 && endpoints != nullptr && endpoints->is_array() && !endpoints->as_array().empty()) {
    const auto* protocols = o.if_contains("listener_security_protocol_map");
    for (const auto& item : endpoints->as_array()) {
      listener_endpoint e;
      if (!item.is_string() || !parse_endpoint(std::string(item.as_string()), e))
        return malformed("broker " + std::to_string(id) + " has a bad endpoint", data);
      if (protocols != nullptr && protocols->is_object())
        if (const auto* p = protocols->as_object().if_contains(e.listener_name); p != nullptr && p->is_string())
          e.security_protocol = std::string(p->as_string());
      b.endpoints.push_back(std::move(e));
    }
    b.listener_name = b.endpoints.front().listener_name;
    b.host = b.endpoints.front().host;
    b.port = b.endpoints.front().port;
  } else {
    int64_t port = 0;
    if (!get_string(o, "host", b.host) || !get_int(o, "port", port, 0, 65535))
      return malformed("broker " + std::to_string(id) + " registration has no endpoint", data);
    b.port = static_cast<int32_t>(port);
  }
  if (const auto* rack = o.if_contains("rack"); rack != nullptr && !rack->is_null()) {
    if (!rack->is_string()) return malformed("broker " + std::to_string(id) + " has a bad rack", data);
    b.rack = std::string(rack->as_string());
  }
  return b;
}

std::string controller_znode::encode(int32_t broker_id, int64_t timestamp_ms) {
  return json::serialize(json::object{{"version", 2},
                                      {"brokerid", broker_id},
                                      {"timestamp", std::to_string(timestamp_ms)},
                                      {"kraftControllerEpoch", -1}});
}

result<int32_t> controller_znode::decode(const std::string& data) {
  json::object o;
  int64_t id = 0;
  if (!parse_object(data, o) || !get_int(o, "brokerid", id)) return malformed("bad /controller", data);
  return static_cast<int32_t>(id);
}

result<int32_t> controller_epoch_znode::decode(const std::string& data) {
  int64_t epoch = 0;
  if (!parse_i64(data, epoch) || epoch < 0 || epoch > INT32_MAX) return malformed("bad /controller_epoch", data);
  return static_cast<int32_t>(epoch);
}

std::string topic_znode::encode(const topic_assignment& t) {
  json::object partitions;
  for (size_t p = 0; p < t.replicas.size(); ++p) partitions[std::to_string(p)] = to_array(t.replicas[p]);
  auto by_partition = [](const std::map<int32_t, std::vector<int32_t>>& m) {
    json::object out;
    for (const auto& [p, ids] : m)
      if (!ids.empty()) out[std::to_string(p)] = to_array(ids);
    return out;
  };
  json::object o{{"partitions", std::move(partitions)},
                 {"adding_replicas", by_partition(t.adding_replicas)},
                 {"removing_replicas", by_partition(t.removing_replicas)},
                 {"version", 3}};
  if (t.id != topic_id{}) o["topic_id"] = to_base64(t.id);
  return json::serialize(o);
}

result<topic_assignment> topic_znode::decode(const std::string& topic, const std::string& data) {
  json::object o;
  if (!parse_object(data, o)) return malformed("topic " + topic + " assignment is not JSON", data);
  const auto* parts = o.if_contains("partitions");
  if (parts == nullptr || !parts->is_object()) return malformed("topic " + topic + " has no partitions", data);
  topic_assignment t;
  t.name = topic;
  const auto& map = parts->as_object();
  t.replicas.resize(map.size());
  std::vector<bool> seen(map.size(), false);
  for (const auto& [key, replicas] : map) {
    int64_t p = -1;
    if (!parse_i64(key, p) || p < 0 || p >= static_cast<int64_t>(map.size()) || seen[static_cast<size_t>(p)])
      return malformed("topic " + topic + " has partitions not numbered 0..n-1", data);
    seen[static_cast<size_t>(p)] = true;
    if (!get_int_list(replicas, t.replicas[static_cast<size_t>(p)]))
      return malformed("topic " + topic + " has a bad replica list", data);
  }
  if (const auto* id = o.if_contains("topic_id"); id != nullptr && !id->is_null()) {
    std::optional<topic_id> parsed;
    if (id->is_string()) parsed = topic_id_from_base64(std::string(id->as_string()));
    if (!parsed) return malformed("topic " + topic + " has a bad topic_id", data);
    t.id = *parsed;
  }
  // KIP-455 reassignment state (version 2+); absent or null in older znodes.
  for (auto [key, out] : {std::pair<const char*, std::map<int32_t, std::vector<int32_t>>*>{"adding_replicas", &t.adding_replicas},
                          {"removing_replicas", &t.removing_replicas}}) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_object()) return malformed("topic " + topic + " has a bad " + key, data);
    for (const auto& [pk, ids] : v->as_object()) {
      int64_t p = -1;
      std::vector<int32_t> list;
      if (!parse_i64(pk, p) || p < 0 || p >= t.partition_count() || !get_int_list(ids, list))
        return malformed("topic " + topic + " has a bad " + key, data);
      if (!list.empty()) (*out)[static_cast<int32_t>(p)] = std::move(list);
    }
  }
  return t;
}

std::string partition_state_znode::encode(const partition_state& s) {
  return json::serialize(json::object{{"controller_epoch", s.controller_epoch},
                                      {"leader", s.leader},
                                      {"version", 1},
                                      {"leader_epoch", s.leader_epoch},
                                      {"isr", to_array(s.isr)}});
}

result<partition_state> partition_state_znode::decode(const std::string& data, int32_t zk_version) {
  json::object o;
  if (!parse_object(data, o)) return malformed("partition state is not JSON", data);
  partition_state s;
  int64_t leader = 0, epoch = 0, controller_epoch = 0;
  const auto* isr = o.if_contains("isr");
  if (!get_int(o, "leader", leader) || !get_int(o, "leader_epoch", epoch) ||
      !get_int(o, "controller_epoch", controller_epoch) || isr == nullptr || !get_int_list(*isr, s.isr))
    return malformed("partition state lacks leader, leader_epoch, controller_epoch or isr", data);
  s.leader = static_cast<int32_t>(leader);
  s.leader_epoch = static_cast<int32_t>(epoch);
  s.controller_epoch = static_cast<int32_t>(controller_epoch);
  s.version = zk_version;
  return s;
}

std::string topic_config_znode::encode(const std::map<std::string, std::string>& configs) {
  json::object c;
  for (const auto& [k, v] : configs) c[k] = v;
  return json::serialize(json::object{{"version", 1}, {"config", std::move(c)}});
}

result<std::map<std::string, std::string>> topic_config_znode::decode(const std::string& data) {
  std::map<std::string, std::string> out;
  if (data.empty()) return out;  // Kafka reads a null config znode as no overrides
  json::object o;
  if (!parse_object(data, o)) return malformed("topic config is not JSON", data);
  const auto* c = o.if_contains("config");
  if (c == nullptr) return out;
  if (!c->is_object()) return malformed("topic config has a bad \"config\"", data);
  for (const auto& [k, v] : c->as_object()) {
    if (!v.is_string()) return malformed("topic config value of " + std::string(k) + " is not a string", data);
    out[std::string(k)] = std::string(v.as_string());
  }
  return out;
}

std::string cluster_id_znode::encode(const std::string& id) {
  return json::serialize(json::object{{"version", "1"}, {"id", id}});
}

result<std::string> cluster_id_znode::decode(const std::string& data) {
  json::object o;
  std::string id;
  if (!parse_object(data, o) || !get_string(o, "id", id) || id.empty()) return malformed("bad /cluster/id", data);
  return id;
}

std::string producer_id_block_znode::encode(const producer_id_block& b) {
  return json::serialize(json::object{{"version", 1},
                                      {"broker", b.broker_id},
                                      {"block_start", std::to_string(b.first)},
                                      {"block_end", std::to_string(b.last)}});
}

result<producer_id_block> producer_id_block_znode::decode(const std::string& data) {
  json::object o;
  int64_t broker = 0;
  std::string start, end;
  producer_id_block b;
  if (!parse_object(data, o) || !get_int(o, "broker", broker) || !get_string(o, "block_start", start) ||
      !get_string(o, "block_end", end) || !parse_i64(start, b.first) || !parse_i64(end, b.last) || b.first < 0 ||
      b.last < b.first)
    return malformed("bad /latest_producer_id_block", data);
  b.broker_id = static_cast<int32_t>(broker);
  return b;
}

std::string controlled_shutdown_znode::encode(const value& v) {
  json::object o{{"version", 1}, {"broker", v.broker}, {"timestamp", std::to_string(v.timestamp_ms)}};
  if (v.remaining_leaders >= 0) o["remaining_leaders"] = v.remaining_leaders;
  return json::serialize(o);
}

result<controlled_shutdown_znode::value> controlled_shutdown_znode::decode(const std::string& data) {
  json::object o;
  int64_t broker = 0, remaining = -1;
  std::string ts;
  value v;
  if (!parse_object(data, o) || !get_int(o, "broker", broker)) return malformed("bad controlled shutdown", data);
  v.broker = static_cast<int32_t>(broker);
  if (get_string(o, "timestamp", ts)) parse_i64(ts, v.timestamp_ms);
  if (o.contains("remaining_leaders")) {
    if (!get_int(o, "remaining_leaders", remaining, 0)) return malformed("bad remaining_leaders", data);
    v.remaining_leaders = static_cast<int32_t>(remaining);
  }
  return v;
}

std::string preferred_replica_election_znode::encode(const partitions& ps) {
  json::array list;
  for (const auto& [topic, partition] : ps) list.push_back(json::object{{"topic", topic}, {"partition", partition}});
  return json::serialize(json::object{{"version", 1}, {"partitions", std::move(list)}});
}

result<preferred_replica_election_znode::partitions> preferred_replica_election_znode::decode(const std::string& data) {
  json::object o;
  if (!parse_object(data, o)) return malformed("preferred replica election is not JSON", data);
  const auto* list = o.if_contains("partitions");
  if (list == nullptr || !list->is_array()) return malformed("preferred replica election has no partitions", data);
  partitions out;
  for (const auto& e : list->as_array()) {
    std::string topic;
    int64_t partition = -1;
    if (!e.is_object() || !get_string(e.as_object(), "topic", topic) || topic.empty() ||
        !get_int(e.as_object(), "partition", partition, 0))
      return malformed("bad partition in preferred replica election", data);
    out.insert({std::move(topic), static_cast<int32_t>(partition)});
  }
  return out;
}

}  // namespace sluice::coordination::zk
