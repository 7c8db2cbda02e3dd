// Metadata (key 3): brokers, cluster id, controller, and topics with their partitions. Auto-creates
// unknown topics when the request allows it (v4+) and auto.create.topics.enable is true.
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

response::metadata_response_topic topic_error(error_code code, std::optional<std::string> name) {
  response::metadata_response_topic out;
  out.error_code = code;
  out.name = std::move(name);
  return out;
}

}  // namespace

task<response> metadata(handler_context& hc, request_context& rc, protocol::metadata_request& req) {
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
