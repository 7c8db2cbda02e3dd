#include "broker/topic_registry.h"

#include <algorithm>
#include <set>

#include "base/logging.h"
#include "broker/call_on.h"
#include "broker/topic_config.h"
#include "broker/topic_name.h"
#include "coordination/replica_assignment.h"

namespace sluice::broker {

using protocol::error_code;

topic_registry::topic_registry(const broker_config& config, coordination::cluster_store& store,
                               storage::log_manager& logs, asio::any_io_executor executor)
    : config_(config), store_(store), logs_(logs), executor_(std::move(executor)),
      topics_(std::make_shared<const topic_map>()) {}

namespace {

/// Partition 0's replica count, its target while it is reassigned (Kafka reports the replication factor so).
int16_t replication_factor_of(const coordination::topic_assignment& a) {
  return a.replicas.empty() ? 1 : static_cast<int16_t>(a.target_replicas(0).size());
}

}  // namespace

std::shared_ptr<topic> topic_registry::topic_without_partitions(const coordination::topic_assignment& a) {
  auto t = std::make_shared<topic>();
  t->name = a.name;
  t->id = a.id;
  t->configs = a.configs;
  t->replication_factor = replication_factor_of(a);
  t->internal = a.name.starts_with("__");
  return t;
}

storage::log_config topic_registry::topic_log_config(const topic& t) const {
  auto log_config = make_log_config(config_, t.configs);
  // Internal topics are written by the broker itself, uncompressed, and read back by the group coordinator,
  // which reads uncompressed batches only: a broker-wide compression.type does not apply to them (Kafka uses
  // offsets.topic.compression.codec, default none, for __consumer_offsets).
  if (t.internal) log_config.compression_type.reset();
  return log_config;
}

std::shared_ptr<const topic> topic_registry::open_topic(const coordination::topic_assignment& a, open_mode mode,
                                                       kafka_error& err) {
  auto t = topic_without_partitions(a);
  const auto log_config = topic_log_config(*t);
  for (int32_t p = 0; p < a.partition_count(); ++p) {
    storage::log* log = mode == open_mode::existing_or_new ? logs_.get(a.name, p) : nullptr;
    // log_manager::load opened every existing log with the broker defaults: the topic's overrides
    // (max.message.bytes, segment.bytes, compression.type, flush.messages, ...) apply from here on.
    if (log) log->update_config(log_config);
    if (!log) {
      auto created = logs_.create(a.name, p, log_config);
      if (!created) {
        err = {error_code::kafka_storage_error, created.err().message};
        log::error("cannot open the log of {}-{}: {}", a.name, p, created.err().message);
        if (mode == open_mode::new_only) {
          // A topic that could not be created leaves nothing behind: no directories, no open files.
          for (const auto& made : t->partitions)
            if (auto r = logs_.remove(a.name, made->index()); !r)
              log::warn("cannot remove {}-{} of a failed creation: {}", a.name, made->index(), r.err().message);
        }
        return nullptr;
      }
      log = *created;
    }
    t->partitions.push_back(std::make_shared<partition>(a.name, p, log, executor_));
  }
  return t;
}

result<void> topic_registry::load() {
  std::lock_guard lock(change_mutex_);
  auto next = std::make_shared<topic_map>();
  for (const auto& a : store_.topics()) {
    kafka_error err;
    auto t = open_topic(a, open_mode::existing_or_new, err);
    if (!t) return error{base_errc::failed, "cannot open topic " + a.name + ": " + err.message};
    next->emplace(a.name, std::move(t));
  }
  publish(std::move(next));
  return {};
}

void topic_registry::publish(std::shared_ptr<const topic_map> next) { topics_.store(std::move(next)); }

std::shared_ptr<const topic> topic_registry::find(std::string_view name) const {
  auto snapshot = topics_.load();
  auto it = snapshot->find(name);
  return it == snapshot->end() ? nullptr : it->second;
}

std::shared_ptr<const topic> topic_registry::find(const coordination::topic_id& id) const {
  auto snapshot = topics_.load();
  for (const auto& [name, t] : *snapshot)
    if (t->id == id) return t;
  return nullptr;
}

std::vector<std::shared_ptr<const topic>> topic_registry::all() const {
  auto snapshot = topics_.load();
  std::vector<std::shared_ptr<const topic>> out;
  out.reserve(snapshot->size());
  for (const auto& [name, t] : *snapshot) out.push_back(t);
  return out;
}

namespace {
/// QuorumController.MAX_PARTITIONS_PER_BATCH: the partitions one CreateTopics topic or CreatePartitions request
/// may add (POLICY_VIOLATION beyond).
std::optional<kafka_error> too_many_partitions(int32_t added) {
  if (added <= 10000) return std::nullopt;
  return kafka_error{error_code::policy_violation, "Excessively large number of partitions per request."};
}

/// The brokers a manual replica assignment may name: the registered ones in cluster mode, this broker alone on
/// a single node.
std::set<int32_t> registered_brokers(const coordination::cluster_snapshot* cluster, int32_t self_id) {
  std::set<int32_t> out;
  if (!cluster) {
    out.insert(self_id);
    return out;
  }
  for (const auto& [id, b] : cluster->brokers) out.insert(id);
  return out;
}

/// Kafka's collision rule (ReplicationControlManager.validateNewTopicNames): a new topic whose name equals an
/// existing topic's once every '.' is replaced by '_' is INVALID_TOPIC_EXCEPTION.
std::optional<kafka_error> collision_error(const std::string& name, const std::string& existing) {
  if (!topic_names_collide(name, existing)) return std::nullopt;
  return kafka_error{error_code::invalid_topic_exception, "Topic '" + name + "' collides with existing topic: " + existing};
}

/// Kafka 4.0's ReplicationControlManager.validateManualPartitionAssignment (coordination::manual_assignment_problem),
/// then the list must have `replication_factor` entries.
std::optional<kafka_error> invalid_manual_assignment(const std::vector<int32_t>& brokers,
                                                     const std::set<int32_t>& registered, int32_t replication_factor) {
  if (auto problem = coordination::manual_assignment_problem(brokers, [&](int32_t b) { return registered.contains(b); }))
    return kafka_error{error_code::invalid_replica_assignment, *problem};
  if (static_cast<int32_t>(brokers.size()) != replication_factor)
    return kafka_error{error_code::invalid_replica_assignment,
                       "The manual partition assignment includes a partition with " + std::to_string(brokers.size()) +
                           " replica(s), but this is not consistent with previous partitions, which have " +
                           std::to_string(replication_factor) + " replica(s)."};
  return std::nullopt;
}
}  // namespace

kafka_error topic_registry::check_new_name(const std::string& name) const {
  if (auto reason = invalid_topic_name_reason(name)) return {error_code::invalid_topic_exception, *reason};
  std::vector<std::string> existing;
  if (cluster_mode()) {
    if (auto c = cluster())
      for (const auto& [n, a] : c->topics) existing.push_back(n);
  } else {
    for (const auto& t : all()) existing.push_back(t->name);
  }
  if (std::find(existing.begin(), existing.end(), name) != existing.end())
    return {error_code::topic_already_exists, "Topic '" + name + "' already exists."};
  for (const auto& e : existing)
    if (auto bad = collision_error(name, e)) return *bad;
  return {};
}

kafka_error topic_registry::create(const topic_spec& spec, bool validate_only, coordination::topic_id* id_out) {
  // Kafka 4.x's order (ReplicationControlManager.createTopics): the name, whether it exists, a collision, the
  // configs, then (createTopic) the assignment or the replication factor before the partition count.
  if (auto bad = check_new_name(spec.name); !bad.ok()) return bad;
  if (auto bad = validate_topic_configs(spec.configs)) return {error_code::invalid_config, *bad};
  if (!spec.assignments && spec.replication_factor < 1)
    return {error_code::invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value."};
  if (!spec.assignments && spec.num_partitions < 1)
    return {error_code::invalid_partitions, "Number of partitions was set to an invalid non-positive value."};
  if (auto bad = too_many_partitions(spec.num_partitions)) return *bad;
  if (spec.assignments) {
    std::set<int32_t> registered;
    if (!cluster_mode()) registered = registered_brokers(nullptr, config_.broker_id);
    else if (auto c = cluster()) registered = registered_brokers(c.get(), config_.broker_id);
    for (const auto& brokers : *spec.assignments)
      if (auto bad = invalid_manual_assignment(brokers, registered, spec.replication_factor)) return *bad;
  }
  if (cluster_mode()) return create_in_cluster(spec, validate_only, id_out);
  if (spec.replication_factor > 1)  // one live broker in the embedded single-node mode
    return {error_code::invalid_replication_factor,
            "Unable to replicate the partition " + std::to_string(spec.replication_factor) +
                " time(s): The target replication factor of " + std::to_string(spec.replication_factor) +
                " cannot be reached because only 1 broker(s) are registered."};

  std::lock_guard lock(change_mutex_);
  if (find(spec.name)) return {error_code::topic_already_exists, "Topic '" + spec.name + "' already exists."};
  if (dropping_.contains(spec.name))
    return {error_code::topic_already_exists, "Topic '" + spec.name + "' is marked for deletion."};
  for (const auto& existing : all())
    if (auto bad = collision_error(spec.name, existing->name)) return *bad;
  if (validate_only) return {};

  coordination::topic_assignment a;
  a.name = spec.name;
  a.id = coordination::random_topic_id();
  if (id_out) *id_out = a.id;
  a.configs = spec.configs;
  a.replicas.assign(static_cast<size_t>(spec.num_partitions), std::vector<int32_t>{config_.broker_id});
  if (auto r = store_.create_topic(a); !r) return {to_kafka(r.err()), r.err().message};
  kafka_error err;
  auto t = open_topic(a, open_mode::new_only, err);
  if (!t) {
    (void)store_.delete_topic(a.name);
    return err;
  }
  auto next = std::make_shared<topic_map>(*topics_.load());
  next->emplace(a.name, std::move(t));
  publish(std::move(next));
  log::info("created topic {} with {} partitions", spec.name, spec.num_partitions);
  return {};
}

asio::awaitable<kafka_error> topic_registry::remove(std::string name, bool rewrite_checkpoints) {
  std::shared_ptr<const topic> t;
  {
    std::lock_guard lock(change_mutex_);
    if (cluster_mode()) {
      // The controller deletes the topic's znodes; every broker drops its logs when the snapshot says so.
      auto c = cluster();
      if (!c || !c->topics.contains(name))
        co_return kafka_error{error_code::unknown_topic_or_partition, "This server does not host this topic-partition."};
      if (auto r = store_.delete_topic(name); !r) co_return kafka_error{to_kafka(r.err()), r.err().message};
      co_return kafka_error{};
    }
    t = find(name);
    if (!t) co_return kafka_error{error_code::unknown_topic_or_partition, "This server does not host this topic-partition."};
    if (auto r = store_.delete_topic(name); !r) co_return kafka_error{to_kafka(r.err()), r.err().message};
    auto next = std::make_shared<topic_map>(*topics_.load());
    next->erase(name);
    dropping_.insert(name);
    publish(std::move(next));
  }
  auto drop_op = drop_local(t, rewrite_checkpoints);  // not inside co_await: GCC 12
  co_await std::move(drop_op);
  co_return kafka_error{};
}

asio::awaitable<void> topic_registry::drop_local(std::shared_ptr<const topic> t, bool rewrite_checkpoints) {
  if (on_deleted_) on_deleted_(t->name, static_cast<int32_t>(t->partitions.size()));
  // Close each log on its own strand so no append or read is running on it, then delete the files.
  // Each log closed on its own strand (no append or read running on it) without an fsync, as its files go next;
  // the checkpoint files are rewritten once for the topic, not per partition.
  bool removed = false;
  for (const auto& p : t->partitions) {
    if (!p) continue;
    auto delete_op = delete_partition_log(t->name, p, /*rewrite_checkpoints=*/false);  // not inside co_await: GCC 12
    removed |= co_await std::move(delete_op);
  }
  if (removed && rewrite_checkpoints)
    if (auto r = logs_.write_checkpoints(); !r) log::warn("deleting {}: writing checkpoints: {}", t->name, r.err().message);
  log::info("deleted topic {}", t->name);
  // Cluster mode: a topic of the same name the last snapshot holds was left out while this drop ran.
  sync_after_drop([&] { dropping_.erase(t->name); });
}

asio::awaitable<bool> topic_registry::delete_partition_log(const std::string& topic, std::shared_ptr<partition> p,
                                                           bool rewrite_checkpoints) {
  auto close_op = call_on(p->strand(), [p] { return p->close(/*for_deletion=*/true); });  // not inside co_await: GCC 12
  co_await std::move(close_op);
  if (auto r = logs_.remove(topic, p->index(), rewrite_checkpoints); !r) {
    log::warn("deleting {}-{}: {}", topic, p->index(), r.err().message);
    co_return false;
  }
  co_return true;
}

void topic_registry::sync_after_drop(const std::function<void()>& unmark) {
  int32_t self = -1;
  {
    std::lock_guard lock(change_mutex_);
    unmark();
    self = self_id_;
  }
  if (cluster_mode())
    if (auto c = cluster()) sync(*c, self);
}

asio::awaitable<void> topic_registry::drop_local_partition(std::string topic, std::shared_ptr<partition> p) {
  auto delete_op = delete_partition_log(topic, p, /*rewrite_checkpoints=*/true);  // not inside co_await: GCC 12
  if (co_await std::move(delete_op)) log::info("deleted the local replica of {}-{}", topic, p->index());
  sync_after_drop([&] { dropping_partitions_.erase({topic, p->index()}); });
}

kafka_error topic_registry::create_in_cluster(const topic_spec& spec, bool validate_only, coordination::topic_id* id_out) {
  auto c = cluster();
  if (!c || !c->registered) return {error_code::not_controller, "This broker is not registered with the cluster."};
  if (c->topics.contains(spec.name)) return {error_code::topic_already_exists, "Topic '" + spec.name + "' already exists."};
  for (const auto& [existing, a] : c->topics)
    if (auto bad = collision_error(spec.name, existing)) return *bad;
  std::vector<coordination::broker_rack> live;
  for (const auto& [id, b] : c->brokers) live.push_back({id, b.rack});
  std::vector<std::vector<int32_t>> chosen;
  if (spec.assignments) {
    chosen = *spec.assignments;  // validated by create()
  } else {
    auto replicas = coordination::assign_replicas(live, spec.num_partitions, spec.replication_factor);
    if (!replicas)
      return {error_code::invalid_replication_factor, "Replication factor: " + std::to_string(spec.replication_factor) +
                                                          " larger than available brokers: " + std::to_string(live.size()) + "."};
    chosen = std::move(*replicas);
  }
  if (validate_only) return {};
  coordination::topic_assignment a;
  a.name = spec.name;
  a.id = coordination::random_topic_id();
  if (id_out) *id_out = a.id;
  a.configs = spec.configs;
  a.replicas = std::move(chosen);
  if (auto r = store_.create_topic(a); !r) return {to_kafka(r.err()), r.err().message};
  log::info("created topic {} with {} partitions, replication factor {}", spec.name, spec.num_partitions,
            spec.replication_factor);
  return {};
}

void topic_registry::sync(const coordination::cluster_snapshot& snapshot, int32_t self_id) {
  std::vector<std::shared_ptr<const topic>> dropped;
  std::vector<std::pair<std::string, std::shared_ptr<partition>>> dropped_partitions;
  {
    std::lock_guard lock(change_mutex_);
    cluster_mode_.store(true, std::memory_order_release);
    self_id_ = self_id;
    auto current = topics_.load();
    auto next = std::make_shared<topic_map>();
    bool changed = false;
    for (const auto& [name, a] : snapshot.topics) {
      // Every topic of the cluster is published, also one with no replica here (all its partitions
      // nullptr): OffsetCommit, DeleteTopics, AlterConfigs, DescribeConfigs, ... may reach any broker and
      // must find it (Kafka answers them from its metadata cache, which holds every topic).
      auto it = current->find(name);
      std::shared_ptr<const topic> existing = it == current->end() ? nullptr : it->second;
      if (existing && existing->id != a.id) {
        dropped.push_back(existing);  // deleted and created again under the same name: opened once the drop ends
        dropping_.insert(name);
        changed = true;
        continue;
      }
      if (!existing && dropping_.contains(name)) continue;  // the old topic's logs are still being deleted
      // A partition has a local replica exactly when this broker is among its replicas (a reassignment adds
      // and removes replicas; KIP-455) and its log is not being deleted.
      auto wanted_here = [&](int32_t p) {
        const auto& r = a.replicas[static_cast<size_t>(p)];
        return std::find(r.begin(), r.end(), self_id) != r.end() && !dropping_partitions_.contains({name, p});
      };
      bool same = existing && existing->partitions.size() == a.replicas.size() && existing->configs == a.configs &&
                  existing->replication_factor == replication_factor_of(a);
      for (int32_t p = 0; same && p < a.partition_count(); ++p)
        same = (existing->partitions[static_cast<size_t>(p)] != nullptr) == wanted_here(p);
      if (same) {
        next->emplace(name, existing);
        continue;
      }
      auto t = topic_without_partitions(a);
      const auto log_config = topic_log_config(*t);
      for (int32_t p = 0; p < a.partition_count(); ++p) {
        std::shared_ptr<partition> part;
        if (existing && p < static_cast<int32_t>(existing->partitions.size())) part = existing->partitions[static_cast<size_t>(p)];
        if (part && !wanted_here(p)) {
          dropping_partitions_.insert({name, p});
          dropped_partitions.emplace_back(name, std::move(part));
          part = nullptr;
        } else if (!part && wanted_here(p)) {
          storage::log* log = logs_.get(a.name, p);
          if (log) log->update_config(log_config);  // loaded at start with the broker defaults
          if (!log) {
            auto created = logs_.create(a.name, p, log_config);
            if (!created) {
              log::error("cannot create log {}-{}: {}", a.name, p, created.err().message);
              t->partitions.push_back(nullptr);
              continue;
            }
            log = *created;
          }
          part = std::make_shared<partition>(a.name, p, log, executor_);
          part->start_as_cluster_replica();  // until its state is applied; not shared yet, so not on the strand
        } else if (part && existing->configs != a.configs) {
          asio::post(part->strand(), [part, log_config] { part->update_config(log_config); });
        }
        t->partitions.push_back(std::move(part));
      }
      next->emplace(name, std::move(t));
      changed = true;
    }
    for (const auto& [name, t] : *current)
      if (!next->contains(name) && std::find(dropped.begin(), dropped.end(), t) == dropped.end()) {
        dropped.push_back(t);
        dropping_.insert(name);
        changed = true;
      }
    if (changed) publish(std::move(next));
  }
  for (auto& t : dropped) {
    log::info("topic {} is gone from the cluster: deleting its local logs", t->name);
    asio::co_spawn(executor_, drop_local(t), asio::detached);
  }
  for (auto& [name, p] : dropped_partitions) {
    log::info("{}-{}: this broker is no longer a replica: deleting its local log", name, p->index());
    asio::co_spawn(executor_, drop_local_partition(name, std::move(p)), asio::detached);
  }
  std::lock_guard lock(snapshot_waiters_mutex_);
  snapshot_waiters_.wake_all();
}

void topic_registry::wake_on_next_snapshot(const std::shared_ptr<purgatory_waiter>& waiter) {
  std::lock_guard lock(snapshot_waiters_mutex_);
  snapshot_waiters_.add(waiter);
}

kafka_error topic_registry::set_configs(const std::string& name, const std::map<std::string, std::string>& overrides,
                                        bool validate_only) {
  if (auto bad = validate_topic_configs(overrides)) return {error_code::invalid_config, *bad};
  std::lock_guard lock(change_mutex_);
  if (cluster_mode()) {
    auto c = cluster();
    if (!c || !c->topics.contains(name)) return {error_code::unknown_topic_or_partition, "Topic " + name + " does not exist."};
    if (validate_only) return {};
    if (auto r = store_.set_topic_configs(name, overrides); !r) return {to_kafka(r.err()), r.err().message};
    return {};  // every broker applies it from the next snapshot (sync)
  }
  auto current = find(name);
  if (!current) return {error_code::unknown_topic_or_partition, "Topic " + name + " does not exist."};
  if (validate_only) return {};
  if (auto r = store_.set_topic_configs(name, overrides); !r) return {to_kafka(r.err()), r.err().message};
  auto changed = std::make_shared<topic>(*current);
  changed->configs = overrides;
  auto next = std::make_shared<topic_map>(*topics_.load());
  (*next)[name] = changed;
  publish(std::move(next));
  const auto log_config = topic_log_config(*changed);
  for (const auto& p : changed->partitions)
    if (p) asio::post(p->strand(), [p, log_config] { p->update_config(log_config); });
  log::info("topic {}: configs changed ({} overrides)", name, overrides.size());
  return {};
}

kafka_error topic_registry::add_partitions(const std::string& name, int32_t new_count,
                                           const std::optional<std::vector<std::vector<int32_t>>>& assignments,
                                           bool validate_only) {
  // Kafka 4.0 answers a bare UnknownTopicOrPartitionException (null message); this is its ZooKeeper-mode text.
  std::lock_guard lock(change_mutex_);
  // Single node: the local topic, this broker the only one registered. Cluster mode: the topic and the
  // registered brokers as the cluster snapshot has them (the partitions may be led anywhere).
  std::shared_ptr<const topic> current;
  std::shared_ptr<const coordination::cluster_snapshot> cluster_now;
  const coordination::topic_assignment* assigned = nullptr;
  std::set<int32_t> registered;
  int32_t old_count = 0;
  int32_t replication_factor = 1;
  coordination::topic_assignment from_store;
  if (cluster_mode()) {
    cluster_now = cluster();
    if (!cluster_now) return {error_code::unknown_topic_or_partition, "The topic '" + name + "' does not exist."};
    if (auto it = cluster_now->topics.find(name); it != cluster_now->topics.end()) {
      assigned = &it->second;
    } else {
      // Not in this broker's snapshot yet (created a moment ago, e.g. by a CreateTopics with timeout 0):
      // read the store, as Kafka's ZooKeeper-mode CreatePartitions reads the assignment from ZooKeeper.
      for (auto& a : store_.topics())
        if (a.name == name) from_store = std::move(a);
      if (from_store.name != name)
        return {error_code::unknown_topic_or_partition, "The topic '" + name + "' does not exist."};
      assigned = &from_store;
    }
    old_count = assigned->partition_count();
    replication_factor = assigned->replicas.empty() ? 1 : static_cast<int32_t>(assigned->replicas[0].size());
    registered = registered_brokers(cluster_now.get(), config_.broker_id);
  } else {
    current = find(name);
    if (!current) return {error_code::unknown_topic_or_partition, "The topic '" + name + "' does not exist."};
    old_count = static_cast<int32_t>(current->partitions.size());
    replication_factor = current->replication_factor;
    registered = registered_brokers(nullptr, config_.broker_id);
  }
  if (new_count == old_count)
    return {error_code::invalid_partitions, "Topic already has " + std::to_string(old_count) + " partition(s)."};
  if (new_count < old_count)
    return {error_code::invalid_partitions, "The topic " + name + " currently has " + std::to_string(old_count) +
                                                " partition(s); " + std::to_string(new_count) +
                                                " would not be an increase."};
  const int32_t additional = new_count - old_count;
  if (auto bad = too_many_partitions(additional)) return *bad;

  std::vector<std::vector<int32_t>> replicas;
  if (assignments) {
    if (static_cast<int32_t>(assignments->size()) != additional)
      return {error_code::invalid_replica_assignment,
              "Attempted to add " + std::to_string(additional) + " additional partition(s), but only " +
                  std::to_string(assignments->size()) + " assignment(s) were specified."};
    for (const auto& brokers : *assignments)
      if (auto bad = invalid_manual_assignment(brokers, registered, replication_factor)) return *bad;
    replicas = *assignments;
  } else if (assigned) {
    std::vector<coordination::broker_rack> live;
    for (const auto& [id, b] : cluster_now->brokers) live.push_back({id, b.rack});
    auto added = coordination::assign_added_partitions(live, assigned->replicas, new_count);
    if (!added)
      return {error_code::invalid_replication_factor, "Replication factor: " + std::to_string(replication_factor) +
                                                          " larger than available brokers: " + std::to_string(live.size()) + "."};
    replicas = std::move(*added);
  } else {
    replicas.assign(static_cast<size_t>(additional), std::vector<int32_t>{config_.broker_id});
  }
  if (validate_only) return {};
  if (assigned) {
    // Cluster mode: the controller creates the new partitions' states; every replica opens its log from
    // the next snapshot (sync).
    if (auto r = store_.add_partitions(name, replicas); !r) return {to_kafka(r.err()), r.err().message};
    log::info("topic {}: partitions increased from {} to {}", name, old_count, new_count);
    return {};
  }

  // Kafka allows growing internal topics too (its tools warn); group routing keeps the count it started with.
  if (current->internal)
    log::warn("adding partitions to internal topic {}: groups are routed by its partition count at start", name);
  auto grown = std::make_shared<topic>(*current);
  const auto log_config = topic_log_config(*current);
  auto drop_new_logs = [&] {
    for (auto p = static_cast<size_t>(old_count); p < grown->partitions.size(); ++p)
      if (auto r = logs_.remove(name, static_cast<int32_t>(p)); !r) log::warn("removing {}-{}: {}", name, p, r.err().message);
  };
  for (int32_t p = old_count; p < new_count; ++p) {
    auto created = logs_.create(name, p, log_config);
    if (!created) {
      drop_new_logs();
      return {error_code::kafka_storage_error, created.err().message};
    }
    grown->partitions.push_back(std::make_shared<partition>(name, p, *created, executor_));
  }
  if (auto r = store_.add_partitions(name, replicas); !r) {
    drop_new_logs();
    return {to_kafka(r.err()), r.err().message};
  }
  auto next = std::make_shared<topic_map>(*topics_.load());
  (*next)[name] = std::move(grown);
  publish(std::move(next));
  log::info("topic {}: partitions increased from {} to {}", name, old_count, new_count);
  return {};
}

void topic_registry::write_checkpoints() {
  if (auto r = logs_.write_checkpoints(); !r) log::warn("writing checkpoints: {}", r.err().message);
}

void topic_registry::close_all() {
  for (const auto& t : all())
    for (const auto& p : t->partitions)
      if (p) p->close();
}

}  // namespace sluice::broker
