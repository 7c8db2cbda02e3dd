#include "broker/group_service.h"


#include "base/logging.h"
#include "broker/groups/partition_for_group.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"

namespace sluice::broker {

group_service::group_service(const broker_config& config, topic_registry& topics, sluice::clock& clock)
    : config_(config), topics_(topics), clock_(clock),
      runtime_(std::string(consumer_offsets_topic), topics, clock, config_long(config, "offsets.commit.timeout.ms", 5000),
               [this] {
                 auto t = topics_.find(consumer_offsets_topic);
                 return topic_min_insync_replicas(config_, t ? t->configs : std::map<std::string, std::string>{});
               },
               [this](shard& s) { return make_coordinator(s); },
               [this](size_t partitions) {
                 if (static_cast<int32_t>(partitions) == config_.offsets_topic_num_partitions) return;
                 // Kafka requires offsets.topic.num.partitions to match the existing topic; we route by the topic.
                 log::warn("groups: {} has {} partitions, offsets.topic.num.partitions is {}; using the topic's count",
                           consumer_offsets_topic, partitions, config_.offsets_topic_num_partitions);
                 group_config_.offsets_topic_num_partitions = static_cast<int32_t>(partitions);
               }) {
  group_config_.initial_rebalance_delay_ms = config.group_initial_rebalance_delay_ms;
  group_config_.offsets_topic_num_partitions = config.offsets_topic_num_partitions;
  auto read_int = [&](const char* key, auto& field) {
    auto it = config.values.find(key);
    if (it == config.values.end()) return;
    try {
      field = static_cast<std::remove_reference_t<decltype(field)>>(std::stoll(it->second));
    } catch (...) {
      log::warn("groups: ignoring bad {}={}", key, it->second);
    }
  };
  read_int("group.min.session.timeout.ms", group_config_.min_session_timeout_ms);
  read_int("group.max.session.timeout.ms", group_config_.max_session_timeout_ms);
  read_int("group.max.size", group_config_.max_size);
  read_int("offsets.retention.check.interval.ms", group_config_.offsets_retention_check_interval_ms);
  read_int("offset.metadata.max.bytes", group_config_.offset_metadata_max_bytes);
  if (auto it = config.values.find("offsets.retention.minutes"); it != config.values.end()) {
    try {
      group_config_.offsets_retention_ms = std::stoll(it->second) * 60 * 1000;
    } catch (...) {
    }
  }
}

void group_service::start() { (void)runtime_.load(); }

std::unique_ptr<groups::group_coordinator> group_service::make_coordinator(shard& s) {
  return std::make_unique<groups::group_coordinator>(s.part->index(), group_config_, clock_);
}

kafka_error group_service::ensure_topic() {
  if (runtime_.loaded()) return {};
  std::lock_guard lock(create_mutex_);
  if (runtime_.loaded()) return {};
  auto t = topics_.find(consumer_offsets_topic);
  if (!t) {
    topic_spec spec;
    spec.name = std::string(consumer_offsets_topic);
    spec.num_partitions = config_.offsets_topic_num_partitions;
    // Single node: one replica whatever offsets.topic.replication.factor says (the embedded mode has one
    // broker; Kafka would refuse forever). Cluster mode, as Kafka: not created until that many brokers are
    // registered, so a cluster starting up does not get a __consumer_offsets with fewer replicas for good.
    spec.replication_factor = 1;
    if (auto c = topics_.cluster(); c && topics_.cluster_mode()) {
      const auto live = static_cast<int16_t>(std::min<size_t>(c->brokers.size(), INT16_MAX));
      if (live < config_.offsets_topic_replication_factor) {
        const std::string why = "Number of alive brokers '" + std::to_string(live) +
                                "' does not meet the required replication factor '" +
                                std::to_string(config_.offsets_topic_replication_factor) +
                                "' for the offsets topic (configured via 'offsets.topic.replication.factor')";
        log::warn("groups: {}", why);
        return {protocol::error_code::coordinator_not_available, why};
      }
      spec.replication_factor = config_.offsets_topic_replication_factor;
    }
    spec.configs = {{"cleanup.policy", "compact"}};
    auto err = topics_.create(spec, false);
    if (!err.ok() && err.code != protocol::error_code::topic_already_exists) {
      log::error("groups: cannot create {}: {}", consumer_offsets_topic, err.message);
      return err;
    }
    t = topics_.find(consumer_offsets_topic);  // cluster mode: only once the snapshot brought it back
    if (!t) return {protocol::error_code::coordinator_not_available, "__consumer_offsets not available yet"};
    log::info("groups: created {} with {} partitions", consumer_offsets_topic, t->partitions.size());
  }
  (void)runtime_.load();
  return {};
}

std::shared_ptr<group_service::shard> group_service::shard_for(std::string_view group_id) const {
  const int32_t n = runtime_.partition_count();
  if (n == 0) return nullptr;
  return runtime_.slot_for(groups::partition_for_group(group_id, n));
}

}  // namespace sluice::broker
