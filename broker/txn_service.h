#pragma once
// The broker's transaction coordinators (KIP-98): one txn::transaction_coordinator per __transaction_state
// partition on the coordinator runtime the group coordinator uses (broker/coordinator/runtime.h), and the marker
// writer that carries a decided transaction's COMMIT/ABORT markers to every partition of it: appended here for the
// partitions led here, sent as WriteTxnMarkers to their leaders otherwise, retried until written.
#include <boost/asio.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/coordinator/runtime.h"
#include "broker/error_map.h"
#include "broker/partition.h"
#include "broker/txn/transaction_coordinator.h"

namespace sluice::broker {

class topic_registry;
class group_service;
class producer_id_manager;

inline constexpr std::string_view transaction_state_topic = "__transaction_state";

/// Threading: `shard_for`/`shards` from any strand; a shard is touched only on its partition's strand. Markers are
/// written by coroutines on the io executor, which post `markers_written` back to the shard's strand.
class txn_service {
 public:
  using runtime = coordinator::coordinator_runtime<txn::transaction_coordinator>;
  using shard = runtime::slot;

  /// Config keys (Kafka's): transaction.state.log.num.partitions (50), transaction.state.log.replication.factor
  /// (3, cluster mode), transaction.state.log.min.isr (2, cluster mode; a single node uses 1),
  /// transaction.max.timeout.ms, transactional.id.expiration.ms, transaction.abort.timed.out.transaction.cleanup.
  /// interval.ms, transaction.remove.expired.transaction.cleanup.interval.ms, request.timeout.ms (how long a
  /// __transaction_state write or a marker waits for the ISR, 30000).
  txn_service(const broker_config& config, topic_registry& topics, sluice::clock& clock,
              producer_id_manager& producer_ids, group_service& groups, asio::any_io_executor executor);

  /// At start-up: if __transaction_state exists, replays each partition led here.
  void start();
  /// Creates __transaction_state when missing (FindCoordinator key type 1 needs it), then loads its shards.
  /// Errors: COORDINATOR_NOT_AVAILABLE while too few brokers are registered (cluster mode), the CreateTopics error.
  kafka_error ensure_topic();
  /// Cluster mode: a __transaction_state partition became led here (replayed, its prepared transactions completed)
  /// or stopped being led here (unloaded). Other topics are ignored. Any thread.
  void on_leadership_change(const std::shared_ptr<partition>& p, bool leader) { runtime_.on_leadership_change(p, leader); }

  /// Kafka's partitionFor: abs(hashCode(transactional id)) % partitions; -1 while there is no topic.
  int32_t partition_for(std::string_view transactional_id) const;
  /// The shard coordinating `transactional_id`, or null (no topic yet; cluster mode: no replica here).
  std::shared_ptr<shard> shard_for(std::string_view transactional_id) const;
  std::vector<std::shared_ptr<shard>> shards() const { return runtime_.slots(); }
  runtime& coordinators() { return runtime_; }

  /// Appends a COMMIT (`commit`) or ABORT marker of (producer id, epoch) to `p`, led here, and waits until the
  /// ISR has it (acks=-1, Kafka's WriteTxnMarkers append); a marker in __consumer_offsets then completes the
  /// producer's pending offsets in that group shard. Errors: NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH,
  /// TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR.
  /// Any coroutine; resumes on its executor.
  asio::awaitable<protocol::error_code> write_marker(std::shared_ptr<partition> p, int64_t producer_id,
                                                     int16_t producer_epoch, bool commit, int32_t coordinator_epoch);

 private:
  std::unique_ptr<txn::transaction_coordinator> make_coordinator(shard& s);
  /// Writes `job` to every partition (retrying failures every marker_retry_ms while this broker still coordinates
  /// the transaction), then posts markers_written to the coordinator of partition `coordinator_partition`.
  asio::awaitable<void> deliver_markers(int32_t coordinator_partition, txn::marker_job job);
  /// One round: writes the job's marker to each of `partitions`, returns those still to do.
  asio::awaitable<std::vector<txn::topic_partition>> write_round(const txn::marker_job& job,
                                                                 std::vector<txn::topic_partition> partitions);
  /// Whether the coordinator of `coordinator_partition` still waits for these markers (active, same producer
  /// id/epoch, still prepared): a job of a coordinator that was unloaded or moved on stops.
  asio::awaitable<bool> still_wanted(int32_t coordinator_partition, const txn::marker_job& job);

  const broker_config& config_;
  topic_registry& topics_;
  sluice::clock& clock_;
  producer_id_manager& producer_ids_;
  group_service& groups_;
  asio::any_io_executor executor_;
  txn::txn_config txn_config_;
  int32_t num_partitions_ = 50;
  int16_t replication_factor_ = 3;
  int32_t min_isr_ = 2;
  int64_t request_timeout_ms_ = 30000;
  std::mutex create_mutex_;
  runtime runtime_;
};

}  // namespace sluice::broker
