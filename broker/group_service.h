#pragma once
// The broker's consumer group coordinators: one groups::group_coordinator per __consumer_offsets
// partition on the coordinator runtime, each owned by that partition's strand, persisted by appending to it.
#include <atomic>
#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/error_map.h"
#include "broker/coordinator/runtime.h"
#include "broker/partition.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::broker {

class topic_registry;

inline constexpr std::string_view consumer_offsets_topic = "__consumer_offsets";

/// The consumer group coordinators on the coordinator runtime (broker/coordinator/runtime.h): one
/// groups::group_coordinator per __consumer_offsets partition, loaded when the partition is led here.
/// Threading: `shard_for`/`shards` may be called from any strand; everything inside a shard is touched only on
/// `shard::strand()`, the __consumer_offsets partition's strand.
class group_service {
 public:
  using runtime = coordinator::coordinator_runtime<groups::group_coordinator>;
  using shard = runtime::slot;

  group_service(const broker_config& config, topic_registry& topics, sluice::clock& clock);

  /// At start-up: if __consumer_offsets exists, replays each partition on its strand.
  void start();
  /// Creates __consumer_offsets (offsets.topic.num.partitions partitions, replication factor
  /// min(offsets.topic.replication.factor, live brokers = 1), cleanup.policy=compact) when missing, and
  /// loads its shards. Errors: the CreateTopics error.
  kafka_error ensure_topic();

  /// Cluster mode: a __consumer_offsets partition became led here (its groups are replayed from its log)
  /// or stopped being led here (its groups are unloaded). Other topics are ignored. Any thread.
  void on_leadership_change(const std::shared_ptr<partition>& p, bool leader) { runtime_.on_leadership_change(p, leader); }

  /// Transactions (KIP-98): a COMMIT (`commit`) or ABORT marker of `producer_id` was appended to
  /// __consumer_offsets partition `partition_index` (partition::append_marker) and is committed. Any thread: on that
  /// partition's strand, after the outcomes of the appends made before it, its coordinator's
  /// `replay_end_txn(producer_id, commit)` makes the producer's pending transactional offsets committed or drops
  /// them (coordinator_runtime::on_txn_marker). Ignored where the partition is not loaded here (a load replays the
  /// marker from the log).
  void on_txn_marker(int32_t partition_index, int64_t producer_id, bool commit) {
    runtime_.on_txn_marker(partition_index, producer_id, commit);
  }

  /// Kafka 4.x (GroupCoordinatorService.onPartitionsDeleted): topic `name` with `partition_count` partitions was
  /// deleted; every coordinator loaded here appends the tombstones of the offsets committed for its partitions
  /// (group_coordinator::on_partitions_deleted), in the background. __consumer_offsets itself is ignored (its
  /// shards go with it). Any thread; returns at once.
  void on_topic_deleted(const std::string& name, int32_t partition_count);

  /// The shard coordinating `group_id` (Kafka's partitionFor), or null while there is no topic or, in
  /// cluster mode, when this broker has no replica of its partition.
  std::shared_ptr<shard> shard_for(std::string_view group_id) const;
  std::vector<std::shared_ptr<shard>> shards() const { return runtime_.slots(); }
  runtime& coordinators() { return runtime_; }

 private:
  std::unique_ptr<groups::group_coordinator> make_coordinator(shard& s);

  const broker_config& config_;
  topic_registry& topics_;
  sluice::clock& clock_;
  groups::group_config group_config_;
  std::mutex create_mutex_;
  runtime runtime_;
};

/// Kafka's clientHost: "/" + the client's address (no port).
inline std::string client_host_of(const std::string& peer) {
  auto colon = peer.rfind(':');
  std::string host = colon == std::string::npos ? peer : peer.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return "/" + host;
}

/// Runs `f(coordinator, reply)` on the shard's strand, where `reply(R)` may be called then or later (on
/// that strand); resumes the calling coroutine on its own executor with the R (coordinator_runtime::call).
template <typename R, typename F>
asio::awaitable<R> group_call(group_service& svc, std::shared_ptr<group_service::shard> s, F f) {
  auto op = svc.coordinators().call<R>(std::move(s), std::move(f));
  co_return co_await std::move(op);
}

/// Runs `op(coordinator)`, which returns a groups::coordinator_result<R>, on the shard's strand; appends its records
/// to __consumer_offsets (acks=-1), replays them once committed, and resumes with the response, or with
/// `failed(error)` when the append failed (coordinator_runtime::write).
template <typename R, typename Op>
asio::awaitable<R> group_write_call(group_service& svc, std::shared_ptr<group_service::shard> s, Op op) {
  return coordinator::write_on<R>(svc.coordinators(), std::move(s), std::move(op));
}

/// Runs `f(coordinator)` (returning a value) on the shard's strand (coordinator_runtime::run).
template <typename F>
auto group_run(group_service& svc, std::shared_ptr<group_service::shard> s, F f) {
  return coordinator::run_on(svc.coordinators(), std::move(s), std::move(f));
}

}  // namespace sluice::broker
