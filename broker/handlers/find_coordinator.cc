// FindCoordinator (key 10): the coordinator of a group (key type 0) is the leader of its __consumer_offsets
// partition, that of a transactional id (key type 1) the leader of its __transaction_state partition: this broker
// on a single node, any broker in cluster mode. The topic is created on first need, as Kafka does. v4+ batches
// keys (KIP-699).
#include "broker/group_service.h"
#include "broker/groups/partition_for_group.h"
#include "broker/handlers/cluster_view.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"
#include "broker/txn_service.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::find_coordinator_response;

namespace {

/// `topic`: the coordinator's internal topic; `ensure`: creates it and loads its shards here.
template <typename Ensure>
void locate_in_cluster(broker_services& svc, const coordination::cluster_snapshot& cluster, std::string_view topic,
                       Ensure ensure, const std::string& key, const std::string& listener, response::coordinator& c) {
  c.error_code = error_code::coordinator_not_available;
  auto it = cluster.topics.find(std::string(topic));
  if (it == cluster.topics.end()) {
    auto err = ensure();  // created through the cluster store; leaders follow shortly
    c.error_message = err.ok() ? std::string(topic) + " is being created" : err.message;
    return;
  }
  const int32_t index = groups::partition_for_group(key, it->second.partition_count());
  const auto* st = cluster.state(std::string(topic), index);
  if (!st || st->leader < 0) return;
  auto b = cluster.brokers.find(st->leader);
  if (b == cluster.brokers.end()) return;
  if (st->leader == svc.config.broker_id) (void)ensure();  // loads the shards here
  auto e = endpoint_on(b->second, listener);
  if (!e) return;  // the coordinator has no endpoint on this listener
  c.node_id = e->id;
  c.host = e->host;
  c.port = e->port;
  c.error_code = error_code::none;
  c.error_message = std::nullopt;
}

}  // namespace

task<response> find_coordinator(broker_services& svc, request_context& rc, protocol::find_coordinator_request& req) {
  const int16_t version = rc.header.api_version;
  std::vector<std::string> keys = version >= 4 ? req.coordinator_keys : std::vector<std::string>{req.key_};
  std::vector<response::coordinator> out;
  for (const auto& key : keys) {
    response::coordinator c;
    c.key = key;
    c.node_id = -1;
    c.port = -1;
    const bool txn = req.key_type == 1;
    auto ensure = [&svc, txn] { return txn ? svc.txns.ensure_topic() : svc.groups.ensure_topic(); };
    if (req.key_type != 0 && req.key_type != 1) {
      c.error_code = error_code::invalid_request;
      c.error_message = "unknown coordinator key type " + std::to_string(req.key_type);
    } else if (!authorized(svc, rc, acl_operation::describe, txn ? resource_type::transactional_id : resource_type::group,
                           key)) {
      // Kafka: Describe on the group or transactional id, before the coordinator is looked for.
      c.error_code = txn ? error_code::transactional_id_authorization_failed : error_code::group_authorization_failed;
      c.error_message = txn ? "Transactional Id authorization failed." : "Group authorization failed.";
    } else if (auto cluster = svc.topics.cluster(); cluster && svc.topics.cluster_mode()) {
      // Cluster mode: the leader of the key's internal-topic partition, wherever it is.
      locate_in_cluster(svc, *cluster, txn ? transaction_state_topic : consumer_offsets_topic, ensure, key,
                        rc.session.listener_name, c);
    } else if (auto err = ensure(); !err.ok()) {
      c.error_code = error_code::coordinator_not_available;
      c.error_message = err.message;
    } else if (auto self = self_endpoint(svc, rc.session.listener_name); !self) {
      c.error_code = error_code::coordinator_not_available;
    } else {
      c.node_id = svc.config.broker_id;
      c.host = self->host;
      c.port = self->port;
      c.error_code = error_code::none;
      c.error_message = std::nullopt;
    }
    out.push_back(std::move(c));
  }
  response resp;
  if (version >= 4) {
    resp.coordinators = std::move(out);
  } else {
    auto& c = out.front();
    resp.error_code = c.error_code;
    resp.error_message = c.error_message;
    resp.node_id = c.node_id;
    resp.host = c.host;
    resp.port = c.port;
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
