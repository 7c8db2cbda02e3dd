#include "broker/coordinator/internal_topic.h"

#include <algorithm>

#include "base/logging.h"
#include "broker/topic_registry.h"

namespace sluice::broker::coordinator {

kafka_error ensure_internal_topic(topic_registry& topics, const internal_topic_spec& spec) {
  if (topics.find(spec.name)) return {};
  topic_spec create;
  create.name = spec.name;
  create.num_partitions = spec.partitions;
  create.replication_factor = 1;
  create.configs = spec.configs;
  if (auto c = topics.cluster(); c && topics.cluster_mode()) {
    const auto live = static_cast<int16_t>(std::min<size_t>(c->brokers.size(), INT16_MAX));
    if (live < spec.replication_factor) {
      const std::string why = "Number of alive brokers '" + std::to_string(live) +
                              "' does not meet the required replication factor '" +
                              std::to_string(spec.replication_factor) + "' for the " + spec.what +
                              " (configured via '" + spec.replication_factor_key +
                              "'). This error can be ignored if the cluster is starting up and not all brokers are up yet.";
      log::warn("{}: {}", spec.name, why);
      return {protocol::error_code::coordinator_not_available, why};
    }
    create.replication_factor = spec.replication_factor;
    for (const auto& [k, v] : spec.cluster_configs) create.configs[k] = v;
  }
  auto err = topics.create(create, false);
  if (!err.ok() && err.code != protocol::error_code::topic_already_exists) {
    log::error("cannot create {}: {}", spec.name, err.message);
    return err;
  }
  auto t = topics.find(spec.name);  // cluster mode: only once the snapshot brought it back
  if (!t) return {protocol::error_code::coordinator_not_available, spec.name + " is being created"};
  log::info("created {} with {} partitions", spec.name, t->partitions.size());
  return {};
}

void set_segment_bytes(internal_topic_spec& spec, int64_t bytes) {
  constexpr int64_t segment_bytes_minimum = 1048576;
  spec.configs[bytes >= segment_bytes_minimum ? "segment.bytes" : "internal.segment.bytes"] = std::to_string(bytes);
}

}  // namespace sluice::broker::coordinator
