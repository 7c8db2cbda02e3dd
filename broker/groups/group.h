#pragma once
// One consumer group's state as Kafka's classic coordinator keeps it (GroupMetadata / MemberMetadata):
// members in join order, static members, pending members (KIP-394), the selected protocol, the
// generation, the committed offsets, and the deadlines the coordinator's timer watches.
// Plain data plus bookkeeping helpers; the protocol decisions live in group_coordinator.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/groups/consumer_group.h"
#include "broker/groups/group_types.h"

namespace sluice::groups {

/// Kafka's GroupState names. Valid transitions (Kafka's):
///   Empty -> PreparingRebalance (first join) | Dead (deleted or expired)
///   PreparingRebalance -> CompletingRebalance (join phase done) | Empty (nobody rejoined) | Dead
///   CompletingRebalance -> Stable (leader's assignment stored) | PreparingRebalance | Dead
///   Stable -> PreparingRebalance | Dead
enum class group_state { empty, preparing_rebalance, completing_rebalance, stable, dead };

/// "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead".
std::string_view to_string(group_state s);

struct member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  std::string protocol_type;
  std::vector<protocol_metadata> protocols;
  bytes assignment;
  join_group_callback awaiting_join;   // set while its JoinGroup waits for the join phase to end
  sync_group_callback awaiting_sync;   // set while its SyncGroup waits for the leader's assignment
  bool is_new = false;                 // joined in this rebalance and has not had a JoinGroup answer yet
  std::optional<int64_t> heartbeat_deadline;  // monotonic ms; none = "satisfied" until rescheduled

  bool is_awaiting_join() const { return static_cast<bool>(awaiting_join); }
  bool is_awaiting_sync() const { return static_cast<bool>(awaiting_sync); }
  bool is_static() const { return group_instance_id.has_value(); }
  /// The metadata sent for `protocol`; empty if the member does not support it.
  bytes metadata_for(std::string_view protocol) const;
  /// Kafka's MemberMetadata.vote: the member's first protocol that is among `candidates`.
  std::string vote(const std::set<std::string>& candidates) const;
  /// Same protocols with the same metadata in the same order (Kafka's MemberMetadata.matches).
  bool matches(const std::vector<protocol_metadata>& protocols) const;
};

struct committed_offset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp = -1;                 // wall-clock ms
  std::optional<int64_t> expire_timestamp;       // OffsetCommit v2-4 explicit retention
  /// Offset of the record it was replayed from in the __consumer_offsets partition (-1: unknown). A transaction's
  /// offsets become committed at its COMMIT marker only where they are newer than the committed one (Kafka's
  /// OffsetAndMetadata.recordOffset).
  int64_t record_offset = -1;
};

class group {
 public:
  explicit group(std::string id, int64_t now_ms) : id(std::move(id)), current_state_timestamp(now_ms) {}

  std::string id;
  group_state state = group_state::empty;
  int64_t current_state_timestamp = -1;          // wall-clock ms of the last transition; -1 unknown
  int32_t generation_id = 0;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::optional<std::string> leader_id;
  std::vector<member> members;                   // join order
  std::map<std::string, std::string> static_members;     // group instance id -> member id
  std::map<std::string, int64_t> pending_members;        // KIP-394: member id -> deadline (monotonic)
  std::set<std::string> pending_sync_members;            // joined this generation, not yet synced
  std::map<std::string, int> supported_protocols;        // protocol name -> members supporting it
  int num_awaiting_join = 0;
  bool new_member_added = false;                 // a member joined during the initial delay
  std::optional<std::set<std::string>> subscribed_topics;  // none = unknown (not "consumer" or bad bytes)

  // Delayed operations of Kafka's purgatories, as deadlines on the monotonic clock.
  std::optional<int64_t> join_deadline;          // DelayedJoin / InitialDelayedJoin
  bool initial_join = false;                     // the join deadline is an InitialDelayedJoin
  int64_t initial_delay_ms = 0;                  // its current delay
  int64_t initial_remaining_ms = 0;              // how far it may still extend (rebalance timeout left)
  std::optional<int64_t> sync_deadline;          // DelayedSync (pending sync members)

  /// KIP-848: the consumer-protocol part of a group of type "consumer" (ConsumerGroupHeartbeat); null for a classic
  /// group. A consumer group's `state` is Empty without members and Stable with them (for the offset and deletion
  /// rules it shares with classic groups); its own state name is `consumer->state_name()`.
  std::unique_ptr<consumer_group_state> consumer;
  bool is_consumer() const { return consumer != nullptr; }

  std::map<topic_partition, committed_offset> offsets;
  std::map<topic_partition, int> pending_offset_commits;  // appended but not yet acknowledged (plain and transactional)
  /// Pending transactional offsets (KIP-98, TxnOffsetCommit): per producer id, the offsets its open transaction
  /// committed (replayed from its transactional batches), invisible to OffsetFetch until its COMMIT marker
  /// (then committed where newer than `offsets`), dropped by its ABORT marker or an offset tombstone.
  std::map<int64_t, std::map<topic_partition, committed_offset>> pending_txn_offsets;

  bool is(group_state s) const { return state == s; }
  void transition_to(group_state s, int64_t now_ms) {
    state = s;
    current_state_timestamp = now_ms;
  }

  member* find(std::string_view member_id);
  const member* find(std::string_view member_id) const;
  bool has(std::string_view member_id) const { return find(member_id) != nullptr; }
  bool is_leader(std::string_view member_id) const { return leader_id && *leader_id == member_id; }
  bool is_pending(std::string_view member_id) const {
    return pending_members.count(std::string(member_id)) != 0;
  }
  std::optional<std::string> static_member_id(const std::string& instance_id) const;
  /// Kafka's ClassicGroup.validateMember (join of a known member, sync, heartbeat, leave, commits): with an
  /// instance id, it must be known (else UNKNOWN_MEMBER_ID) and mapped to `member_id` (else FENCED_INSTANCE_ID);
  /// without one, `member_id` must be a member (else UNKNOWN_MEMBER_ID).
  std::optional<group_error> validate_member(std::string_view member_id,
                                             const std::optional<std::string>& instance_id) const;
  size_t size() const { return members.size(); }

  /// Adds a member (Kafka's GroupMetadata.add): the first member sets the protocol type and becomes
  /// the leader if there is none. `cb` (may be empty) is the member's waiting JoinGroup.
  void add(member m, join_group_callback cb);
  /// Removes a member and everything about it; the leader passes to the first remaining member.
  void remove(std::string_view member_id);
  /// Replaces a member's protocols and timeouts and sets its waiting JoinGroup (Kafka's updateMember).
  /// Returns the previous waiting callback, if any, for the caller to answer.
  join_group_callback update_member(member& m, std::vector<protocol_metadata> protocols,
                                    int32_t rebalance_timeout_ms, int32_t session_timeout_ms,
                                    join_group_callback cb);
  /// Answers a member's waiting JoinGroup (if any) with `r`; returns whether there was one.
  bool invoke_join_callback(member& m, join_group_result r, std::vector<std::function<void()>>& out);
  bool invoke_sync_callback(member& m, sync_group_result r, std::vector<std::function<void()>>& out);

  /// Kafka's supportsProtocols: an Empty group takes any non-empty type with protocols; otherwise the
  /// type must match and one of `protocols` must be supported by every member.
  bool supports_protocols(const std::string& type, const std::vector<protocol_metadata>& protocols) const;
  /// Kafka's selectProtocol: each member votes for its first protocol that all members support; the
  /// most votes win (ties: the protocol voted first in join order). Requires members.
  std::string select_protocol() const;
  /// max of the members' rebalance timeouts (Kafka's GroupMetadata.rebalanceTimeoutMs).
  int32_t rebalance_timeout_ms() const;
  bool has_all_members_joined() const {
    return static_cast<int>(members.size()) == num_awaiting_join && pending_members.empty();
  }
  /// Members that have no JoinGroup waiting (Kafka's notYetRejoinedMembers).
  std::vector<std::string> not_yet_rejoined() const;
  /// Kafka's initNextGeneration: generation + 1, protocol selected, CompletingRebalance (or Empty
  /// with no protocol when there are no members), pending syncs cleared, subscribed topics computed.
  void init_next_generation(int64_t now_ms);
  void compute_subscribed_topics();
  /// Offsets of this topic are in use: true when the subscription is unknown (Kafka's
  /// isSubscribedToTopic).
  bool is_subscribed_to(const std::string& topic) const;
  bool has_offsets() const {
    return !offsets.empty() || !pending_offset_commits.empty() || !pending_txn_offsets.empty();
  }
  /// Some open transaction holds a pending offset for `tp` (Kafka's hasPendingTransactionalOffsets).
  bool has_pending_txn_offset(const topic_partition& tp) const {
    for (const auto& [pid, offsets] : pending_txn_offsets)
      if (offsets.count(tp)) return true;
    return false;
  }
  /// The members' descriptions for JoinGroup's leader answer: member id, instance id, metadata of the
  /// selected protocol.
  std::vector<join_group_member> current_member_metadata() const;
};

}  // namespace sluice::groups
