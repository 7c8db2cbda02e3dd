// Metadata (key 3): brokers, cluster id, controller, and topics with their partitions. Auto-creates
// unknown topics when the request allows it (v4+; v0-3 always allow) and auto.create.topics.enable is true.
// A requested name that Kafka's Topic.validate rejects ("", ".", "..", over 249 characters, a character
// outside [a-zA-Z0-9._-]) gets INVALID_TOPIC_EXCEPTION for that topic, the rest of the answer intact. Single node:
// this broker leads everything. Cluster mode: answered from the cluster snapshot, the same on every
// broker (live brokers, leaders, replicas, ISR, offline replicas).
#include <algorithm>
#include <climits>
#include <set>

#include "broker/handlers/cluster_view.h"
#include "broker/handlers/authorization.h"
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

response::metadata_response_topic describe(const broker_services& svc, const topic& t, bool include_operations) {
  response::metadata_response_topic out;
  out.error_code = error_code::none;
  out.name = t.name;
  out.topic_id = to_wire(t.id);
  out.is_internal = t.internal;
  for (const auto& p : t.partitions) {
    response::metadata_response_partition mp;
    mp.error_code = error_code::none;
    mp.partition_index = p->index();
    mp.leader_id = svc.config.broker_id;
    mp.leader_epoch = p->leader_epoch();
    mp.replica_nodes = {svc.config.broker_id};
    mp.isr_nodes = {svc.config.broker_id};
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

task<response> metadata(broker_services& svc, request_context& rc, protocol::metadata_request& req) {
  const int16_t version = rc.header.api_version;
  // Cluster mode answers from the cluster snapshot (every topic, wherever it is led); a single node from
  // its own topics.
  std::shared_ptr<const coordination::cluster_snapshot> c = svc.topics.cluster_mode() ? svc.topics.cluster() : nullptr;
  const bool ops = req.include_topic_authorized_operations;
  response resp;
  if ((version == 10 || version == 11) && req.topics.has_value()) {
    // Kafka's handleTopicMetadataRequest: v10-11 carry topic ids but may not name topics by them (nor leave the
    // name null); the whole request is answered as an error: each topic INVALID_REQUEST, no brokers, no
    // cluster id, controller -1 (MetadataRequest.getErrorResponse).
    const bool by_id = std::any_of(req.topics->begin(), req.topics->end(), [](const auto& t) {
      return !t.topic_id.is_zero() || !t.name.has_value();
    });
    if (by_id) {
      for (const auto& t : *req.topics) {
        auto out = topic_error(error_code::invalid_request, t.name.value_or(""));
        out.topic_id = t.topic_id;
        resp.topics.push_back(std::move(out));
      }
      co_return resp;
    }
  }
  // v12+: with any non-zero topic id in the request Kafka looks topics up by id only (the entries without an id are
  // not answered); with none, by name, and a null name then fails the whole request (UNKNOWN_SERVER_ERROR for each
  // topic, named "" where null, as the error response above). Both as Kafka 4.4 answers (compat/diff scenarios).
  const bool by_ids = version >= 12 && req.topics.has_value() &&
                      std::any_of(req.topics->begin(), req.topics->end(), [](const auto& t) { return !t.topic_id.is_zero(); });
  if (version >= 12 && req.topics.has_value() && !by_ids &&
      std::any_of(req.topics->begin(), req.topics->end(), [](const auto& t) { return !t.name.has_value(); })) {
    for (const auto& t : *req.topics) {
      auto out = topic_error(error_code::unknown_server_error, t.name.value_or(""));
      out.topic_id = t.topic_id;
      resp.topics.push_back(std::move(out));
    }
    resp.error_code = error_code::unknown_server_error;  // v13+: the error response's top-level code too
    co_return resp;
  }
  for (auto& ep : live_brokers(svc, rc.session.listener_name)) {
    response::metadata_response_broker b;
    b.node_id = ep.id;
    b.host = std::move(ep.host);
    b.port = ep.port;
    b.rack = std::move(ep.rack);
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_id = c ? c->cluster_id : svc.cluster_id;
  resp.controller_id = controller_id(svc);
  resp.cluster_authorized_operations =
      req.include_cluster_authorized_operations
          ? authorized_operations(svc, rc, resource_type::cluster, security::cluster_resource_name,
                                  cluster_authorized_operations)
          : INT32_MIN;
  // Authorization (KafkaApis.getTopicMetadata): a topic is described only with Describe on it; asked for by name
  // or id without it, the answer is TOPIC_AUTHORIZATION_FAILED whether it exists or not.
  auto may_describe = [&](const std::string& name) {
    return authorized(svc, rc, acl_operation::describe, resource_type::topic, name);
  };
  auto with_operations = [&](response::metadata_response_topic&& t) {
    if (ops && svc.authorizer != nullptr && t.name)
      t.topic_authorized_operations = authorized_operations(svc, rc, resource_type::topic, *t.name, kTopicOperations);
    return std::move(t);
  };

  auto by_name = [&](const std::string& name) -> std::optional<response::metadata_response_topic> {
    if (c) {
      if (auto it = c->topics.find(name); it != c->topics.end()) return describe(*c, it->second, ops);
    } else if (auto t = svc.topics.find(name)) {
      return describe(svc, *t, ops);
    }
    return std::nullopt;
  };
  auto by_id = [&](const coordination::topic_id& id) -> std::optional<response::metadata_response_topic> {
    if (c) {
      for (const auto& [name, a] : c->topics)
        if (a.id == id) return describe(*c, a, ops);
    } else if (auto t = svc.topics.find(id)) {
      return describe(svc, *t, ops);
    }
    return std::nullopt;
  };

  // v0: an empty list means every topic; v1+: null means every topic, empty means none.
  const bool all = !req.topics.has_value() || (version == 0 && req.topics->empty());
  if (all) {
    if (c) {
      for (const auto& [name, a] : c->topics)
        if (may_describe(name)) resp.topics.push_back(with_operations(describe(*c, a, ops)));
    } else {
      for (const auto& t : svc.topics.all())
        if (may_describe(t->name)) resp.topics.push_back(with_operations(describe(svc, *t, ops)));
    }
    co_return resp;
  }
  // Kafka fills the authorized operations of every topic asked for by name, errors included (not of unknown ids).
  auto named_error = [&](error_code code, const std::string& name) {
    auto out = topic_error(code, name);
    if (ops) out.topic_authorized_operations = kTopicOperations;
    return with_operations(std::move(out));
  };
  std::set<std::string> names_answered;  // Kafka answers a topic named twice once (the request is a set)
  std::set<std::string> ids_answered;
  for (const auto& wanted : *req.topics) {
    if (by_ids && wanted.topic_id.is_zero()) continue;
    if (wanted.topic_id.is_zero() && wanted.name && !names_answered.insert(*wanted.name).second) continue;
    // A topic id named twice is answered once too (Kafka collects the ids as a set).
    if (!wanted.topic_id.is_zero() && !ids_answered.insert(wanted.topic_id.to_string()).second) continue;
    // v10+: a non-zero topic id names the topic (Kafka then ignores the name); a null name (v12) with no id
    // finds nothing. Any other entry is a name, the empty string included: "" is a name Kafka's
    // Topic.validate rejects, so it is INVALID_TOPIC_EXCEPTION as below, never an id lookup.
    if (!wanted.topic_id.is_zero() || !wanted.name.has_value()) {
      auto found = wanted.topic_id.is_zero() ? std::nullopt : by_id(from_wire(wanted.topic_id));
      if (found && found->name && !may_describe(*found->name)) {
        auto denied = topic_error(error_code::topic_authorization_failed, std::nullopt);
        denied.topic_id = wanted.topic_id;
        resp.topics.push_back(std::move(denied));
      } else if (found) {
        resp.topics.push_back(with_operations(std::move(*found)));
      } else {
        auto unknown = topic_error(error_code::unknown_topic_id, std::nullopt);
        unknown.topic_id = wanted.topic_id;  // Kafka echoes the id it does not know
        resp.topics.push_back(std::move(unknown));
      }
      continue;
    }
    const std::string& name = *wanted.name;
    if (!may_describe(name)) {
      resp.topics.push_back(named_error(error_code::topic_authorization_failed, name));
      continue;
    }
    if (auto found = by_name(name)) {
      resp.topics.push_back(with_operations(std::move(*found)));
      continue;
    }
    // Kafka (KafkaApis.getTopicMetadata, AutoTopicCreationManager): a name Topic.validate rejects is
    // INVALID_TOPIC_EXCEPTION whether auto-creation is allowed or not, and is never created.
    if (invalid_topic_name_reason(name)) {
      resp.topics.push_back(named_error(error_code::invalid_topic_exception, name));
      continue;
    }
    if (!req.allow_auto_topic_creation || !svc.config.auto_create_topics_enable) {
      resp.topics.push_back(named_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    // Auto-creation needs Create on the cluster or on the topic.
    if (!cluster_authorized(svc, rc, acl_operation::create) &&
        !authorized(svc, rc, acl_operation::create, resource_type::topic, name)) {
      resp.topics.push_back(named_error(error_code::topic_authorization_failed, name));
      continue;
    }
    int16_t replication_factor = svc.config.default_replication_factor;
    if (c)  // never more replicas than live brokers for an auto-created topic
      replication_factor = static_cast<int16_t>(std::clamp<size_t>(c->brokers.size(), 1, static_cast<size_t>(std::max<int16_t>(replication_factor, 1))));
    topic_spec spec{name, svc.config.num_partitions, replication_factor, {}, std::nullopt};
    auto err = svc.topics.create(spec, false);
    // Single node: the topic is there at once (also when a concurrent request created it first). Cluster
    // mode: its partitions get leaders a moment later, so LEADER_NOT_AVAILABLE as Kafka answers for a
    // topic it just auto-created; clients ask again.
    auto created = c ? std::nullopt : by_name(name);
    const bool made = err.ok() || err.code == error_code::topic_already_exists;
    resp.topics.push_back(created ? with_operations(std::move(*created)) : named_error(made ? error_code::leader_not_available : err.code, name));
  }
  co_return resp;
}

// DescribeTopicPartitions (key 75, KIP-966): Metadata's topic descriptions, paged, as Kafka 4.4's
// DescribeTopicPartitionsRequestHandler. Topics in name order (every topic when none is named); at most
// min(ResponsePartitionLimit, 2000) partitions (at least 1) per answer; NextCursor names where the next request
// starts (a topic cut in the middle: its next partition; the limit reached at a topic's end: the next topic at 0).
// A cursor names a topic of the request's list and a partition >= 0, else every named topic answers
// INVALID_REQUEST. Named topics: unknown ones UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an invalid
// name); without Describe TOPIC_AUTHORIZATION_FAILED, listed after the others and outside the limit.
task<protocol::describe_topic_partitions_response> describe_topic_partitions(
    broker_services& svc, request_context& rc, protocol::describe_topic_partitions_request& req) {
  using dtp = protocol::describe_topic_partitions_response;
  dtp resp;
  std::set<std::string> named;
  for (const auto& t : req.topics) named.insert(t.name);
  const bool all = req.topics.empty();
  auto error_topic = [](error_code code, const std::string& name) {
    dtp::describe_topic_partitions_response_topic out;
    out.error_code = code;
    out.name = name;
    out.is_internal = name.starts_with("__");
    return out;
  };
  if (req.cursor_ && ((!all && !named.contains(req.cursor_->topic_name)) || req.cursor_->partition_index < 0)) {
    for (const auto& name : named) resp.topics.push_back(error_topic(error_code::invalid_request, name));
    co_return resp;
  }
  std::shared_ptr<const coordination::cluster_snapshot> c = svc.topics.cluster_mode() ? svc.topics.cluster() : nullptr;
  std::vector<std::string> names;
  if (all) {
    if (c) {
      for (const auto& [name, a] : c->topics) names.push_back(name);
    } else {
      for (const auto& t : svc.topics.all()) names.push_back(t->name);
    }
    std::sort(names.begin(), names.end());
  } else {
    names.assign(named.begin(), named.end());
  }
  if (req.cursor_) std::erase_if(names, [&](const std::string& n) { return n < req.cursor_->topic_name; });
  std::vector<dtp::describe_topic_partitions_response_topic> denied;
  int64_t remaining = std::max<int64_t>(std::min<int64_t>(req.response_partition_limit, 2000), 1);
  for (const auto& name : names) {
    if (!authorized(svc, rc, acl_operation::describe, resource_type::topic, name)) {
      if (!all) denied.push_back(error_topic(error_code::topic_authorization_failed, name));
      continue;
    }
    if (remaining == 0) {  // the previous topic filled the page: the next one starts the next page
      resp.next_cursor.emplace();
      resp.next_cursor->topic_name = name;
      resp.next_cursor->partition_index = 0;
      break;
    }
    std::optional<response::metadata_response_topic> found;
    if (c) {
      if (auto it = c->topics.find(name); it != c->topics.end()) found = describe(*c, it->second, false);
    } else if (auto t = svc.topics.find(name)) {
      found = describe(svc, *t, false);
    }
    if (!found) {
      if (!all) {
        auto out = error_topic(invalid_topic_name_reason(name) ? error_code::invalid_topic_exception
                                                               : error_code::unknown_topic_or_partition,
                               name);
        // Kafka fills the authorized operations of every described name, unknown ones included.
        out.topic_authorized_operations =
            svc.authorizer != nullptr ? authorized_operations(svc, rc, resource_type::topic, name, kTopicOperations)
                                      : kTopicOperations;
        resp.topics.push_back(std::move(out));
      }
      continue;
    }
    dtp::describe_topic_partitions_response_topic out;
    out.error_code = error_code::none;
    out.name = name;
    out.topic_id = found->topic_id;
    out.is_internal = found->is_internal;
    out.topic_authorized_operations =
        svc.authorizer != nullptr ? authorized_operations(svc, rc, resource_type::topic, name, kTopicOperations)
                                  : kTopicOperations;
    const int32_t start = req.cursor_ && name == req.cursor_->topic_name ? req.cursor_->partition_index : 0;
    for (auto& mp : found->partitions) {
      if (mp.partition_index < start) continue;
      if (remaining == 0) {  // cut inside this topic: the next page starts at this partition
        resp.next_cursor.emplace();
        resp.next_cursor->topic_name = name;
        resp.next_cursor->partition_index = mp.partition_index;
        break;
      }
      dtp::describe_topic_partitions_response_partition p;
      p.error_code = mp.error_code;
      p.partition_index = mp.partition_index;
      p.leader_id = mp.leader_id;
      p.leader_epoch = mp.leader_epoch;
      p.replica_nodes = std::move(mp.replica_nodes);
      p.isr_nodes = std::move(mp.isr_nodes);
      p.eligible_leader_replicas.emplace();  // no eligible leader replicas (KIP-966): empty lists, as Kafka
      p.last_known_elr.emplace();
      p.offline_replicas = std::move(mp.offline_replicas);
      out.partitions.push_back(std::move(p));
      --remaining;
    }
    resp.topics.push_back(std::move(out));
    if (resp.next_cursor) break;
  }
  for (auto& d : denied) resp.topics.push_back(std::move(d));
  co_return resp;
}

}  // namespace sluice::broker::handlers
