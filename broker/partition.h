#pragma once
// The per-partition façade: leader epoch, log end offset, high watermark, log start offset, append, read,
// and the purgatory of this partition (waits for its high watermark or log end offset).
#include <algorithm>
#include <atomic>

#include "base/metrics.h"
#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/partition_errc.h"
#include "broker/purgatory.h"
#include "storage/log.h"

namespace sluice::broker {

namespace asio = boost::asio;

/// How a wait for the high watermark ended (partition::wait_for_high_watermark).
enum class hw_wait_result : uint8_t {
  reached,              // the high watermark reached the offset with the ISR at min.insync.replicas or more
  not_enough_replicas,  // reached, but the ISR had shrunk below min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND)
  not_leader,           // this replica stopped leading since the append, or was closed (NOT_LEADER_OR_FOLLOWER)
  timed_out,            // the deadline passed first (REQUEST_TIMED_OUT)
};

/// What this broker is for a partition (Kafka's Partition leader/follower state).
enum class replica_role : uint8_t { leader, follower, offline };

/// A follower as its leader sees it (Kafka's Replica state on the leader).
struct follower_progress {
  int32_t broker_id = -1;
  int64_t log_end_offset = -1;    // its last fetch offset; -1 until it fetched under this leader epoch
  int64_t last_caught_up_ms = 0;  // last time its fetch reached the leader's LEO (Kafka's lastCaughtUpTimeMs)
  int64_t log_start_offset = -1;  // its log start as its last fetch reported it (Fetch v5+); -1 until then
};

/// How a wait for the low watermark ended (partition::wait_for_low_watermark, DeleteRecords).
struct low_watermark_wait {
  enum class outcome : uint8_t {
    reached,     // every in-sync replica's log start reached the offset
    not_leader,  // this replica stopped leading, or was closed (NOT_LEADER_OR_FOLLOWER)
    timed_out,   // the deadline passed first (REQUEST_TIMED_OUT)
  } how = outcome::timed_out;
  int64_t low_watermark = -1;  // at the end of the wait
};

/// A proposed ISR change, made by the leader and written to the coordination store by the caller
/// (broker/replication/replica_manager.h); applied with apply_isr() once stored.
struct isr_change {
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr;
  int32_t version = -1;  // the partition-state version the change is based on
};

/// One partition replica held by this broker: the leader, a follower, or offline (no leader known).
///
/// Always held by a std::shared_ptr (waits keep it alive).
///
/// Strand: `strand()`. The log and the replica sets are touched only on it; `closed_` is written only there. The
/// waiter list locks itself: park() and park_committed() may be called from any thread.
/// The offsets, role, leader and leader epoch are atomics written on the strand and readable from anywhere
/// (Metadata, ListOffsets), with the invariant log start offset <= high watermark <= log end offset.
/// High watermark (leader): the smallest LEO over the ISR (the leader's own included); follower: the
/// leader's high watermark as last fetched, capped by its own LEO.
class partition : public std::enable_shared_from_this<partition> {
 public:
  using strand_type = asio::strand<asio::any_io_executor>;

  /// `log` is owned by the storage::log_manager and outlives this object's use of it (close() ends it).
  partition(std::string topic, int32_t index, storage::log* log, asio::any_io_executor executor);

  const std::string& topic() const { return topic_; }
  int32_t index() const { return index_; }
  strand_type& strand() { return strand_; }

  int64_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  int64_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  int64_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  /// The last stable offset (KIP-98): min(high watermark, first offset of the oldest transaction not yet
  /// decided and replicated); what read_committed consumers may see. Equals the HW without transactions.
  int64_t last_stable_offset() const { return last_stable_offset_.load(std::memory_order_acquire); }
  int32_t leader_epoch() const { return leader_epoch_.load(std::memory_order_acquire); }
  replica_role role() const { return role_.load(std::memory_order_acquire); }
  bool is_leader() const { return role() == replica_role::leader; }
  /// The leader's broker id (-1: none known).
  int32_t leader_id() const { return leader_id_.load(std::memory_order_acquire); }
  /// Counts the times this replica stopped leading: an acks=-1 produce waiting for replication fails once
  /// it changes (its records may have been truncated meanwhile); a new leader epoch alone (an ISR change
  /// by the controller) does not fail it, as in Kafka's DelayedProduce.
  uint64_t leadership_changes() const { return leadership_changes_.load(std::memory_order_acquire); }
  /// Size of the ISR as last applied (leader only; readable from anywhere, for Metadata).
  int32_t isr_size() const { return isr_size_.load(std::memory_order_acquire); }
  /// The partition's directory (readable from any thread; changes only when the log moves to another log dir).
  std::filesystem::path dir() const {
    std::lock_guard lock(dir_mutex_);
    return dir_;
  }

  /// Client traffic, for /metrics (Kafka's BrokerTopicMetrics, summed per topic at scrape time): records and
  /// bytes appended by Produce, bytes sent to consumers by Fetch (not to followers). Relaxed atomic adds.
  metrics::counter messages_in, bytes_in, bytes_out;

  // --- on strand() only ---

  // Roles (applied by broker/replication/replica_manager.cc from the cluster's partition states).
  /// Leads at `leader_epoch` with `replicas` and `isr` (the state's version kept for ISR updates). A new
  /// epoch starts at the current LEO in the leader epoch cache. Followers' progress restarts.
  void become_leader(int32_t self_id, int32_t leader_epoch, std::vector<int32_t> replicas, std::vector<int32_t> isr,
                     int32_t state_version, int64_t now_ms);
  /// Follows `leader_id` at `leader_epoch` (-1 leader: offline). Parked fetches and acks=-1 produces are
  /// woken so they answer NOT_LEADER_OR_FOLLOWER.
  void become_follower(int32_t leader_id, int32_t leader_epoch);
  /// Cluster mode, before the replica's state is applied (strand): offline, with the high watermark at the log
  /// start, the only offset known to be committed (Sluice keeps no replication-offset-checkpoint). A replica that
  /// leads again after a restart, even at an unchanged leader epoch, then moves its HW only once every ISR
  /// member's LEO is known, so that a tail it alone holds is never served as committed. (A partition is built as
  /// a single node's: leader, HW at the LEO.)
  void start_as_cluster_replica();
  /// Leader: the ISR as stored (a change made by the controller, or ours confirmed). Ignored for another
  /// epoch.
  void apply_isr(const isr_change& stored);
  std::vector<int32_t> isr() const { return isr_; }
  const std::vector<int32_t>& replicas() const { return replicas_; }
  int32_t state_version() const { return state_version_; }

  /// Leader: a follower fetched at `fetch_offset` (its LEO). Advances the high watermark, wakes waiters.
  /// Returns a proposed ISR expansion when the follower is out of the ISR and has caught up to the high
  /// watermark (Kafka's maybeExpandIsr), unless a change is already pending.
  /// Whether `broker_id` is a replica of this partition other than this broker, while it leads (strand only).
  /// A follower fetch from any other id is NOT_LEADER_OR_FOLLOWER (Kafka's getReplicaOrException).
  bool has_follower(int32_t broker_id) const;
  /// KIP-392 (strand only): the followers a consumer fetching at `offset` could read from, as Kafka's
  /// findPreferredReadReplica filters them: in the ISR, with a log end offset at or past `offset` and a log start
  /// (as their last fetch reported it) at or below it. Empty unless this replica leads.
  std::vector<follower_progress> read_replica_candidates(int64_t offset) const;
  /// `log_start_offset`: the follower's log start as its fetch reported it (-1: not sent; the last one stays).
  std::optional<isr_change> record_follower_fetch(int32_t broker_id, int64_t fetch_offset, int64_t now_ms,
                                                  int64_t log_start_offset = -1);
  /// Leader (strand only): the smallest log start offset over this replica and its in-sync followers (-1 for a
  /// follower that has not reported one under this epoch); Kafka's lowWatermarkIfLeader, which takes the live
  /// replicas. This replica's own log start when it does not lead.
  int64_t low_watermark() const;
  /// DeleteRecords (Kafka's DelayedDeleteRecords): waits until low_watermark() reaches `offset`, so that no
  /// in-sync replica still serves records below it once the delete is acknowledged. Woken by follower fetches
  /// that report a new log start (and every other wake of the partition); ends not_leader at once when this
  /// replica does not lead, timed_out at `until`. Resumes the caller on its own executor.
  asio::awaitable<low_watermark_wait> wait_for_low_watermark(int64_t offset, wait_deadline until);
  /// Leader: proposes removing followers that have not caught up for `lag_max_ms`
  /// (replica.lag.time.max.ms; Kafka's maybeShrinkIsr), unless a change is already pending.
  std::optional<isr_change> propose_isr_shrink(int64_t now_ms, int64_t lag_max_ms);
  /// The pending change was not stored (conflict or error): a new proposal may be made.
  void clear_pending_isr() { isr_change_pending_ = false; }

  /// Follower: appends batches fetched from the leader as they are, then takes the leader's high watermark
  /// (capped by the LEO) and log start offset. Wakes parked replica fetches.
  /// Every follower-side change below is refused (partition_errc::not_leader) unless this replica still
  /// follows at `leader_epoch`: a fetch answered after a role change must not touch the log.
  result<storage::append_result> append_as_follower(std::span<const uint8_t> batches, int64_t leader_high_watermark,
                                                    int64_t leader_log_start_offset, int32_t leader_epoch);
  /// Follower: the leader's high watermark and log start offset from a fetch that carried no records.
  void update_follower_offsets(int64_t leader_high_watermark, int64_t leader_log_start_offset, int32_t leader_epoch);
  /// Follower truncation (KIP-101): removes everything at and above `offset`.
  result<void> truncate_to(int64_t offset, int32_t leader_epoch);
  /// Follower far behind a leader whose log starts at `offset`: empties the log and starts it there.
  result<void> truncate_fully_and_start_at(int64_t offset, int32_t leader_epoch);
  /// The newest leader epoch in the log's epoch cache (-1: none).
  int32_t latest_epoch();
  /// OffsetForLeaderEpoch (leader side): where `epoch` ends in this log.
  storage::epoch_entry end_offset_for_epoch(int32_t epoch);
  /// Reads like read() but up to the LEO (a follower's fetch).
  result<storage::read_result> read_for_follower(int64_t offset, int32_t max_bytes, bool min_one_batch);
  /// Parks a follower's fetch until the LEO passes `offset` (woken at once when it has, or when this replica
  /// does not lead or is closed).
  void park_follower(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset);

  /// Appends record batches as received (base offsets and leader epoch rewritten in place). On a single
  /// node the high watermark follows the log end offset at once. Wakes parked fetches. Errors: storage
  /// errc values (corrupt_message, record_too_large, ...), errc::invalid_record for a control batch sent
  /// by a client (Kafka's LogValidator: only coordinators write control records), errc::not_found after
  /// close().
  /// `origin` coordinator: a coordinator's own write to its internal topic (storage::append_origin).
  /// `rejected`: receives the records the topic's record rules refused (storage::log::append).
  result<storage::append_result> append(std::span<uint8_t> batches,
                                        storage::append_origin origin = storage::append_origin::client,
                                        std::vector<storage::record_error>* rejected = nullptr);
  /// Produce with acks=-1 (KIP-98 min.insync.replicas): as append(), but refused with
  /// partition_errc::not_enough_replicas while the ISR is smaller than `min_insync_replicas`.
  result<storage::append_result> append(std::span<uint8_t> batches, int16_t acks, int32_t min_insync_replicas,
                                        storage::append_origin origin = storage::append_origin::client,
                                        std::vector<storage::record_error>* rejected = nullptr);
  /// WriteTxnMarkers (leader only): a COMMIT/ABORT marker for the producer (storage::log::append_marker).
  /// Errors: partition_errc::not_leader, storage errc (invalid_producer_epoch, coordinator_fenced, io_error).
  result<storage::log::marker_result> append_marker(int64_t producer_id, int16_t producer_epoch,
                                                    const storage::end_txn_marker& marker);

  /// The checks of append_marker (leader, producer epoch, coordinator epoch) without writing anything.
  result<void> check_marker(int64_t producer_id, int16_t producer_epoch, const storage::end_txn_marker& marker);

  /// DescribeProducers (KIP-664): a copy of the producer state of every producer id with state here.
  std::vector<storage::producer_state_entry> producers();

  /// Flush policy (flush.messages / flush.ms): fsyncs when due. Run as its own strand task after an
  /// append, so every append queued on the strand meanwhile shares the one fsync (group commit).
  result<bool> flush_if_needed();
  /// True when the topic sets a flush policy, so produce must wait for flush_if_needed() before acking.
  bool flushes_on_append() const { return flushes_on_append_.load(std::memory_order_acquire); }

  /// Retention: deletes whole segments older than `retention_ms` or beyond `retention_bytes` (-1: no
  /// limit), never the active one nor above the high watermark. Returns the number deleted.
  result<int> enforce_retention(int64_t retention_ms, int64_t retention_bytes);
  /// DeleteRecords (KIP-107): moves the log start offset up to `offset` (-1: the high watermark).
  /// errc::offset_out_of_range when `offset` is above the high watermark. Returns the new log start.
  result<int64_t> delete_records_before(int64_t offset);
  /// Compaction (storage/log_cleaner.h), step 1: storage::log::plan_cleaning bounded by this replica's high
  /// watermark (the leader's as last fetched, on a follower). nullopt when closed or nothing qualifies.
  std::optional<storage::cleaning_plan> plan_cleaning(storage::cleaning_limits limits) const;
  /// Step 3: storage::log::install_cleaned; errc::not_found when closed. Publishes the new size.
  result<int64_t> install_cleaned(const storage::cleaning_result& cleaned);
  /// Applies changed topic configs (segment.bytes, flush.*, message.timestamp.type, ...).
  void update_config(const storage::log_config& config);
  /// Bytes of all segments.
  int64_t size_bytes() const { return size_bytes_.load(std::memory_order_acquire); }

  /// Reads whole batches from `offset`, never above the high watermark. See storage::log::read.
  result<storage::read_result> read(int64_t offset, int32_t max_bytes, bool min_one_batch);
  /// read_committed (Fetch isolation_level 1): never above the last stable offset; `aborted` receives the
  /// aborted transactions overlapping [offset, LSO) (Kafka bounds them by the end of the data read; a superset
  /// is harmless: consumers apply an entry only when they reach its producer's batches).
  result<storage::read_result> read_committed(int64_t offset, int32_t max_bytes, bool min_one_batch,
                                              std::vector<storage::aborted_txn>& aborted);

  /// KIP-79: the first record whose timestamp >= `timestamp_ms` (its timestamp and offset), {-1, -1}
  /// when none is that late.
  result<storage::log::timestamp_and_offset> offset_for_timestamp(int64_t timestamp_ms);
  /// KIP-734: the largest record timestamp and its offset ({-1, -1} for an empty log).
  result<storage::log::timestamp_and_offset> max_timestamp_and_offset();

  /// Parks `waiter` until the high watermark passes `offset`; wakes it at once if it already has (or the
  /// partition is closed). Also woken by a role change and an ISR change. A consumer's long-poll fetch.
  /// Thread-safe (unlike the rest of the partition): a fetch of many partitions parks on each without a strand
  /// hop. The waiter is added, then the high watermark read again, so a move that raced the add still wakes it.
  void park(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset);
  /// The same for a read_committed fetch: until the last stable offset passes `offset`. Thread-safe.
  void park_committed(const std::shared_ptr<purgatory_waiter>& waiter, int64_t offset);

  /// acks=-1 (Kafka's DelayedProduce and checkEnoughReplicasReachOffset; the group coordinator's appends,
  /// offsets.commit.required.acks=-1): waits until the high watermark reaches `offset` (the last offset
  /// appended + 1: every ISR member has the records), then answers `reached`, or `not_enough_replicas` when
  /// the ISR is below `min_insync_replicas` by then. `not_leader` as soon as this replica is not the leader or
  /// `leadership_changes()` differs from `term` (read before the append: its records may have been
  /// truncated), checked first; `timed_out` once `until` passes with neither. Parked on this partition and
  /// re-checked at each wake (appends, HW moves, role and ISR changes), no polling.
  /// On strand() only; `done` is called on strand(), at once when the outcome is known already.
  void wait_for_high_watermark(int64_t offset, uint64_t term, int32_t min_insync_replicas, wait_deadline until,
                               std::function<void(hw_wait_result)> done);
  /// The same from any coroutine: runs on strand() and resumes the caller on its own executor.
  asio::awaitable<hw_wait_result> wait_for_high_watermark(int64_t offset, uint64_t term, int32_t min_insync_replicas,
                                                          wait_deadline until);

  /// AlterReplicaLogDirs (storage::log_manager::move): the log now lives at `moved` (the old one is closed and
  /// gone). Offsets are published again from it.
  void replace_log(storage::log* moved);

  /// Closes the log (flushing it unless `for_deletion`: its files are deleted next); later appends and reads
  /// fail. Returns the directory of the log.
  std::filesystem::path close(bool for_deletion = false);
  bool closed() const { return closed_; }
  /// Flushes the log to disk (fsync).
  result<void> flush();

 private:
  void publish_offsets();
  void wake_waiters();
  void wait_for_low_watermark(int64_t offset, wait_deadline until, std::function<void(low_watermark_wait)> done);
  int64_t isr_min_log_end_offset() const;  // leader: smallest LEO over the ISR
  bool in_isr(int32_t broker_id) const { return std::find(isr_.begin(), isr_.end(), broker_id) != isr_.end(); }
  /// The coroutine form of a strand-only wait: runs `start(done)` on strand() and resumes the caller on its own
  /// executor with what `done` receives (wait_for_high_watermark, wait_for_low_watermark).
  template <class Result, class Start>
  asio::awaitable<Result> strand_awaitable(Start start);
  bool follows_at(int32_t epoch) const { return !closed_ && role() == replica_role::follower && leader_epoch() == epoch; }
  error not_following() const;

  std::string topic_;
  int32_t index_;
  storage::log* log_;  // owned by the log_manager; not touched once closed_ (it may be deleted then)
  mutable std::mutex dir_mutex_;
  std::filesystem::path dir_;  // guarded by dir_mutex_
  strand_type strand_;
  std::atomic<int32_t> leader_epoch_{0};
  std::atomic<replica_role> role_{replica_role::leader};
  std::atomic<int32_t> leader_id_{-1};
  std::atomic<int32_t> isr_size_{1};
  std::atomic<uint64_t> leadership_changes_{0};
  int32_t self_id_ = -1;
  std::vector<int32_t> replicas_;
  std::vector<int32_t> isr_;
  std::vector<follower_progress> followers_;  // leader: every replica but this broker
  int32_t state_version_ = -1;
  bool isr_change_pending_ = false;
  std::atomic<bool> closed_{false};  // written on the strand; read by park() from any thread
  std::atomic<int64_t> log_start_offset_{0};
  std::atomic<int64_t> high_watermark_{0};
  std::atomic<int64_t> last_stable_offset_{0};
  std::atomic<int64_t> log_end_offset_{0};
  std::atomic<int64_t> size_bytes_{0};
  std::atomic<bool> flushes_on_append_{false};
  waiter_list waiters_;
};

}  // namespace sluice::broker
