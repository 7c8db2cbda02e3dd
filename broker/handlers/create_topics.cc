// CreateTopics (key 19): validates and creates topics; validate_only checks without creating (KIP-108).
#include <map>
#include <set>

#include "broker/handlers/cluster_wait.h"
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
}  // namespace

task<response> create_topics(broker_services& svc, request_context& rc, protocol::create_topics_request& req) {
  const int16_t version = rc.header.api_version;
  std::map<std::string, int> seen;
  for (const auto& ct : req.topics) ++seen[ct.name];

  response resp;
  std::vector<std::pair<std::string, int32_t>> created;  // cluster mode: waited for below
  std::set<std::string> duplicates_answered;
  for (const auto& ct : req.topics) {
    // Kafka's ControllerApis.createTopics: a name given twice gets ONE entry, INVALID_REQUEST.
    if (seen[ct.name] > 1 && !duplicates_answered.insert(ct.name).second) continue;
    response::creatable_topic_result out;
    out.name = ct.name;
    out.num_partitions = -1;
    out.replication_factor = -1;
    auto fail = [&](error_code code, std::string message) {
      out.error_code = code;
      out.error_message = std::move(message);
    };

    topic_spec spec{ct.name, ct.num_partitions, ct.replication_factor, {}, std::nullopt};
    bool valid = true;
    if (seen[ct.name] > 1) {
      fail(error_code::invalid_request, "Duplicate topic name.");
      valid = false;
    } else if (auto reason = invalid_topic_name_reason(ct.name)) {
      // Kafka's controller checks names first (ReplicationControlManager.validateNewTopicNames), before the
      // assignment, counts and configs: INVALID_TOPIC_EXCEPTION with Topic.validate's message.
      fail(error_code::invalid_topic_exception, std::move(*reason));
      valid = false;
    } else if (!ct.assignments.empty()) {
      if (ct.num_partitions != -1 || ct.replication_factor != -1) {
        fail(error_code::invalid_request,
             "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.");
        valid = false;
      } else {
        // The brokers are checked by topic_registry::create (registered, not twice, one replica count).
        spec.num_partitions = static_cast<int32_t>(ct.assignments.size());
        spec.replication_factor = static_cast<int16_t>(ct.assignments[0].broker_ids.size());
        spec.assignments.emplace();
        for (size_t i = 0; i < ct.assignments.size() && valid; ++i) {
          const auto& a = ct.assignments[i];
          if (a.partition_index != static_cast<int32_t>(i)) {
            fail(error_code::invalid_replica_assignment,
                 "Replica assignment for partition " + std::to_string(a.partition_index) +
                     ": partitions must be consecutive from 0");
            valid = false;
          }
          spec.assignments->push_back(a.broker_ids);
        }
      }
    } else {
      if (spec.num_partitions == -1) spec.num_partitions = svc.config.num_partitions;
      if (spec.replication_factor == -1) spec.replication_factor = svc.config.default_replication_factor;
    }
    std::string nulls;  // Kafka: INVALID_CONFIG for null config values (the name was found valid above)
    for (const auto& c : ct.configs) {
      if (c.value.has_value()) spec.configs[c.name] = *c.value;
      else nulls += (nulls.empty() ? "" : ",") + c.name;
    }
    if (valid && !nulls.empty()) {
      fail(error_code::invalid_config, "Null value not supported for topic configs: " + nulls);
      valid = false;
    }

    if (valid) {
      auto err = svc.topics.create(spec, req.validate_only);
      if (!err.ok()) fail(err.code, err.message);
      else {
        out.error_code = error_code::none;
        out.error_message = std::nullopt;  // Kafka's controller: null on success (the schema's "" is never sent)
      }
      if (err.ok() && !req.validate_only && svc.topics.cluster_mode()) created.emplace_back(spec.name, spec.num_partitions);
    }
    if (out.error_code == error_code::none) {
      out.num_partitions = spec.num_partitions;
      out.replication_factor = spec.replication_factor;
      if (auto t = svc.topics.find(ct.name); t && !req.validate_only) out.topic_id = to_wire(t->id);
      if (version >= 5) {
        std::vector<response::creatable_topic_configs> configs;
        for (const auto& key : topic_config_keys()) {
          response::creatable_topic_configs c;
          c.name = std::string(key.name);
          auto it = spec.configs.find(c.name);
          if (it != spec.configs.end()) {
            c.value = it->second;
            c.config_source = kTopicConfig;
          } else {
            c.value = topic_config_default(svc.config, key);
            c.config_source = svc.config.explicit_keys.contains(std::string(key.broker_key)) ? kStaticBrokerConfig
                                                                                            : kDefaultConfig;
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
