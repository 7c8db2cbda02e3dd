#include "broker/txn_service.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/logging.h"
#include "broker/call_on.h"
#include "broker/coordinator/internal_topic.h"
#include "broker/group_service.h"
#include "broker/groups/partition_for_group.h"
#include "broker/producer_id_manager.h"
#include "broker/replication/broker_client.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"
#include "protocol/messages/write_txn_markers.h"
#include "storage/control_record.h"

namespace sluice::broker {

namespace {

constexpr int64_t marker_retry_ms = 100;       // Kafka's TransactionMarkerChannelManager retries each round
constexpr int64_t marker_retry_max_ms = 2000;  // ... and backs off up to this between rounds
constexpr int16_t write_txn_markers_version = 1;

}  // namespace

txn_service::txn_service(const broker_config& config, topic_registry& topics, sluice::clock& clock,
                         producer_id_manager& producer_ids, group_service& groups, asio::any_io_executor executor)
    : config_(config), topics_(topics), clock_(clock), producer_ids_(producer_ids), groups_(groups),
      executor_(std::move(executor)),
      runtime_(std::string(transaction_state_topic), topics, clock, config_long(config, "request.timeout.ms", 30000),
               [this] {
                 auto t = topics_.find(transaction_state_topic);
                 return topic_min_insync_replicas(config_, t ? t->configs : std::map<std::string, std::string>{});
               },
               [this](shard& s) { return make_coordinator(s); },
               [this](size_t partitions) {
                 if (static_cast<int32_t>(partitions) == num_partitions_) return;
                 log::warn("txn: {} has {} partitions, transaction.state.log.num.partitions is {}; using the topic's",
                           transaction_state_topic, partitions, num_partitions_);
               }) {
  // Values are validated by broker/config.cc (make_config), which also supplies Kafka's defaults.
  num_partitions_ = static_cast<int32_t>(config_long(config, "transaction.state.log.num.partitions", num_partitions_));
  replication_factor_ =
      static_cast<int16_t>(config_long(config, "transaction.state.log.replication.factor", replication_factor_));
  min_isr_ = static_cast<int32_t>(config_long(config, "transaction.state.log.min.isr", min_isr_));
  request_timeout_ms_ = config_long(config, "request.timeout.ms", request_timeout_ms_);
  txn_config_.max_timeout_ms =
      static_cast<int32_t>(config_long(config, "transaction.max.timeout.ms", txn_config_.max_timeout_ms));
  txn_config_.transactional_id_expiration_ms =
      config_long(config, "transactional.id.expiration.ms", txn_config_.transactional_id_expiration_ms);
  txn_config_.abort_timed_out_check_interval_ms = config_long(
      config, "transaction.abort.timed.out.transaction.cleanup.interval.ms", txn_config_.abort_timed_out_check_interval_ms);
  txn_config_.remove_expired_check_interval_ms = config_long(
      config, "transaction.remove.expired.transaction.cleanup.interval.ms", txn_config_.remove_expired_check_interval_ms);
}

void txn_service::start() { (void)runtime_.load(); }

std::unique_ptr<txn::transaction_coordinator> txn_service::make_coordinator(shard& s) {
  const int32_t index = s.part->index();
  auto part = s.part;
  return std::make_unique<txn::transaction_coordinator>(
      index, txn_config_, clock_, [this] { return producer_ids_.generate_producer_id(); },
      [part] { return part->leader_epoch(); },
      [this, index](txn::marker_job job) {
        auto run = deliver_markers(index, std::move(job));
        asio::co_spawn(executor_, std::move(run), asio::detached);
      });
}

kafka_error txn_service::ensure_topic() {
  if (runtime_.loaded() && topics_.find(transaction_state_topic)) return {};
  std::lock_guard lock(create_mutex_);
  if (runtime_.loaded() && topics_.find(transaction_state_topic)) return {};
  if (runtime_.loaded()) {
    log::warn("txn: {} was deleted; creating it again (its transactions are gone)", transaction_state_topic);
    runtime_.reset();
  }
  coordinator::internal_topic_spec spec;
  spec.name = std::string(transaction_state_topic);
  spec.partitions = num_partitions_;
  spec.replication_factor = replication_factor_;
  spec.replication_factor_key = "transaction.state.log.replication.factor";
  spec.what = "transactions state topic";
  // Kafka's TransactionLog topic configs; min.insync.replicas from transaction.state.log.min.isr (cluster mode:
  // a single node has one replica, so it keeps the broker's min.insync.replicas, 1 by default).
  spec.configs = {{"cleanup.policy", "compact"}, {"compression.type", "uncompressed"}, {"unclean.leader.election.enable", "false"}};
  spec.cluster_configs = {{"min.insync.replicas", std::to_string(min_isr_)}};
  coordinator::set_segment_bytes(spec, config_long(config_, "transaction.state.log.segment.bytes", 104857600));
  if (auto err = coordinator::ensure_internal_topic(topics_, spec); !err.ok()) return err;
  (void)runtime_.load();
  return {};
}

int32_t txn_service::partition_for(std::string_view transactional_id) const {
  const int32_t n = runtime_.partition_count();
  if (n == 0) return -1;
  return groups::partition_for_group(transactional_id, n);  // the same hash Kafka uses for both
}

std::shared_ptr<txn_service::shard> txn_service::shard_for(std::string_view transactional_id) const {
  const int32_t index = partition_for(transactional_id);
  return index < 0 ? nullptr : runtime_.slot_for(index);
}

// ---------------------------------------------------------------------------------------------------
// Markers

asio::awaitable<protocol::error_code> txn_service::write_marker(std::shared_ptr<partition> p, int64_t producer_id,
                                                                int16_t producer_epoch, bool commit,
                                                                int32_t coordinator_epoch) {
  const uint64_t term = p->leadership_changes();
  storage::end_txn_marker marker{commit, coordinator_epoch};
  auto append_op = call_on(p->strand(), [p, producer_id, producer_epoch, marker] {
    return p->append_marker(producer_id, producer_epoch, marker);
  });
  auto appended = co_await std::move(append_op);
  if (!appended) {
    log::debug("txn marker for producer {} in {}-{}: {}", producer_id, p->topic(), p->index(), appended.err().message);
    co_return to_kafka(appended.err());
  }
  auto t = topics_.find(p->topic());
  const int32_t min_isr = topic_min_insync_replicas(config_, t ? t->configs : std::map<std::string, std::string>{});
  auto wait_op = p->wait_for_high_watermark(appended->offset + 1, term, min_isr,
                                            wait_deadline::after(clock_, request_timeout_ms_));
  const hw_wait_result waited = co_await std::move(wait_op);
  const protocol::error_code e = to_kafka(waited);
  if (e == protocol::error_code::none && p->topic() == consumer_offsets_topic) {
    groups_.on_txn_marker(p->index(), producer_id, commit);
  }
  co_return e;
}

asio::awaitable<std::vector<txn::topic_partition>> txn_service::write_round(const txn::marker_job& job,
                                                                            std::vector<txn::topic_partition> partitions) {
  using protocol::error_code;
  std::vector<txn::topic_partition> left;
  std::map<int32_t, std::vector<txn::topic_partition>> remote;  // by leader broker id
  auto cluster = topics_.cluster_mode() ? topics_.cluster() : nullptr;
  for (auto& tp : partitions) {
    auto t = topics_.find(tp.topic);
    if (!t) continue;  // the topic was deleted: nothing to mark (Kafka drops such partitions too)
    if (tp.partition < 0 || tp.partition >= static_cast<int32_t>(t->partitions.size())) continue;
    auto p = t->partitions[static_cast<size_t>(tp.partition)];
    if (p && p->is_leader()) {
      auto op = write_marker(p, job.producer_id, job.producer_epoch, job.commit, job.coordinator_epoch);
      const error_code e = co_await std::move(op);
      if (e == error_code::none) continue;
      if (e == error_code::invalid_producer_epoch || e == error_code::transaction_coordinator_fenced) {
        // A newer epoch or coordinator already wrote here: this marker is superseded (Kafka logs and drops it).
        log::warn("txn {}: marker for {}-{} refused (error {}), dropping it", job.transactional_id, tp.topic,
                  tp.partition, static_cast<int>(e));
        continue;
      }
      left.push_back(tp);
      continue;
    }
    const auto* st = cluster ? cluster->state(tp.topic, tp.partition) : nullptr;
    if (!st || st->leader < 0 || st->leader == config_.broker_id) {
      left.push_back(tp);  // no leader yet, or leadership arriving here: next round
      continue;
    }
    remote[st->leader].push_back(tp);
  }
  for (auto& [broker_id, tps] : remote) {
    auto b = cluster->brokers.find(broker_id);
    if (b == cluster->brokers.end()) {
      left.insert(left.end(), tps.begin(), tps.end());
      continue;
    }
    protocol::write_txn_markers_request req;
    protocol::write_txn_markers_request::writable_txn_marker m;
    m.producer_id = job.producer_id;
    m.producer_epoch = job.producer_epoch;
    m.transaction_result = job.commit;
    m.coordinator_epoch = job.coordinator_epoch;
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const auto& tp : tps) by_topic[tp.topic].push_back(tp.partition);
    for (auto& [name, parts] : by_topic) m.topics.push_back({name, parts, {}});
    req.markers.push_back(std::move(m));
    broker_client client(executor_, "sluice-txn-markers-" + std::to_string(config_.broker_id));
    auto connect_op = client.connect(b->second.host, static_cast<uint16_t>(b->second.port), std::chrono::milliseconds(5000));
    auto connected = co_await std::move(connect_op);
    if (!connected) {
      log::debug("txn {}: markers to broker {}: {}", job.transactional_id, broker_id, connected.err().message);
      left.insert(left.end(), tps.begin(), tps.end());
      continue;
    }
    auto call_op = client.call<protocol::write_txn_markers_request, protocol::write_txn_markers_response>(
        write_txn_markers_version, req, std::chrono::milliseconds(request_timeout_ms_ + 5000));
    auto answer = co_await std::move(call_op);
    client.close();
    if (!answer) {
      left.insert(left.end(), tps.begin(), tps.end());
      continue;
    }
    std::set<txn::topic_partition> done;
    for (const auto& mr : answer->markers) {
      for (const auto& tr : mr.topics) {
        for (const auto& pr : tr.partitions) {
          const error_code e = pr.error_code;
          if (e == error_code::none || e == error_code::unknown_topic_or_partition ||
              e == error_code::invalid_producer_epoch || e == error_code::transaction_coordinator_fenced) {
            done.insert({tr.name, pr.partition_index});
          }
        }
      }
    }
    for (const auto& tp : tps)
      if (!done.count(tp)) left.push_back(tp);
  }
  co_return left;
}

asio::awaitable<bool> txn_service::still_wanted(int32_t coordinator_partition, const txn::marker_job& job) {
  auto s = runtime_.slot_for(coordinator_partition);
  if (!s) co_return false;
  auto op = runtime_.run(s, [job](txn::transaction_coordinator& c) {
    if (c.state() != txn::transaction_coordinator::load_state::active) return false;
    const auto* m = c.find(job.transactional_id);
    const auto prepared = job.commit ? txn::txn_state::prepare_commit : txn::txn_state::prepare_abort;
    return m && m->state == prepared && m->producer_id == job.producer_id && m->producer_epoch == job.producer_epoch;
  });
  co_return co_await std::move(op);
}

asio::awaitable<void> txn_service::deliver_markers(int32_t coordinator_partition, txn::marker_job job) {
  std::vector<txn::topic_partition> todo = job.partitions;
  int64_t backoff = marker_retry_ms;
  asio::steady_timer timer(executor_);
  while (!todo.empty()) {
    auto round = write_round(job, std::move(todo));
    todo = co_await std::move(round);
    if (todo.empty()) break;
    timer.expires_after(std::chrono::milliseconds(backoff));
    boost::system::error_code ec;
    auto wait_op = timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_await std::move(wait_op);
    backoff = std::min(backoff * 2, marker_retry_max_ms);
    auto wanted_op = still_wanted(coordinator_partition, job);
    if (!co_await std::move(wanted_op)) {
      log::info("txn {}: no longer coordinated here, leaving its markers to the next coordinator",
                job.transactional_id);
      co_return;
    }
    log::debug("txn {}: {} partitions still without their marker, retrying", job.transactional_id, todo.size());
  }
  auto s = runtime_.slot_for(coordinator_partition);
  if (!s) co_return;
  auto op = runtime_.run(s, [job](txn::transaction_coordinator& c) {
    c.markers_written(job);
    return 0;
  });
  (void)co_await std::move(op);
}

}  // namespace sluice::broker
