#pragma once
// The classic consumer group coordinator (Kafka's GroupCoordinator / GroupMetadataManager) for the groups
// of one __consumer_offsets partition: a deterministic state machine.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "broker/groups/consumer_group.h"
#include "broker/groups/consumer_records.h"
#include "broker/groups/group.h"
#include "broker/groups/group_types.h"
#include "broker/groups/group_write.h"
#include "broker/groups/record_codec.h"

namespace sluice::groups {

/// Coordinator of the groups that hash to one __consumer_offsets partition (`partition_for_group`), or
/// of every group when constructed with partition -1 (tests, single-instance setups).
///
/// Threading: NOT thread-safe. One strand owns each instance: the broker creates one asio strand per
/// __consumer_offsets partition and calls every member function, and runs every write's completion
/// and replay, on that strand. Callbacks passed in are invoked on that strand too, after the call that completes
/// them has updated the state (never in the middle of a transition), and may call back into the
/// coordinator.
///
/// Time: deadlines use clock::monotonic_ms(); record timestamps and offset retention use
/// clock::now_ms(). The owner arms a timer for `next_deadline()` and calls `on_timer()` when it fires
/// (and re-arms after every call, since any call may move the deadline).
///
/// Lifecycle: starts inactive (every API answers NOT_COORDINATOR). When this broker becomes leader of
/// the partition: `begin_loading()`, `replay()` every record of the partition in offset order,
/// `finish_loading()`. When it stops being leader: `unload()`. Keep the object alive while writes it
/// queued may still complete.
///
/// Persistence (Kafka's CoordinatorShard shape, group_write.h): the coordinator never writes. OffsetCommit,
/// DeleteGroups and OffsetDelete return a `coordinator_result` (the records and the answer); what a timer or
/// another member started (the leader's assignment, a static member's new member id, an emptied group, expired
/// offsets) is queued as a `group_write` for `take_writes()`. The owner appends each as one batch, waits until
/// it is committed, calls `replay()` for each of its records, then answers. Committed offsets change, and
/// deleted groups leave memory, only in `replay()`: as in Kafka, an OffsetCommit is visible to OffsetFetch
/// once committed, and a coordinator rebuilt from the log holds what the live one held. Membership (members,
/// generation, assignment) is the live state machine's own: its group metadata record is a snapshot of it for
/// reloading, so replaying one into an active coordinator changes nothing (Kafka's classic groups write theirs
/// with replayRecords=false). SyncGroup (leader) answers after its append, as Kafka does.
class group_coordinator {
 public:
  enum class load_state { inactive, loading, active };

  /// Kafka's numbers, for the runtime's append outcomes (coordinator_shard).
  using error_type = group_error;
  /// A replayed record's offset and producer (coordinator_shard's optional extra).
  using record_context = groups::record_context;

  /// `uuid` makes the random part of new member ids (default: random UUID v4 text).
  group_coordinator(int32_t partition, group_config config, const sluice::clock& clock,
                    std::function<std::string()> uuid = {});
  ~group_coordinator();
  group_coordinator(const group_coordinator&) = delete;
  group_coordinator& operator=(const group_coordinator&) = delete;

  // ---- ownership of the partition (group_coordinator.cc) ----
  void begin_loading();
  /// Applies one __consumer_offsets record (last record per key wins; no value = tombstone). While loading
  /// it rebuilds the partition's groups; once active it applies a committed record this coordinator asked
  /// for (an offset commit sets the offset; offset and group tombstones remove them, and a deleted group
  /// leaves memory with its last offset); inactive, it ignores it. Undecodable records are logged and skipped.
  void replay(const bytes& key, const std::optional<bytes>& value) { replay(key, value, record_context{}); }
  /// The same with the record's offset and its batch's producer (Kafka's OffsetMetadataManager.replay): an offset
  /// commit of a transactional batch is a pending transactional offset of that producer (not visible to OffsetFetch,
  /// OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for its partition) until replay_end_txn; an
  /// offset tombstone also drops the pending transactional offsets of its partition.
  void replay(const bytes& key, const std::optional<bytes>& value, const record_context& ctx);
  /// A COMMIT (`commit`) or ABORT marker of `producer_id` in this partition (Kafka's replayEndTransactionMarker):
  /// COMMIT makes the producer's pending offsets committed, each only where it is newer (by record offset) than the
  /// committed offset of its partition (a plain commit written after it wins); ABORT drops them. A producer without
  /// pending offsets here: nothing. While loading it applies to the records replayed so far; inactive, ignored.
  void replay_end_txn(int64_t producer_id, bool commit);
  /// The appends queued since the last call (group_write.h), in the order they must be appended.
  std::vector<group_write> take_writes();
  /// Rebuilds the groups: those with members are Stable with their sessions restarted now, others
  /// Empty; groups with only offsets are Empty groups without protocol type.
  void finish_loading();
  /// Drops every group; waiting JoinGroup/SyncGroup calls are answered NOT_COORDINATOR.
  void unload();
  load_state state() const { return state_; }
  int32_t partition() const { return partition_; }

  // ---- group membership (protocol doc "The Consumer Group protocol"; KIP-345, KIP-394) ----
  // join_phase.cc, sync_phase.cc (SyncGroup, Heartbeat), leave.cc.
  /// JoinGroup v0-9. The answer may come much later (when the join phase completes).
  void join_group(join_group_request request, join_group_callback done);
  /// SyncGroup v0-5. Followers wait for the leader's assignment; the leader's answer follows the append.
  void sync_group(sync_group_request request, sync_group_callback done);
  /// Heartbeat v0-4; resets the member's session timer.
  group_error heartbeat(const heartbeat_request& request);
  /// LeaveGroup v0-5 (v3+: a batch, members may be named by group instance id only).
  leave_group_result leave_group(const std::string& group_id, const std::vector<member_identity>& members);

  // ---- offsets (offsets.cc) ----
  /// OffsetCommit v0-9: per-partition errors in request order; the offset commit records, applied when
  /// replayed. `failed` maps the append's error as Kafka's storeOffsets does.
  coordinator_result<offset_commit_result> offset_commit(offset_commit_request request);
  /// OffsetFetch for one group. `partitions` none: every committed partition. Unknown partitions come
  /// back with offset -1, leader epoch -1, metadata "".
  /// TxnOffsetCommit v0-4 (KIP-98, KIP-447; Kafka 4.x OffsetMetadataManager.commitTransactionalOffset): the
  /// offset commit records, as a transactional batch of the request's producer (`producer` of the result);
  /// per-partition errors in request order (OFFSET_METADATA_TOO_LARGE), or one error for all: INVALID_GROUP_ID
  /// (empty group id), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, ILLEGAL_GENERATION (unknown group with a
  /// generation; without one a simple group is created), COORDINATOR_NOT_AVAILABLE (group being deleted),
  /// FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION (member checks when any of generation, member id,
  /// instance id is given). No REBALANCE_IN_PROGRESS and no session refresh (Kafka's isTransactional rules).
  /// `failed` maps the append's error as Kafka 4.x does (map_txn_offset_append_error).
  coordinator_result<offset_commit_result> txn_offset_commit(txn_offset_commit_request request);
  /// OffsetFetch v9+ names the member (`member_id`, `member_epoch`): for a consumer group it must be a member at
  /// that epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); none and -1 (admin tools, older versions) are accepted.
  offset_fetch_result offset_fetch(const std::string& group_id,
                                   const std::optional<std::vector<topic_partition>>& partitions,
                                   bool require_stable = false, const std::optional<std::string>& member_id = {},
                                   int32_t member_epoch = -1);

  // ---- administration (admin.cc) ----
  /// DescribeGroups for one group; unknown groups are described as "Dead" with no error.
  group_description describe_group(const std::string& group_id) const;
  /// ListGroups. `states` (v4+) filters by state name and `types` (v5+) by group type ("classic": every
  /// group here), case-insensitively; empty filters list everything.
  list_groups_result list_groups(const std::vector<std::string>& states = {},
                                 const std::vector<std::string>& types = {}) const;
  /// DeleteGroups: only Empty groups (else NON_EMPTY_GROUP); unknown ones GROUP_ID_NOT_FOUND. A deleted
  /// group is Dead at once (joins get COORDINATOR_NOT_AVAILABLE and retry) and leaves memory when its
  /// tombstones are replayed; if they cannot be appended it is Empty again and its entry carries the
  /// append's error (mapped as Kafka's coordinator maps write errors).
  coordinator_result<std::vector<group_deletion_result>> delete_groups(const std::vector<std::string>& group_ids);
  /// OffsetDelete (KIP-496): GROUP_SUBSCRIBED_TO_TOPIC for topics a "consumer" group subscribes to; the
  /// offsets go when the tombstones are replayed. The group itself stays, even Empty and without offsets
  /// (Kafka 4.x: it goes at the next retention check).
  coordinator_result<offset_delete_result> offset_delete(const std::string& group_id,
                                                         const std::vector<topic_partition>& partitions);
  /// A topic was deleted (Kafka 4.x GroupCoordinatorShard.onPartitionsDeleted, run on every coordinator when the
  /// metadata drops a topic): queues one append of an offset tombstone for every committed offset of the topic's
  /// partitions `0 .. partition_count-1` in every group here (a commit still waiting for its append included), then
  /// one more for each pending transactional offset of them (Kafka writes both; a tombstone drops both when
  /// replayed). Groups stay, even Empty without offsets (they go at the next retention check); groups being deleted
  /// are skipped. Returns the number of tombstones queued (0 unless active).
  size_t on_partitions_deleted(const std::string& topic, int32_t partition_count);

  // ---- KIP-848 consumer groups (consumer_heartbeat.cc) ----
  /// Where topic names, ids and partition counts come from (subscriptions, regexes, assignments). Without one no
  /// topic exists. Called on the owning strand; the functions may be called on it at any later call.
  void set_topic_source(topic_source source) { topics_ = std::move(source); }
  /// ConsumerGroupHeartbeat v0-1 (KIP-848; Kafka 4.x GroupMetadataManager.consumerGroupHeartbeat): joins (epoch 0),
  /// heartbeats, leaves (-1; -2 for a static member that will come back). A join creates the group, or turns an
  /// Empty classic group into a consumer group. Each call may bump the group epoch (new member, changed
  /// subscription, changed topic metadata, departure), computes a new target assignment with the group's assignor
  /// when the group epoch is ahead of the assignment epoch, and moves the member toward its target: partitions
  /// to revoke first (UNREVOKED_PARTITIONS, for the rebalance timeout), then partitions no other member still owns
  /// (UNRELEASED_PARTITIONS while some are). Returns the records of every change (Kafka's types 3, 5-8, 16) and
  /// the answer. Errors (answer only, no records): INVALID_REQUEST (validation, with a message), NOT_COORDINATOR,
  /// COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND (unknown group when not joining, or a classic group with
  /// members), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
  /// UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED. `failed` maps an append error
  /// as Kafka's coordinator service does.
  coordinator_result<consumer_heartbeat_result> consumer_group_heartbeat(consumer_heartbeat_request request);
  /// ConsumerGroupDescribe for one group: GROUP_ID_NOT_FOUND for an unknown group or a classic one ("Group X is
  /// not a consumer group."), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
  consumer_group_description describe_consumer_group(const std::string& group_id) const;

  // ---- time (timers.cc) ----
  /// Earliest monotonic deadline (session expiry, join/sync phase end, initial delay, offset
  /// retention check), or none.
  std::optional<int64_t> next_deadline() const;
  /// Runs every expired deadline (reads the clock).
  void on_timer();

  /// Read-only view of a group, for tests and the admin side; nullptr if unknown.
  const group* find_group(const std::string& group_id) const;

 private:
  // The member functions below are defined by phase, one file each (see README.md).

  // group_coordinator.cc: validation, group lookup, answer delivery, group metadata records.
  enum class api { join, sync, heartbeat, leave, offset_commit, txn_offset_commit, offset_fetch, describe, list,
                   del, offset_delete };
  std::optional<group_error> validate(const std::string& group_id, api a) const;
  std::shared_ptr<group> get_group(const std::string& group_id) const;
  std::shared_ptr<group> get_or_create(const std::string& group_id, bool create);
  int64_t mono() const { return clock_.monotonic_ms(); }
  int64_t wall() const { return clock_.now_ms(); }
  std::string new_member_id(const std::string& prefix);
  void flush();
  template <typename Cb, typename R>
  void reply(Cb& cb, R r) {
    out_.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  }
  static join_group_result join_error(const std::string& member_id, group_error e);
  group_record group_metadata_record(const group& g, const std::map<std::string, bytes>& assignment) const;
  /// Queues `records` for take_writes(); `done(mapped error)` runs after the outcome, then queued answers go.
  void write(std::vector<group_record> records, std::function<void(group_error)> done);
  /// Queues the record that commits a group JoinGroup has just created: generation 0, protocol type "", no
  /// protocol, leader or members (Kafka's newEmptyGroupMetadataRecord, which classicGroupJoinToClassicGroup appends
  /// for a new group when the join itself wrote nothing, and for a new group it never does). If the append fails
  /// the group is dropped again while it is still as created (Kafka reverts its snapshot).
  void store_new_group(const std::shared_ptr<group>& g);
  /// Queues the group's metadata record; `done` gets the append's error mapped as Kafka's storeGroup does.
  void store_group(const std::shared_ptr<group>& g, const std::map<std::string, bytes>& assignment,
                   std::function<void(group_error)> done);
  /// Live replay of committed records (replay() once active).
  void replay_offset(const std::string& group_id, const topic_partition& tp, const std::optional<bytes>& value,
                     const record_context& ctx);
  /// A committed record of a transactional batch: a pending offset of its producer.
  void replay_txn_offset(const std::string& group_id, const topic_partition& tp, const bytes& value,
                         const record_context& ctx);
  /// Loading: the same for the replay buffers.
  void load_offset(const std::string& group_id, const topic_partition& tp, const std::optional<bytes>& value,
                   const record_context& ctx);
  void replay_group_tombstone(const std::string& group_id, bool consumer);

  // join_phase.cc: the join phase, static member replacement, leader election.
  bool accept_joining_member(const group& g, const std::string& member_id) const;
  void do_new_member_join(const std::shared_ptr<group>& g, join_group_request& r, join_group_callback& cb);
  void do_current_member_join(const std::shared_ptr<group>& g, join_group_request& r,
                              join_group_callback& cb);
  void add_member_and_rebalance(group& g, join_group_request& r, const std::string& member_id,
                                join_group_callback cb);
  void update_member_and_rebalance(group& g, member& m, join_group_request& r, join_group_callback cb);
  void update_static_member_and_rebalance(const std::shared_ptr<group>& g, const std::string& old_id,
                                          const std::string& new_id, join_group_request& r,
                                          join_group_callback cb);
  void replace_static_member(group& g, const std::string& instance_id, const std::string& old_id,
                             const std::string& new_id);
  void maybe_prepare_rebalance(group& g);
  void prepare_rebalance(group& g);
  void try_complete_join(group& g);
  void complete_join(group& g);
  bool maybe_elect_new_joined_leader(group& g);
  join_group_result join_answer(const group& g, const member& m, bool with_members) const;

  // sync_phase.cc: the sync phase and the session deadline.
  void reset_and_propagate_assignment_error(group& g, group_error e);
  void propagate_assignment(group& g, group_error e);
  void schedule_heartbeat(group& g, member& m);

  // leave.cc: member removal.
  void remove_member_and_update_group(group& g, const std::string& member_id);
  void remove_pending_member_and_update_group(group& g, const std::string& member_id);

  // offsets.cc: commits and offset retention.
  /// `refused`: per request partition, an error to answer instead of storing it (none: store).
  coordinator_result<offset_commit_result> store_offsets(const std::shared_ptr<group>& g, offset_commit_request& r,
                                                         group_error (*map_error)(group_error) = map_offset_append_error,
                                                         const std::vector<group_error>& refused = {});
  std::vector<topic_partition> expired_offsets(group& g, int64_t now_wall) const;
  void expire_offsets();

  // admin.cc: tombstones.
  /// The tombstones removing `removed` offsets of `g` and, when that leaves an Empty (or Dead) group without
  /// offsets, the group's own (written whatever its generation, as Kafka does): it turns Dead now and leaves
  /// memory when its tombstone is replayed. `*deleted` tells whether the group goes.
  std::vector<group_record> tombstones(const std::shared_ptr<group>& g, const std::vector<topic_partition>& removed,
                                       bool* deleted);
  /// After a failed tombstone append: a group made Dead for it is Empty again.
  void revive(const std::shared_ptr<group>& g);

  // consumer_heartbeat.cc: KIP-848.
  /// The group a heartbeat addresses, made or converted when it joins; null with `err` set otherwise.
  std::shared_ptr<group> consumer_group_for(const consumer_heartbeat_request& r, std::vector<group_record>& records,
                                            group_error& err, std::string& message);
  /// Leave (-1) or temporary static leave (-2).
  coordinator_result<consumer_heartbeat_result> consumer_leave(group& g, const consumer_heartbeat_request& r);
  /// Removes a member (leave, session or revocation expiry, static replacement excluded), writes its tombstones,
  /// and bumps the group epoch; the next heartbeat computes the new target.
  void fence_consumer_member(group& g, const std::string& member_id, std::vector<group_record>& records);
  /// The member's subscribed topics that exist, by name (its names, and its regex's resolution).
  std::set<std::string> member_topics(const consumer_group_state& cg, const consumer_member& m) const;
  /// Resolves the regexes in use against the topics (and drops unused ones); records for changed resolutions. A
  /// regex the group has not resolved yet is left for the timer unless `resolve_new` (Kafka resolves new regexes
  /// asynchronously: the heartbeat that brings one is answered with the literal topics only).
  void refresh_regexes(group& g, std::vector<group_record>& records, bool resolve_new = false);
  /// The subscription metadata over all members; true when it changed (the caller bumps the epoch).
  bool refresh_subscription(group& g);
  /// Runs the assignor for the group epoch and records the changed targets and the new assignment epoch.
  void update_target_assignment(group& g, std::vector<group_record>& records);
  /// TxnOffsetCommit into a consumer group (Kafka's ConsumerGroup.validateOffsetCommit, transactional): UNKNOWN_MEMBER_ID,
  /// ILLEGAL_GENERATION for another epoch; epoch -1 into an empty group passes.
  std::optional<group_error> validate_consumer_txn_commit(const group& g, int32_t member_epoch,
                                                          const std::string& member_id) const;
  /// OffsetCommit into a consumer group: each partition's error (none, or the whole request's UNKNOWN_MEMBER_ID,
  /// UNSUPPORTED_VERSION, STALE_MEMBER_EPOCH; an older epoch passes per partition by its assignment epoch, KIP-1251).
  std::vector<group_error> consumer_commit_errors(const group& g, const offset_commit_request& r) const;
  /// Loading: one KIP-848 record into the replay buffers; then the groups they describe.
  void load_consumer_record(const consumer_record_key& k, const std::optional<bytes>& value);
  void finish_loading_consumer_groups();
  void process_consumer_deadlines(const std::shared_ptr<group>& g, int64_t now);

  // timers.cc: expired deadlines.
  void process_group_deadlines(const std::shared_ptr<group>& g, int64_t now);
  void on_heartbeat_expired(group& g, const std::string& member_id);
  void on_sync_expired(group& g);

  int32_t partition_;
  group_config config_;
  const sluice::clock& clock_;
  std::function<std::string()> uuid_;
  load_state state_ = load_state::inactive;
  std::map<std::string, std::shared_ptr<group>> groups_;
  std::optional<int64_t> next_expiration_check_;
  // Replay buffers, between begin_loading and finish_loading.
  std::map<std::string, group_metadata_value> replay_groups_;
  std::map<std::string, std::map<topic_partition, committed_offset>> replay_offsets_;
  // ... and the pending transactional offsets: producer id -> group -> partition -> offset.
  std::map<int64_t, std::map<std::string, std::map<topic_partition, committed_offset>>> replay_txn_offsets_;
  // ... and the KIP-848 groups.
  struct loaded_consumer_group {
    std::optional<int32_t> group_epoch;
    int32_t assignment_epoch = 0;
    std::map<std::string, consumer_member> members;
    std::set<std::string> with_metadata;  // members whose metadata record was read
    std::map<std::string, partition_map> target;
    std::map<std::string, resolved_regex> regexes;
  };
  std::map<std::string, loaded_consumer_group> replay_consumer_;
  topic_source topics_;
  mutable std::map<std::string, std::shared_ptr<const topic_regex>> regex_cache_;
  // Active: producer id -> the groups holding pending transactional offsets of it.
  std::map<int64_t, std::set<std::string>> txn_groups_;
  std::vector<std::function<void()>> out_;   // answers to deliver when the current call ends
  bool flushing_ = false;
  std::vector<group_write> writes_;          // appends for take_writes()
};

std::string_view to_string(group_coordinator::load_state s);

}  // namespace sluice::groups
