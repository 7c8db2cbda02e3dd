// /v1/topics: list, create, describe, delete, configs, add partitions (broker/http/README.md, openapi.yaml). Each
// change runs the broker's Kafka handler for it (CreateTopics, DeleteTopics, IncrementalAlterConfigs,
// CreatePartitions), so it validates and fails as that request does.
#include "broker/handlers/handlers.h"
#include "broker/http/admin_kafka.h"
#include "broker/partition.h"
#include "broker/topic_registry.h"

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

/// A config value from JSON: strings as they are; numbers and booleans as their text.
std::optional<std::string> config_text(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64() || v.is_uint64() || v.is_bool() || v.is_double()) return json::serialize(v);
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

asio::awaitable<reply> list_topics(kafka_caller& kc) {
  json::array topics;
  for (const auto& t : kc.services().topics.all())
    topics.push_back(json::object{{"name", t->name},
                                  {"partitions", t->partitions.size()},
                                  {"replication_factor", t->replication_factor},
                                  {"internal", t->internal}});
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
    co_return error_reply(405, "METHOD_NOT_ALLOWED", "GET, POST");
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
    co_return error_reply(405, "METHOD_NOT_ALLOWED", "GET, DELETE");
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
    co_return error_reply(405, "METHOD_NOT_ALLOWED", "GET, PATCH");
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
    co_return error_reply(405, "METHOD_NOT_ALLOWED", "GET, POST");
  }
  if ((s.size() == 4 && s[3] == "records") || (s.size() == 6 && s[3] == "partitions" && s[5] == "records")) {
    auto op = records_route(kc, req, parts);
    co_return co_await std::move(op);
  }
  co_return error_reply(404, "NOT_FOUND", "no route " + std::string(req.target()));
}

}  // namespace sluice::broker::http
