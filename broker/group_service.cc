#include "broker/group_service.h"

#include <unistd.h>

#include "base/logging.h"
#include "broker/groups/partition_for_group.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"
#include "storage/record_batch.h"

namespace sluice::broker {

namespace {

/// The group error for how the wait for an append's replication ended (offsets.commit.required.acks=-1):
/// NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR shrank below min.insync.replicas meanwhile),
/// NOT_LEADER_OR_FOLLOWER (leadership moved) or REQUEST_TIMED_OUT (offsets.commit.timeout.ms passed).
groups::group_error to_group_error(hw_wait_result r) {
  using groups::group_error;
  switch (r) {
    case hw_wait_result::reached: return group_error::none;
    case hw_wait_result::not_enough_replicas: return group_error::not_enough_replicas_after_append;
    case hw_wait_result::not_leader: return group_error::not_leader_or_follower;
    case hw_wait_result::timed_out: return group_error::request_timed_out;
  }
  return group_error::unknown_server_error;
}

/// groups::group_log over a __consumer_offsets partition. Called on the partition's strand only.
class partition_log final : public groups::group_log {
 public:
  partition_log(std::shared_ptr<partition> p, sluice::clock& clock, const broker_config& config,
                const topic_registry& topics)
      : part_(std::move(p)), clock_(clock), config_(config), topics_(topics),
        commit_timeout_ms_(config_long(config, "offsets.commit.timeout.ms", 5000)) {}

  void append(std::vector<groups::group_record> records, std::function<void(groups::group_error)> done) override {
    storage::record_batch_builder builder;
    int64_t now = clock_.now_ms();
    for (const auto& r : records) {
      std::string_view key(reinterpret_cast<const char*>(r.key.data()), r.key.size());
      std::optional<std::string_view> value;
      if (r.value) value = std::string_view(reinterpret_cast<const char*>(r.value->data()), r.value->size());
      builder.add(key, value, now);
    }
    auto batch = builder.build();
    auto t = topics_.find(consumer_offsets_topic);
    const int32_t min_isr = topic_min_insync_replicas(config_, t ? t->configs : std::map<std::string, std::string>{});
    const uint64_t term = part_->leadership_changes();
    auto appended = part_->append(std::span<uint8_t>(batch.data(), batch.size()), -1, min_isr);
    if (!appended) {
      log::warn("groups: append to {}-{} failed: {}", part_->topic(), part_->index(), appended.err().message);
      done(static_cast<groups::group_error>(static_cast<int16_t>(from_storage(appended.err()))));
      return;
    }
    // Until every ISR member has the records (the high watermark passes them): Kafka appends group metadata
    // and offsets with offsets.commit.required.acks=-1 and offsets.commit.timeout.ms, so a commit
    // acknowledged by a coordinator survives its failover. On this strand, as the append.
    part_->wait_for_high_watermark(appended->last_offset + 1, term, min_isr, wait_deadline::after(clock_, commit_timeout_ms_),
                                   [done = std::move(done)](hw_wait_result r) { done(to_group_error(r)); });
  }

 private:
  std::shared_ptr<partition> part_;
  sluice::clock& clock_;
  const broker_config& config_;
  const topic_registry& topics_;
  int64_t commit_timeout_ms_;
};

}  // namespace

group_service::group_service(const broker_config& config, topic_registry& topics, sluice::clock& clock)
    : config_(config), topics_(topics), clock_(clock) {
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
  shards_.store(std::make_shared<const std::vector<std::shared_ptr<shard>>>());
}

void group_service::start() {
  std::lock_guard lock(mutex_);
  if (auto t = topics_.find(consumer_offsets_topic)) load_shards(t->partitions);
}

kafka_error group_service::ensure_topic() {
  if (!shards_.load()->empty()) return {};
  std::lock_guard lock(mutex_);
  if (!shards_.load()->empty()) return {};
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
  load_shards(t->partitions);
  return {};
}

void group_service::load_shards(const std::vector<std::shared_ptr<partition>>& parts) {
  if (!shards_.load()->empty()) return;
  if (static_cast<int32_t>(parts.size()) != config_.offsets_topic_num_partitions) {
    // Kafka requires offsets.topic.num.partitions to match the existing topic; we route by the topic.
    log::warn("groups: {} has {} partitions, offsets.topic.num.partitions is {}; using the topic's count",
              consumer_offsets_topic, parts.size(), config_.offsets_topic_num_partitions);
    group_config_.offsets_topic_num_partitions = static_cast<int32_t>(parts.size());
  }
  auto next = std::make_shared<std::vector<std::shared_ptr<shard>>>();
  for (const auto& p : parts) {
    if (!p) {  // cluster mode: no replica of this partition here, so never its coordinator
      next->push_back(nullptr);
      continue;
    }
    auto s = std::make_shared<shard>();
    s->part = p;
    s->log = std::make_unique<partition_log>(p, clock_, config_, topics_);
    s->coordinator = std::make_unique<groups::group_coordinator>(p->index(), group_config_, clock_, *s->log);
    s->timer = std::make_unique<asio::steady_timer>(p->strand());
    // Requests reaching a shard before its replay ran find it inactive (NOT_COORDINATOR: clients
    // retry); the replay itself runs in one strand task.
    next->push_back(s);
  }
  shards_.store(next);
  for (auto& s : *next) {
    if (!s) continue;
    // Single node: every shard is led here. Cluster mode: a shard loads when its partition's leadership
    // arrives (on_leadership_change), which may be now.
    asio::post(s->strand(), [this, s] {
      if (!s->part->is_leader()) return;
      replay(*s);
      arm_timer(s);
    });
  }
}

void group_service::on_leadership_change(const std::shared_ptr<partition>& p, bool leader) {
  if (p->topic() != consumer_offsets_topic) return;
  if (shards_.load()->empty()) {
    std::lock_guard lock(mutex_);
    if (auto t = topics_.find(consumer_offsets_topic)) load_shards(t->partitions);
    return;  // load_shards replays the shards led here
  }
  auto all = shards_.load();
  if (p->index() >= static_cast<int32_t>(all->size())) return;
  auto s = (*all)[static_cast<size_t>(p->index())];
  if (!s || s->part != p) return;
  asio::post(s->strand(), [this, s, leader] {
    if (leader && s->part->is_leader()) {
      log::info("groups: coordinator for {}-{}: loading", s->part->topic(), s->part->index());
      replay(*s);
      arm_timer(s);
    } else if (!leader) {
      log::info("groups: {}-{} led elsewhere now: unloading its groups", s->part->topic(), s->part->index());
      s->coordinator->unload();
      s->armed.reset();
      s->timer->cancel();
    }
  });
}

void group_service::replay(shard& s) {
  auto& c = *s.coordinator;
  c.begin_loading();
  int64_t offset = s.part->log_start_offset();
  const int64_t end = s.part->log_end_offset();  // a new leader loads everything it has (Kafka: to the LEO)
  size_t records = 0;
  std::vector<uint8_t> buf;
  while (offset < end) {
    auto r = s.part->read_for_follower(offset, 1 << 20, true);
    if (!r || r->region.size == 0 || !r->region.file) {
      if (!r) log::error("groups: replay of {}-{} stopped at {}: {}", s.part->topic(), s.part->index(), offset, r.err().message);
      break;
    }
    buf.resize(static_cast<size_t>(r->region.size));
    ssize_t n = ::pread(r->region.file->fd(), buf.data(), buf.size(), r->region.position);
    if (n != static_cast<ssize_t>(buf.size())) {
      log::error("groups: replay of {}-{}: short read at {}", s.part->topic(), s.part->index(), offset);
      break;
    }
    std::span<const uint8_t> rest(buf.data(), buf.size());
    int64_t next_offset = offset;
    while (rest.size() >= static_cast<size_t>(storage::log_overhead)) {
      auto h = storage::parse_record_batch_header(rest);
      if (!h) break;
      auto batch = rest.first(static_cast<size_t>(h->size_bytes()));
      rest = rest.subspan(batch.size());
      next_offset = h->last_offset() + 1;
      if (h->is_control() || h->compression() != storage::compression_codec::none) continue;
      auto it = storage::record_iterator::open(batch);
      if (!it) continue;
      storage::record_view rv;
      while (it->next(rv)) {
        if (rv.offset < offset || !rv.key) continue;
        groups::bytes key(rv.key->begin(), rv.key->end());
        std::optional<groups::bytes> value;
        if (rv.value) value = groups::bytes(rv.value->begin(), rv.value->end());
        c.replay(key, value);
        ++records;
      }
    }
    if (next_offset <= offset) break;
    offset = next_offset;
  }
  c.finish_loading();
  if (records > 0) log::info("groups: replayed {} records of {}-{}", records, s.part->topic(), s.part->index());
}

std::shared_ptr<group_service::shard> group_service::shard_for(std::string_view group_id) const {
  auto all = shards_.load();
  if (all->empty()) return nullptr;
  return (*all)[static_cast<size_t>(groups::partition_for_group(group_id, static_cast<int32_t>(all->size())))];
}

std::vector<std::shared_ptr<group_service::shard>> group_service::shards() const { return *shards_.load(); }

void group_service::arm_timer(const std::shared_ptr<shard>& s) {
  auto next = s->coordinator->next_deadline();
  if (next == s->armed) return;
  s->armed = next;
  s->timer->cancel();
  if (!next) return;
  int64_t delay = std::max<int64_t>(*next - clock_.monotonic_ms(), 0);
  s->timer->expires_after(std::chrono::milliseconds(delay));
  s->timer->async_wait([this, s, expected = *next](const boost::system::error_code& ec) {
    if (ec || s->armed != expected) return;  // cancelled or superseded
    s->armed.reset();
    s->coordinator->on_timer();
    arm_timer(s);
  });
}

}  // namespace sluice::broker
