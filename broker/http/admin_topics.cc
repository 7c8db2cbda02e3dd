// /v1/topics: list, create, describe, delete, configs, add partitions (broker/http/README.md, openapi.yaml). Each
// change runs the broker's Kafka handler for it (CreateTopics, DeleteTopics, IncrementalAlterConfigs,
// CreatePartitions), so it validates and fails as that request does. One test control (issue #18): moving a
// partition's leader in cluster mode, through the coordination layer (a preferred replica election).
#include <charconv>

#include "broker/fault_injection.h"
#include "broker/handlers/handlers.h"
#include "broker/http/admin_kafka.h"
#include "broker/partition.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"
#include "coordination/cluster_view.h"

namespace sluice::broker::http {

using beast_http::verb;
using protocol::error_code;
namespace asio = boost::asio;

namespace {

// ConfigResource.Type TOPIC; ConfigSource names by their number (Kafka's DescribeConfigsResponse.ConfigSource).
constexpr int8_t kTopicResource = 2;
std::string_view config_source_name(int8_t s) {
  static constexpr std::string_view names[] = {"UNKNOWN",
                                               "DYNAMIC_TOPIC_CONFIG",
                                               "DYNAMIC_BROKER_CONFIG",
                                               "DYNAMIC_DEFAULT_BROKER_CONFIG",
                                               "STATIC_BROKER_CONFIG",
                                               "DEFAULT_CONFIG",
                                               "DYNAMIC_BROKER_LOGGER_CONFIG",
                                               "CLIENT_METRICS_CONFIG",
                                               "GROUP_CONFIG"};
  return s >= 0 && s < static_cast<int8_t>(std::size(names)) ? names[s] : "UNKNOWN";
}

json::array int_array(const std::vector<int32_t>& v) {
  json::array a;
  for (int32_t x : v) a.push_back(x);
  return a;
}

/// A JSON value that is an integer (or a double holding one) within [lo, hi].
std::optional<int64_t> int_in(const json::value& v, int64_t lo, int64_t hi) {
  int64_t x;
  if (v.is_int64()) x = v.as_int64();
  else if (v.is_uint64() && v.as_uint64() <= static_cast<uint64_t>(INT64_MAX)) x = static_cast<int64_t>(v.as_uint64());
  else return std::nullopt;
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

/// A config value from JSON: strings as they are; numbers and booleans as their text (a double in its shortest
/// plain form: 0.25, not 2.5E-1).
std::optional<std::string> config_text(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_double()) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.as_double(), std::chars_format::fixed);
    if (ec != std::errc{}) return std::nullopt;
    std::string text(buf, end);
    if (text.find('.') != std::string::npos) {
      while (text.back() == '0') text.pop_back();
      if (text.back() == '.') text.pop_back();
    }
    return text;
  }
  if (v.is_int64() || v.is_uint64() || v.is_bool()) return json::serialize(v);
  return std::nullopt;
}

asio::awaitable<std::optional<protocol::describe_configs_response::describe_configs_result>> describe_configs(
    kafka_caller& kc, const std::string& topic) {
  protocol::describe_configs_request req;
  req.resources.push_back({});
  req.resources.back().resource_type = kTopicResource;
  req.resources.back().resource_name = topic;
  req.resources.back().configuration_keys = std::nullopt;
  req.include_documentation = false;
  auto op = kc.call(&handlers::describe_configs, req, 4);
  auto resp = co_await std::move(op);
  if (resp.results.empty()) co_return std::nullopt;
  co_return resp.results.front();
}

json::object configs_json(const protocol::describe_configs_response::describe_configs_result& r) {
  json::object configs;
  for (const auto& c : r.configs) {
    json::object o{{"value", c.value ? json::value(*c.value) : json::value(nullptr)},
                   {"source", config_source_name(c.config_source)},
                   {"read_only", c.read_only},
                   {"sensitive", c.is_sensitive}};
    configs[c.name] = std::move(o);
  }
  return configs;
}

asio::awaitable<reply> configs_reply(kafka_caller& kc, const std::string& topic) {
  auto op = describe_configs(kc, topic);
  auto r = co_await std::move(op);
  if (!r) co_return kafka_error_reply(error_code::unknown_server_error, "DescribeConfigs gave no result");
  if (r->error_code != error_code::none) co_return kafka_error_reply(r->error_code, r->error_message.value_or(""));
  co_return json_reply(200, json::object{{"name", topic}, {"configs", configs_json(*r)}});
}

/// Metadata for every topic: what a client may describe (an authorizer leaves out the others, as Kafka does).
asio::awaitable<reply> list_topics(kafka_caller& kc) {
  protocol::metadata_request mr;
  mr.topics = std::nullopt;
  mr.allow_auto_topic_creation = false;
  auto op = kc.call(&handlers::metadata, mr, 12);
  auto meta = co_await std::move(op);
  std::sort(meta.topics.begin(), meta.topics.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  json::array topics;
  for (const auto& t : meta.topics) {
    if (t.error_code != error_code::none || !t.name) continue;
    size_t rf = 0;
    for (const auto& p : t.partitions) rf = std::max(rf, p.replica_nodes.size());
    topics.push_back(json::object{{"name", *t.name},
                                  {"partitions", t.partitions.size()},
                                  {"replication_factor", rf},
                                  {"internal", t.is_internal}});
  }
  co_return json_reply(200, json::object{{"topics", topics}});
}

asio::awaitable<reply> create_topic(kafka_caller& kc, const request& req) {
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  protocol::create_topics_request ct;
  ct.timeout_ms = 30000;
  auto& t = ct.topics.emplace_back();
  t.num_partitions = -1;  // the broker's num.partitions
  t.replication_factor = -1;  // default.replication.factor
  for (const auto& [k, v] : *body) {
    if (k == "name") {
      if (!v.is_string()) co_return error_reply(400, "INVALID_REQUEST", "\"name\" must be a string");
      t.name = std::string(v.as_string());
    } else if (k == "partitions") {
      auto n = int_in(v, -1, INT32_MAX);
      if (!n) co_return error_reply(400, "INVALID_REQUEST", "\"partitions\" must be an integer (-1: the broker default)");
      t.num_partitions = static_cast<int32_t>(*n);
    } else if (k == "replication_factor") {
      auto n = int_in(v, -1, INT16_MAX);
      if (!n) co_return error_reply(400, "INVALID_REQUEST", "\"replication_factor\" must be an integer (-1: the broker default)");
      t.replication_factor = static_cast<int16_t>(*n);
    } else if (k == "configs") {
      if (!v.is_object()) co_return error_reply(400, "INVALID_REQUEST", "\"configs\" must be an object of config names to values");
      for (const auto& [ck, cv] : v.as_object()) {
        auto text = config_text(cv);
        if (!text && !cv.is_null()) co_return error_reply(400, "INVALID_REQUEST", "config " + std::string(ck) + ": a string value");
        t.configs.push_back({std::string(ck), text});
      }
    } else if (k == "validate_only") {
      if (!v.is_bool()) co_return error_reply(400, "INVALID_REQUEST", "\"validate_only\" must be true or false");
      ct.validate_only = v.as_bool();
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k));
    }
  }
  if (t.name.empty()) co_return error_reply(400, "INVALID_REQUEST", "\"name\" is required");
  auto op = kc.call(&handlers::create_topics, ct, 7);
  auto resp = co_await std::move(op);
  if (resp.topics.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "CreateTopics gave no result");
  const auto& r = resp.topics.front();
  if (r.error_code != error_code::none) co_return kafka_error_reply(r.error_code, r.error_message.value_or(""));
  co_return json_reply(ct.validate_only ? 200 : 201, json::object{{"name", r.name},
                                                                   {"topic_id", r.topic_id.to_string()},
                                                                   {"partitions", r.num_partitions},
                                                                   {"replication_factor", r.replication_factor},
                                                                   {"validate_only", ct.validate_only}});
}

asio::awaitable<reply> describe_topic(kafka_caller& kc, const std::string& name, bool with_configs) {
  protocol::metadata_request mr;
  mr.topics = std::vector<protocol::metadata_request::metadata_request_topic>{};
  mr.topics->emplace_back().name = name;
  mr.allow_auto_topic_creation = false;
  auto op = kc.call(&handlers::metadata, mr, 12);
  auto meta = co_await std::move(op);
  if (meta.topics.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "Metadata gave no topic");
  const auto& mt = meta.topics.front();
  if (mt.error_code != error_code::none) co_return kafka_error_reply(mt.error_code, "topic " + name + ": " + std::string(protocol::error_name(mt.error_code)));
  auto local = kc.services().topics.find(name);
  json::array partitions;
  int64_t total_bytes = 0;
  auto sorted = mt.partitions;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.partition_index < b.partition_index; });
  for (const auto& p : sorted) {
    json::object o{{"partition", p.partition_index},
                   {"leader", p.leader_id},
                   {"leader_epoch", p.leader_epoch},
                   {"replicas", int_array(p.replica_nodes)},
                   {"isr", int_array(p.isr_nodes)},
                   {"offline_replicas", int_array(p.offline_replicas)}};
    if (p.error_code != error_code::none) o["error"] = protocol::error_name(p.error_code);
    std::shared_ptr<partition> replica;
    if (local && p.partition_index >= 0 && p.partition_index < static_cast<int32_t>(local->partitions.size()))
      replica = local->partitions[static_cast<size_t>(p.partition_index)];
    // Offsets and size as this broker's replica has them (the leader's are authoritative); none without a replica.
    if (replica) {
      o["log_start_offset"] = replica->log_start_offset();
      o["high_watermark"] = replica->high_watermark();
      o["last_stable_offset"] = replica->last_stable_offset();
      o["log_end_offset"] = replica->log_end_offset();
      o["size_bytes"] = replica->size_bytes();
      o["local_replica"] = replica->is_leader() ? "leader" : "follower";
      total_bytes += replica->size_bytes();
    } else {
      o["local_replica"] = nullptr;
    }
    partitions.push_back(std::move(o));
  }
  json::object out{{"name", name},
                   {"topic_id", mt.topic_id.to_string()},
                   {"internal", mt.is_internal},
                   {"partition_count", sorted.size()},
                   {"replication_factor", sorted.empty() ? 0 : sorted.front().replica_nodes.size()},
                   {"size_bytes", total_bytes},
                   {"partitions", std::move(partitions)}};
  if (with_configs) {
    auto cop = describe_configs(kc, name);
    auto configs = co_await std::move(cop);
    if (configs && configs->error_code == error_code::none) out["configs"] = configs_json(*configs);
  }
  co_return json_reply(200, out);
}

asio::awaitable<reply> delete_topic(kafka_caller& kc, const std::string& name) {
  protocol::delete_topics_request dt;
  dt.timeout_ms = 30000;
  dt.topics.emplace_back().name = name;
  auto op = kc.call(&handlers::delete_topics, dt, 6);
  auto resp = co_await std::move(op);
  if (resp.responses.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "DeleteTopics gave no result");
  const auto& r = resp.responses.front();
  if (r.error_code != error_code::none) co_return kafka_error_reply(r.error_code, r.error_message.value_or(""));
  co_return reply{204, "application/json", ""};
}

/// PATCH /v1/topics/{t}/configs {"set": {k: v}, "delete": [k]}: one IncrementalAlterConfigs (SET 0, DELETE 1).
asio::awaitable<reply> alter_configs(kafka_caller& kc, const std::string& name, const request& req) {
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  protocol::incremental_alter_configs_request ia;
  auto& res = ia.resources.emplace_back();
  res.resource_type = kTopicResource;
  res.resource_name = name;
  for (const auto& [k, v] : *body) {
    if (k == "set") {
      if (!v.is_object()) co_return error_reply(400, "INVALID_REQUEST", "\"set\" must be an object of config names to values");
      for (const auto& [ck, cv] : v.as_object()) {
        auto text = config_text(cv);
        if (!text) co_return error_reply(400, "INVALID_REQUEST", "config " + std::string(ck) + ": a string value");
        res.configs.push_back({std::string(ck), 0, text});
      }
    } else if (k == "delete") {
      if (!v.is_array()) co_return error_reply(400, "INVALID_REQUEST", "\"delete\" must be an array of config names");
      for (const auto& d : v.as_array()) {
        if (!d.is_string()) co_return error_reply(400, "INVALID_REQUEST", "\"delete\" must be an array of config names");
        res.configs.push_back({std::string(d.as_string()), 1, std::nullopt});
      }
    } else if (k == "validate_only") {
      if (!v.is_bool()) co_return error_reply(400, "INVALID_REQUEST", "\"validate_only\" must be true or false");
      ia.validate_only = v.as_bool();
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k) + " (set, delete, validate_only)");
    }
  }
  if (res.configs.empty()) co_return error_reply(400, "INVALID_REQUEST", "nothing to change: give \"set\" or \"delete\"");
  auto op = kc.call(&handlers::incremental_alter_configs, ia, 1);
  auto resp = co_await std::move(op);
  if (resp.responses.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "IncrementalAlterConfigs gave no result");
  const auto& r = resp.responses.front();
  if (r.error_code != error_code::none) co_return kafka_error_reply(r.error_code, r.error_message.value_or(""));
  auto cop = configs_reply(kc, name);
  co_return co_await std::move(cop);
}

/// POST /v1/topics/{t}/partitions {"count": N}: CreatePartitions to N in all.
asio::awaitable<reply> add_partitions(kafka_caller& kc, const std::string& name, const request& req) {
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  protocol::create_partitions_request cp;
  cp.timeout_ms = 30000;
  auto& t = cp.topics.emplace_back();
  t.name = name;
  t.assignments = std::nullopt;
  bool have_count = false;
  for (const auto& [k, v] : *body) {
    if (k == "count") {
      auto n = int_in(v, 1, INT32_MAX);
      if (!n) co_return error_reply(400, "INVALID_REQUEST", "\"count\" must be an integer >= 1 (the new total)");
      t.count = static_cast<int32_t>(*n);
      have_count = true;
    } else if (k == "validate_only") {
      if (!v.is_bool()) co_return error_reply(400, "INVALID_REQUEST", "\"validate_only\" must be true or false");
      cp.validate_only = v.as_bool();
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k) + " (count, validate_only)");
    }
  }
  if (!have_count) co_return error_reply(400, "INVALID_REQUEST", "\"count\" is required (the new total of partitions)");
  auto op = kc.call(&handlers::create_partitions, cp, 3);
  auto resp = co_await std::move(op);
  if (resp.results.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "CreatePartitions gave no result");
  const auto& r = resp.results.front();
  if (r.error_code != error_code::none) co_return kafka_error_reply(r.error_code, r.error_message.value_or(""));
  co_return json_reply(200, json::object{{"name", name}, {"partitions", t.count}, {"validate_only", cp.validate_only}});
}

/// How long POST .../leader waits for this broker's snapshot to show the new leader.
constexpr int64_t kLeaderMoveTimeoutMs = 10000;

json::object leader_json(const std::string& topic, int32_t partition, const coordination::partition_state& st,
                         const std::vector<int32_t>& replicas, bool changed) {
  return json::object{{"topic", topic},          {"partition", partition},     {"leader", st.leader},
                      {"leader_epoch", st.leader_epoch}, {"replicas", int_array(replicas)}, {"isr", int_array(st.isr)},
                      {"changed", changed}};
}

bool has(const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// Why `broker` cannot lead `topic`-`partition` now (Kafka's preferred replica election needs it alive and in
/// the ISR: PREFERRED_LEADER_NOT_AVAILABLE), or nullopt when it can.
std::optional<std::string> not_electable(const coordination::cluster_snapshot& c, const std::string& tp, int32_t broker,
                                         const coordination::partition_state& st) {
  if (!c.brokers.contains(broker)) return "broker " + std::to_string(broker) + " is not alive";
  if (!has(st.isr, broker)) {
    std::string isr;
    for (int32_t b : st.isr) isr += (isr.empty() ? "" : ",") + std::to_string(b);
    return "broker " + std::to_string(broker) + " is not in the ISR of " + tp + " [" + isr + "]";
  }
  return std::nullopt;
}

/// POST /v1/topics/{t}/partitions/{p}/leader {"broker": id}: makes `broker` the leader, as Kafka's ZooKeeper-era
/// tools do (coordination/cluster_view.h request_leader_move: the assignment reordered with it first, then a
/// preferred replica election the controller carries out), and answers once this broker's cluster snapshot shows
/// it leading with a higher leader epoch (at most kLeaderMoveTimeoutMs on the injected clock; woken by each
/// snapshot applied, no polling). 200 {"topic","partition","leader","leader_epoch","replicas","isr","changed"};
/// "changed": false when it led already (Kafka's ELECTION_NOT_NEEDED, not an error here). Errors: 400
/// INVALID_REQUEST (single node, bad body), 404 UNKNOWN_TOPIC_OR_PARTITION, 400 INVALID_REPLICA_ASSIGNMENT (not a
/// replica), 503 PREFERRED_LEADER_NOT_AVAILABLE (not alive or not in the ISR), 504 REQUEST_TIMED_OUT.
asio::awaitable<reply> move_leader(kafka_caller& kc, const std::string& topic, const std::string& partition_text,
                                   const request& req) {
  auto& svc = kc.services();
  if (!svc.topics.cluster_mode())
    co_return error_reply(400, "INVALID_REQUEST", "leader moves need cluster mode (zookeeper.connect)");
  int64_t partition = -1;
  {
    auto [end, ec] = std::from_chars(partition_text.data(), partition_text.data() + partition_text.size(), partition);
    if (ec != std::errc{} || end != partition_text.data() + partition_text.size() || partition < 0 || partition > INT32_MAX)
      co_return kafka_error_reply(error_code::unknown_topic_or_partition, "no partition " + partition_text + " of " + topic);
  }
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  std::optional<int64_t> broker;
  for (const auto& [k, v] : *body) {
    if (k == "broker") {
      broker = int_in(v, 0, INT32_MAX);
      if (!broker) co_return error_reply(400, "INVALID_REQUEST", "\"broker\" must be a broker id (an integer >= 0)");
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k) + " (broker)");
    }
  }
  if (!broker) co_return error_reply(400, "INVALID_REQUEST", "\"broker\" is required: the broker id to lead the partition");
  const int32_t target = static_cast<int32_t>(*broker);
  const int32_t p = static_cast<int32_t>(partition);
  const std::string tp = topic + "-" + std::to_string(p);

  auto snap = svc.topics.cluster();
  if (!snap || !snap->registered)
    co_return kafka_error_reply(error_code::broker_not_available, "this broker is not registered with ZooKeeper");
  auto t = snap->topics.find(topic);
  if (t == snap->topics.end() || snap->deleting_topics.contains(topic))
    co_return kafka_error_reply(error_code::unknown_topic_or_partition, "topic " + topic + " does not exist");
  const auto* st = snap->state(topic, p);
  if (p >= t->second.partition_count() || st == nullptr)
    co_return kafka_error_reply(error_code::unknown_topic_or_partition,
                                "topic " + topic + " has no partition " + std::to_string(p));
  const std::vector<int32_t> replicas = t->second.replicas[static_cast<size_t>(p)];
  if (!has(replicas, target)) {
    std::string list;
    for (int32_t b : replicas) list += (list.empty() ? "" : ",") + std::to_string(b);
    co_return kafka_error_reply(error_code::invalid_replica_assignment,
                                "broker " + std::to_string(target) + " is not a replica of " + tp + " (replicas [" + list + "])");
  }
  if (st->leader == target) co_return json_reply(200, leader_json(topic, p, *st, replicas, false));
  if (auto why = not_electable(*snap, tp, target, *st)) co_return kafka_error_reply(error_code::preferred_leader_not_available, *why);

  const int32_t old_epoch = st->leader_epoch;
  if (auto r = svc.cluster.request_leader_move(topic, p, target); !r) {
    const auto& e = r.err();
    if (e.code == coordination::errc::unknown_topic) co_return kafka_error_reply(error_code::unknown_topic_or_partition, e.message);
    if (e.code == coordination::view_errc::not_a_replica) co_return kafka_error_reply(error_code::invalid_replica_assignment, e.message);
    if (e.code == coordination::view_errc::not_supported)
      co_return error_reply(400, "INVALID_REQUEST", "leader moves need cluster mode: " + e.message);
    if (e.code == coordination::view_errc::not_registered) co_return kafka_error_reply(error_code::broker_not_available, e.message);
    co_return kafka_error_reply(error_code::unknown_server_error, e.message);
  }
  auto wait = kc.wait_for_snapshot([&](const coordination::cluster_snapshot& s) {
    const auto* now = s.state(topic, p);
    return now && now->leader == target && now->leader_epoch > old_epoch;
  }, kLeaderMoveTimeoutMs);
  const bool moved_here = co_await std::move(wait);  // not inside co_await: GCC 12
  const auto latest = svc.topics.cluster();
  if (const auto* now = moved_here && latest ? latest->state(topic, p) : nullptr) {
    auto moved = latest->topics.find(topic);
    const bool known = moved != latest->topics.end() && p < moved->second.partition_count();
    co_return json_reply(200, leader_json(topic, p, *now, known ? moved->second.replicas[static_cast<size_t>(p)] : replicas,
                                          true));
  }
  if (const auto* now = latest ? latest->state(topic, p) : nullptr) {
    if (auto why = not_electable(*latest, tp, target, *now))
      co_return kafka_error_reply(error_code::preferred_leader_not_available, *why);
  }
  co_return kafka_error_reply(error_code::request_timed_out,
                              "broker " + std::to_string(target) + " does not lead " + tp + " after " +
                                  std::to_string(kLeaderMoveTimeoutMs) + " ms (it is the preferred replica now: the "
                                  "controller elects it when it can)");
}

/// POST /v1/topics/{t}/partitions/{p}/leader: a test control, behind the same switch as POST /v1/reset
/// (admin_api.cc): 403 TEST_CONTROLS_DISABLED unless sluice.test.faults.enable=true.
asio::awaitable<reply> leader_route(kafka_caller& kc, const request& req, const std::string& topic,
                                    const std::string& partition) {
  if (!kc.services().faults.enabled())
    co_return error_reply(403, "TEST_CONTROLS_DISABLED",
                          "test controls are off: start the broker with sluice.test.faults.enable=true");
  if (req.method() != verb::post) co_return method_not_allowed("POST");
  auto op = move_leader(kc, topic, partition, req);
  co_return co_await std::move(op);
}

}  // namespace

asio::awaitable<reply> topics_route(kafka_caller& kc, const request& req, const target_parts& parts) {
  const auto& s = parts.segments;  // "v1", "topics", ...
  const auto method = req.method();
  const bool get = method == verb::get || method == verb::head;
  if (s.size() == 2) {
    if (get) {
      auto op = list_topics(kc);
      co_return co_await std::move(op);
    }
    if (method == verb::post) {
      auto op = create_topic(kc, req);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("GET, POST");
  }
  const std::string& name = s[2];
  if (s.size() == 3) {
    if (get) {
      const auto* configs = parts.param("configs");
      auto op = describe_topic(kc, name, !configs || *configs != "false");
      co_return co_await std::move(op);
    }
    if (method == verb::delete_) {
      auto op = delete_topic(kc, name);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("GET, DELETE");
  }
  if (s.size() == 4 && s[3] == "configs") {
    if (get) {
      auto op = configs_reply(kc, name);
      co_return co_await std::move(op);
    }
    if (method == verb::patch || method == verb::post) {
      auto op = alter_configs(kc, name, req);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("GET, PATCH, POST");
  }
  if (s.size() == 4 && s[3] == "partitions") {
    if (get) {
      auto op = describe_topic(kc, name, false);
      co_return co_await std::move(op);
    }
    if (method == verb::post) {
      auto op = add_partitions(kc, name, req);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("GET, POST");
  }
  if ((s.size() == 4 && s[3] == "records") ||
      (s.size() == 6 && s[3] == "partitions" && (s[5] == "records" || s[5] == "leader"))) {
    auto op = s.size() == 6 && s[5] == "leader" ? leader_route(kc, req, name, s[4]) : records_route(kc, req, parts);
    co_return co_await std::move(op);
  }
  co_return error_reply(404, "NOT_FOUND", "no route " + std::string(req.target()));
}

}  // namespace sluice::broker::http
