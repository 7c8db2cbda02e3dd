// Metadata (key 3): brokers, cluster id, controller, and topics with their partitions. Auto-creates
// unknown topics when the request allows it (v4+) and auto.create.topics.enable is true. Single node:
// this broker leads everything. Cluster mode: answered from the cluster snapshot, the same on every
// broker (live brokers, leaders, replicas, ISR, offline replicas).
#include <climits>

#include "broker/handlers/cluster_view.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/topic_name.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::metadata_response;

namespace {

// AclOperation codes READ(3) WRITE(4) CREATE(5) DELETE(6) ALTER(7) DESCRIBE(8) DESCRIBE_CONFIGS(10)
// ALTER_CONFIGS(11): with no authorizer every topic operation is allowed (KIP-430).
constexpr int32_t kTopicOperations = (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);

response::metadata_response_topic describe(const handler_context& hc, const topic& t, bool include_operations) {
  response::metadata_response_topic out;
  out.error_code = error_code::none;
  out.name = t.name;
  out.topic_id = to_wire(t.id);
  out.is_internal = t.internal;
  for (const auto& p : t.partitions) {
    response::metadata_response_partition mp;
    mp.error_code = error_code::none;
    mp.partition_index = p->index();
    mp.leader_id = hc.config.broker_id;
    mp.leader_epoch = p->leader_epoch();
    mp.replica_nodes = {hc.config.broker_id};
    mp.isr_nodes = {hc.config.broker_id};
    out.partitions.push_back(std::move(mp));
  }
  out.topic_authorized_operations = include_operations ? kTopicOperations : INT32_MIN;
  return out;
}

// Cluster mode: a topic as the cluster knows it (every partition, led here or not).
response::metadata_response_topic describe(const coordination::cluster_snapshot& c,
                                           const coordination::topic_assignment& a, bool include_operations) {
  response::metadata_response_topic out;
  out.error_code = error_code::none;
  out.name = a.name;
  out.topic_id = to_wire(a.id);
  out.is_internal = a.name.starts_with("__");
  for (int32_t i = 0; i < a.partition_count(); ++i) {
    response::metadata_response_partition mp;
    mp.partition_index = i;
    mp.replica_nodes = a.replicas[static_cast<size_t>(i)];
    const auto* st = c.state(a.name, i);
    mp.leader_id = st ? st->leader : -1;
    mp.leader_epoch = st ? st->leader_epoch : -1;
    if (st) mp.isr_nodes = st->isr;
    for (int32_t r : mp.replica_nodes)
      if (!c.brokers.contains(r)) mp.offline_replicas.push_back(r);
    // No leader (offline, or a new topic before the controller's election): clients retry.
    mp.error_code = mp.leader_id < 0 ? error_code::leader_not_available : error_code::none;
    out.partitions.push_back(std::move(mp));
  }
  out.topic_authorized_operations = include_operations ? kTopicOperations : INT32_MIN;
  return out;
}

response::metadata_response_topic topic_error(error_code code, std::optional<std::string> name) {
  response::metadata_response_topic out;
  out.error_code = code;
  out.name = std::move(name);
  return out;
}

}  // namespace

static task<response> metadata_in_cluster(handler_context& hc, request_context& rc, protocol::metadata_request& req,
                                   std::shared_ptr<const coordination::cluster_snapshot> c) {
  const int16_t version = rc.header.api_version;
  response resp;
  for (auto& ep : live_brokers(hc)) {
    response::metadata_response_broker b;
    b.node_id = ep.id;
    b.host = std::move(ep.host);
    b.port = ep.port;
    b.rack = std::move(ep.rack);
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_id = c->cluster_id;
  resp.controller_id = controller_id(hc);
  const bool ops = req.include_topic_authorized_operations;
  resp.cluster_authorized_operations =
      req.include_cluster_authorized_operations ? cluster_authorized_operations : INT32_MIN;
  const bool all = !req.topics.has_value() || (version == 0 && req.topics->empty());
  if (all) {
    for (const auto& [name, a] : c->topics) resp.topics.push_back(describe(*c, a, ops));
    co_return resp;
  }
  for (const auto& wanted : *req.topics) {
    if (!wanted.name.has_value() || wanted.name->empty()) {
      const auto id = from_wire(wanted.topic_id);
      const coordination::topic_assignment* found = nullptr;
      for (const auto& [name, a] : c->topics)
        if (a.id == id) found = &a;
      if (found) resp.topics.push_back(describe(*c, *found, ops));
      else resp.topics.push_back(topic_error(error_code::unknown_topic_id, std::nullopt));
      continue;
    }
    const std::string& name = *wanted.name;
    if (auto it = c->topics.find(name); it != c->topics.end()) {
      resp.topics.push_back(describe(*c, it->second, ops));
      continue;
    }
    if (invalid_topic_name_reason(name)) {
      resp.topics.push_back(topic_error(error_code::invalid_topic_exception, name));
      continue;
    }
    if (!req.allow_auto_topic_creation || !hc.config.auto_create_topics_enable) {
      resp.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    // Created through the cluster store; its partitions get leaders a moment later (Kafka answers
    // LEADER_NOT_AVAILABLE for a topic it just auto-created, and clients ask again).
    const auto rf = static_cast<int16_t>(std::min<size_t>(static_cast<size_t>(hc.config.default_replication_factor), c->brokers.size()));
    topic_spec spec{name, hc.config.num_partitions, std::max<int16_t>(rf, 1), {}};
    auto err = hc.topics.create(spec, false);
    resp.topics.push_back(topic_error(err.ok() || err.code == error_code::topic_already_exists ? error_code::leader_not_available : err.code, name));
  }
  co_return resp;
}

task<response> metadata(handler_context& hc, request_context& rc, protocol::metadata_request& req) {
  const int16_t version = rc.header.api_version;
  if (auto c = hc.topics.cluster(); c && hc.topics.cluster_mode()) {
    auto op = metadata_in_cluster(hc, rc, req, std::move(c));  // not inside co_await: GCC 12
    co_return co_await std::move(op);
  }
  response resp;
  for (auto& ep : live_brokers(hc)) {
    response::metadata_response_broker b;
    b.node_id = ep.id;
    b.host = std::move(ep.host);
    b.port = ep.port;
    b.rack = std::move(ep.rack);
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_id = hc.cluster_id;
  resp.controller_id = controller_id(hc);
  const bool ops = req.include_topic_authorized_operations;
  resp.cluster_authorized_operations =
      req.include_cluster_authorized_operations ? cluster_authorized_operations : INT32_MIN;

  // v0: an empty list means every topic; v1+: null means every topic, empty means none.
  const bool all = !req.topics.has_value() || (version == 0 && req.topics->empty());
  if (all) {
    for (const auto& t : hc.topics.all()) resp.topics.push_back(describe(hc, *t, ops));
    co_return resp;
  }
  for (const auto& wanted : *req.topics) {
    if (!wanted.name.has_value() || wanted.name->empty()) {
      auto t = hc.topics.find(from_wire(wanted.topic_id));
      if (t) resp.topics.push_back(describe(hc, *t, ops));
      else resp.topics.push_back(topic_error(error_code::unknown_topic_id, std::nullopt));
      continue;
    }
    const std::string& name = *wanted.name;
    if (auto t = hc.topics.find(name)) {
      resp.topics.push_back(describe(hc, *t, ops));
      continue;
    }
    if (invalid_topic_name_reason(name)) {
      resp.topics.push_back(topic_error(error_code::invalid_topic_exception, name));
      continue;
    }
    if (!req.allow_auto_topic_creation || !hc.config.auto_create_topics_enable) {
      resp.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    topic_spec spec{name, hc.config.num_partitions, hc.config.default_replication_factor, {}};
    auto err = hc.topics.create(spec, false);
    auto t = hc.topics.find(name);  // present also when a concurrent request created it first
    if (t) resp.topics.push_back(describe(hc, *t, ops));
    else resp.topics.push_back(topic_error(err.ok() ? error_code::leader_not_available : err.code, name));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
