// CreateTopics (key 19): validates and creates topics; validate_only checks without creating (KIP-108). Checks in
// Kafka 4.x's order (ControllerApis.createTopics, then ReplicationControlManager.createTopics / createTopic).
#include <map>
#include <set>

#include "broker/handlers/cluster_wait.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/topic_config.h"
#include "broker/topic_name.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::create_topics_response;

namespace {
// DescribeConfigs ConfigSource values (KIP-226).
constexpr int8_t kTopicConfig = 1, kStaticBrokerConfig = 4, kDefaultConfig = 5;

/// The manual assignment of one topic as createTopic checks it, after the counts: both counts must be -1, a
/// partition may be named once, the partitions must be 0..n-1 (in any order). The brokers of each partition are
/// checked by topic_registry::create (registered, each once, one replica count). Fills `spec` on success.
std::optional<std::pair<error_code, std::string>> take_assignment(
    const protocol::create_topics_request::creatable_topic& ct, topic_spec& spec) {
  if (ct.replication_factor != -1)
    return std::make_pair(error_code::invalid_request,
                          std::string("A manual partition assignment was specified, but replication factor was not set to -1."));
  if (ct.num_partitions != -1)
    return std::make_pair(error_code::invalid_request,
                          std::string("A manual partition assignment was specified, but numPartitions was not set to -1."));
  std::map<int32_t, std::vector<int32_t>> by_partition;
  for (const auto& a : ct.assignments)
    if (!by_partition.emplace(a.partition_index, a.broker_ids).second)
      return std::make_pair(error_code::invalid_replica_assignment,
                            "Found multiple manual partition assignments for partition " + std::to_string(a.partition_index));
  spec.assignments.emplace();
  for (int32_t i = 0; i < static_cast<int32_t>(by_partition.size()); ++i) {
    auto it = by_partition.find(i);
    if (it == by_partition.end())
      return std::make_pair(error_code::invalid_replica_assignment,
                            std::string("partitions should be a consecutive 0-based integer sequence"));
    spec.assignments->push_back(it->second);
  }
  spec.num_partitions = static_cast<int32_t>(spec.assignments->size());
  spec.replication_factor = static_cast<int16_t>(spec.assignments->front().size());
  return std::nullopt;
}
}  // namespace

task<response> create_topics(broker_services& svc, request_context& rc, protocol::create_topics_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;

  // Kafka's controller runs the request with the deadline now + timeout_ms: with 0 (or less) it has passed
  // when the event runs, so nothing is created and the whole request fails (CreateTopicsRequest.getErrorResponse:
  // every topic as sent, REQUEST_TIMED_OUT with no message, counts -1).
  if (req.timeout_ms <= 0) {
    for (const auto& ct : req.topics) {
      response::creatable_topic_result out;
      out.name = ct.name;
      out.error_code = error_code::request_timed_out;
      out.error_message = std::nullopt;  // Kafka: the TimeoutException's message, null
      resp.topics.push_back(std::move(out));
    }
    co_return resp;
  }

  std::map<std::string, int> seen;
  for (const auto& ct : req.topics) ++seen[ct.name];
  std::vector<std::pair<std::string, int32_t>> created;  // cluster mode: waited for below
  std::set<std::string> duplicates_answered;
  const bool cluster_create = cluster_authorized(svc, rc, acl_operation::create);
  for (const auto& ct : req.topics) {
    // Kafka's ControllerApis.createTopics: a name given twice gets ONE entry, INVALID_REQUEST.
    if (seen[ct.name] > 1 && !duplicates_answered.insert(ct.name).second) continue;
    response::creatable_topic_result out;
    out.name = ct.name;
    out.num_partitions = -1;
    out.replication_factor = -1;
    std::optional<std::pair<error_code, std::string>> problem;

    topic_spec spec{ct.name, ct.num_partitions, ct.replication_factor, {}, std::nullopt};
    std::string nulls;  // the names with a null value, comma-separated (a name may be "")
    bool any_null = false;
    for (const auto& c : ct.configs) {
      if (c.value.has_value()) {
        spec.configs[c.name] = *c.value;
      } else {
        nulls += (any_null ? "," : "") + c.name;
        any_null = true;
      }
    }
    if (seen[ct.name] > 1) {
      problem = {error_code::invalid_request, "Duplicate topic name."};
    } else if (!cluster_create && !authorized(svc, rc, acl_operation::create, resource_type::topic, ct.name)) {
      // Kafka: Create on the cluster or on the topic.
      problem = {error_code::topic_authorization_failed, "Authorization failed."};
    } else if (auto bad = svc.topics.check_new_name(ct.name); !bad.ok()) {
      // validateNewTopicNames (Topic.validate, INVALID_TOPIC_EXCEPTION), then an existing topic, then a collision.
      problem = {bad.code, bad.message};
    } else if (any_null) {
      // computeConfigChanges, before the configs are validated and before the counts.
      problem = {error_code::invalid_config, "Null value not supported for topic configs: " + nulls};
    } else if (auto invalid = validate_topic_configs(spec.configs)) {
      problem = {error_code::invalid_config, std::move(*invalid)};
    } else if (!ct.assignments.empty()) {
      problem = take_assignment(ct, spec);
    } else {
      if (spec.num_partitions == -1) spec.num_partitions = svc.config.num_partitions;
      if (spec.replication_factor == -1) spec.replication_factor = svc.config.default_replication_factor;
    }

    coordination::topic_id created_id{};
    if (!problem) {
      auto err = svc.topics.create(spec, req.validate_only, &created_id);
      if (!err.ok()) problem = {err.code, err.message};
      else if (!req.validate_only && svc.topics.cluster_mode()) created.emplace_back(spec.name, spec.num_partitions);
    }
    if (problem) {
      out.error_code = problem->first;
      out.error_message = std::move(problem->second);
    } else {
      out.error_code = error_code::none;
      out.error_message = std::nullopt;  // Kafka's controller: null on success (the schema's "" is never sent)
      out.num_partitions = spec.num_partitions;
      out.replication_factor = spec.replication_factor;
      // The topic's id; validate_only answers the random id the topic would have had (createTopic draws it
      // before it knows the request validates only).
      // In cluster mode the topic reaches this broker's registry later (from ZooKeeper): the id comes from create().
      if (!req.validate_only && created_id != coordination::topic_id{}) out.topic_id = to_wire(created_id);
      else if (auto t = svc.topics.find(ct.name); t && !req.validate_only) out.topic_id = to_wire(t->id);
      else out.topic_id = to_wire(coordination::random_topic_id());
      if (version >= 5) {
        std::vector<response::creatable_topic_configs> configs;
        for (const auto& key : topic_config_keys()) {
          response::creatable_topic_configs c;
          c.name = std::string(key.name);
          auto it = spec.configs.find(c.name);
          if (it != spec.configs.end()) {
            c.value = it->second;
            c.config_source = kTopicConfig;
          } else if (key.internal) {
            continue;  // an internal key (internal.segment.bytes) is listed only when set
          } else {
            c.value = topic_config_default(svc.config, key);
            c.config_source = topic_config_set_by_broker(svc.config, key) ? kStaticBrokerConfig : kDefaultConfig;
          }
          c.read_only = false;
          c.is_sensitive = false;
          configs.push_back(std::move(c));
        }
        out.configs = std::move(configs);
      }
    }
    resp.topics.push_back(std::move(out));
  }
  // Cluster mode: answer once the new topics have leaders here (see cluster_wait.h); on timeout the topics
  // exist all the same and the answer is NONE.
  auto wait_op = wait_for_leaders(svc, rc, std::move(created), req.timeout_ms);
  co_await std::move(wait_op);  // not inside co_await: GCC 12
  co_return resp;
}

}  // namespace sluice::broker::handlers
