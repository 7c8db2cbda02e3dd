#include "broker/group_service.h"

#include <sstream>


#include "base/logging.h"
#include "broker/coordinator/internal_topic.h"
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
  read_int("group.consumer.session.timeout.ms", group_config_.consumer_session_timeout_ms);
  read_int("group.consumer.heartbeat.interval.ms", group_config_.consumer_heartbeat_interval_ms);
  read_int("group.consumer.max.size", group_config_.consumer_max_size);
  if (auto it = config.values.find("group.consumer.assignors"); it != config.values.end()) {
    // A comma-separated list of assignor names (Kafka also takes class names: the built-in ones map to theirs).
    std::vector<std::string> names;
    std::string item;
    std::stringstream in(it->second);
    while (std::getline(in, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (item == "org.apache.kafka.coordinator.group.assignor.UniformAssignor") item = "uniform";
      if (item == "org.apache.kafka.coordinator.group.assignor.RangeAssignor") item = "range";
      if (item.empty()) continue;
      if (!groups::is_known_assignor(item)) {
        log::warn("groups: ignoring unknown assignor {} in group.consumer.assignors", item);
        continue;
      }
      names.push_back(item);
    }
    if (!names.empty()) group_config_.consumer_assignors = std::move(names);
  }
  if (auto it = config.values.find("offsets.retention.minutes"); it != config.values.end()) {
    try {
      group_config_.offsets_retention_ms = std::stoll(it->second) * 60 * 1000;
    } catch (...) {
    }
  }
}

void group_service::start() { (void)runtime_.load(); }

std::unique_ptr<groups::group_coordinator> group_service::make_coordinator(shard& s) {
  s.writer->set_base_sequence(0);  // as Kafka's CoordinatorRuntime stamps __consumer_offsets batches
  auto c = std::make_unique<groups::group_coordinator>(s.part->index(), group_config_, clock_);
  // KIP-848 subscriptions read the topic registry (its lookups are safe from any strand).
  auto describe = [](const topic& t) {
    return groups::topic_metadata{t.name, t.id, static_cast<int32_t>(t.partitions.size())};
  };
  groups::topic_source source;
  source.by_name = [this, describe](const std::string& name) -> std::optional<groups::topic_metadata> {
    auto t = topics_.find(name);
    if (!t) return std::nullopt;
    return describe(*t);
  };
  source.by_id = [this, describe](const groups::topic_uuid& id) -> std::optional<groups::topic_metadata> {
    auto t = topics_.find(id);
    if (!t) return std::nullopt;
    return describe(*t);
  };
  source.all = [this, describe] {
    std::vector<groups::topic_metadata> out;
    for (const auto& t : topics_.all()) {
      if (!t->internal) out.push_back(describe(*t));  // regexes never match internal topics
    }
    return out;
  };
  c->set_topic_source(std::move(source));
  return c;
}

kafka_error group_service::ensure_topic() {
  if (runtime_.loaded() && topics_.find(consumer_offsets_topic)) return {};
  std::lock_guard lock(create_mutex_);
  if (runtime_.loaded() && topics_.find(consumer_offsets_topic)) return {};
  if (runtime_.loaded()) {
    log::warn("groups: {} was deleted; creating it again (its offsets are gone)", consumer_offsets_topic);
    runtime_.reset();
  }
  coordinator::internal_topic_spec spec;
  spec.name = std::string(consumer_offsets_topic);
  spec.partitions = config_.offsets_topic_num_partitions;
  spec.replication_factor = config_.offsets_topic_replication_factor;
  spec.replication_factor_key = "offsets.topic.replication.factor";
  spec.what = "offsets topic";
  spec.configs = {{"cleanup.policy", "compact"}};
  coordinator::set_segment_bytes(spec, config_long(config_, "offsets.topic.segment.bytes", 104857600));
  if (auto err = coordinator::ensure_internal_topic(topics_, spec); !err.ok()) return err;
  (void)runtime_.load();
  return {};
}

void group_service::on_topic_deleted(const std::string& name, int32_t partition_count) {
  if (name == consumer_offsets_topic) {
    // Its groups and offsets are gone with it: the coordinators forget them now (ListGroups, DescribeGroups), and
    // the next FindCoordinator creates the topic again.
    runtime_.reset();
    return;
  }
  for (auto& s : shards()) {
    if (!s || !s->shard) continue;
    asio::co_spawn(
        s->strand(),
        [this, s, name, partition_count]() -> asio::awaitable<void> {
          auto op = group_run(*this, s, [&name, partition_count](groups::group_coordinator& c) {
            return c.on_partitions_deleted(name, partition_count);
          });  // not inside co_await: GCC 12
          co_await std::move(op);
        },
        asio::detached);
  }
}

std::shared_ptr<group_service::shard> group_service::shard_for(std::string_view group_id) const {
  const int32_t n = runtime_.partition_count();
  if (n == 0) return nullptr;
  return runtime_.slot_for(groups::partition_for_group(group_id, n));
}

}  // namespace sluice::broker
