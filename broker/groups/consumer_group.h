#pragma once
// KIP-848 consumer groups (Kafka's "consumer" group type, ConsumerGroupHeartbeat): the data the coordinator
// keeps for one group, the per-member reconciliation (Kafka's CurrentAssignmentBuilder rules) and the two
// server-side assignors, `uniform` (default) and `range`. Pure data and functions; group_coordinator
// (consumer_heartbeat.cc) drives them and persists their records.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/groups/group_types.h"

namespace sluice::groups {

using topic_uuid = std::array<uint8_t, 16>;
/// Partitions by topic id: a member's assigned, pending-revocation or target partitions.
using partition_map = std::map<topic_uuid, std::set<int32_t>>;

/// Kafka's MemberState (the State byte of ConsumerGroupCurrentMemberAssignmentValue).
enum class member_state : int8_t {
  stable = 0,                 // owns exactly what it may own at its epoch
  unrevoked_partitions = 1,   // must give up `pending_revocation` before moving on
  unreleased_partitions = 2,  // waits for partitions another member still owns
  unknown = 127,
};
std::string_view to_string(member_state s);

/// Sentinel member epochs of ConsumerGroupHeartbeat (KIP-848).
inline constexpr int32_t join_epoch = 0;
inline constexpr int32_t leave_epoch = -1;
inline constexpr int32_t static_leave_epoch = -2;

/// One member of a consumer group (Kafka's ConsumerGroupMember).
struct consumer_member {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  std::string client_id;
  std::string client_host;
  std::vector<std::string> subscribed_topic_names;   // sorted, unique
  std::optional<std::string> subscribed_topic_regex;
  int32_t rebalance_timeout_ms = -1;
  std::optional<std::string> server_assignor;
  int32_t member_epoch = 0;
  int32_t previous_member_epoch = 0;
  member_state state = member_state::stable;
  partition_map assigned;             // what the member may own now (sent in heartbeat answers)
  partition_map pending_revocation;   // what it still owns and must release
  /// The member epoch at which each partition of `assigned` and `pending_revocation` was assigned to it (KIP-1251's
  /// assignment epochs): an OffsetCommit with an older member epoch is accepted for a partition assigned at or before
  /// it. Not persisted: a reloaded member's partitions count from its current epoch.
  std::map<topic_uuid, std::map<int32_t, int32_t>> partition_epochs;
  /// The epoch at which `partition` was assigned (assigned or pending revocation), or none.
  std::optional<int32_t> assignment_epoch_of(const topic_uuid& topic, int32_t partition) const {
    auto t = partition_epochs.find(topic);
    if (t == partition_epochs.end()) return std::nullopt;
    auto p = t->second.find(partition);
    if (p == t->second.end()) return std::nullopt;
    return p->second;
  }
  // Deadlines on the monotonic clock: the session (any heartbeat restarts it) and, in
  // unrevoked_partitions, the revocation (rebalance timeout).
  std::optional<int64_t> session_deadline;
  std::optional<int64_t> revocation_deadline;

  bool is_reconciled_to(int32_t target_epoch) const {
    return state == member_state::stable && member_epoch == target_epoch;
  }
  /// The member's subscription as it is persisted (ConsumerGroupMemberMetadataValue).
  bool same_subscription(const consumer_member& o) const {
    return subscribed_topic_names == o.subscribed_topic_names && subscribed_topic_regex == o.subscribed_topic_regex &&
           server_assignor == o.server_assignor;
  }
  bool same_metadata(const consumer_member& o) const {
    return same_subscription(o) && instance_id == o.instance_id && rack_id == o.rack_id && client_id == o.client_id &&
           client_host == o.client_host && rebalance_timeout_ms == o.rebalance_timeout_ms;
  }
  bool same_assignment_state(const consumer_member& o) const {
    return member_epoch == o.member_epoch && previous_member_epoch == o.previous_member_epoch && state == o.state &&
           assigned == o.assigned && pending_revocation == o.pending_revocation;
  }
};

/// A subscribed topic as the group last saw it; a change of id or partition count bumps the group epoch.
struct subscribed_topic {
  topic_uuid id{};
  int32_t partitions = 0;
  bool operator==(const subscribed_topic&) const = default;
};

/// A regular expression subscription resolved against the topics (ConsumerGroupRegularExpressionValue).
struct resolved_regex {
  std::set<std::string> topics;
  int64_t version = 0;     // bumped at each change
  int64_t timestamp = -1;  // wall-clock ms of the resolution
};

/// The KIP-848 part of a group (present only for groups of type "consumer").
struct consumer_group_state {
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;
  std::map<std::string, consumer_member> members;        // by member id
  std::map<std::string, std::string> static_members;     // instance id -> member id
  std::map<std::string, partition_map> target;           // member id -> target assignment
  std::map<std::string, subscribed_topic> subscription;  // topic name -> metadata, over every member
  std::map<std::string, resolved_regex> regexes;         // regex -> its topics
  /// A regex new to the group is resolved after the heartbeat that brought it, from the timer (Kafka resolves
  /// them in the background): monotonic ms when due, none when nothing waits.
  std::optional<int64_t> regex_resolution_due;

  /// Kafka's ConsumerGroup state names: "Empty" (no members), "Assigning" (the target assignment is behind
  /// the group epoch), "Reconciling" (a member is not at the assignment epoch yet), "Stable".
  std::string_view state_name() const;
  /// The epoch of the member owning `partition` (assigned or pending revocation), or -1 if none does.
  int32_t partition_owner_epoch(const topic_uuid& topic, int32_t partition, std::string_view except_member) const;
  /// The assignor used: the first member's server assignor, in member id order, or `default_assignor`.
  std::string assignor(const std::string& default_assignor) const;
};

/// A topic as the coordinator's metadata source reports it.
struct topic_metadata {
  std::string name;
  topic_uuid id{};
  int32_t partitions = 0;
};

/// A compiled regular expression subscription (RE2 syntax, as Kafka's brokers use RE2/J); a topic matches when
/// the whole name matches.
class topic_regex {
 public:
  /// None, with `*error` set (RE2's message), when the pattern does not compile.
  static std::shared_ptr<const topic_regex> compile(const std::string& pattern, std::string* error);
  bool matches(const std::string& topic) const;
  ~topic_regex();

 private:
  struct impl;
  explicit topic_regex(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

/// Where the coordinator reads topic metadata (the broker's topic registry; tests give their own).
struct topic_source {
  std::function<std::optional<topic_metadata>(const std::string&)> by_name;
  std::function<std::optional<topic_metadata>(const topic_uuid&)> by_id;
  std::function<std::vector<topic_metadata>()> all;  // for regular expressions; internal topics left out
};

/// Kafka's CurrentAssignmentBuilder: the member's next state toward `target` at `target_epoch`. `owned` is the
/// heartbeat's TopicPartitions (none: not sent); `owner_epoch(topic, partition)` answers the epoch of another
/// member owning that partition, or -1. A member in `unknown` state that does not come back owning nothing
/// must rejoin: the result is none (FENCED_MEMBER_EPOCH).
std::optional<consumer_member> reconcile(const consumer_member& member, int32_t target_epoch,
                                         const partition_map& target, const std::optional<partition_map>& owned,
                                         const std::function<int32_t(const topic_uuid&, int32_t)>& owner_epoch);

/// What an assignor sees of one member.
struct assignor_member {
  std::string member_id;
  std::set<topic_uuid> topics;  // subscribed topics that exist
};

/// Server-side assignors (`group.consumer.assignors`): "uniform" and "range".
inline constexpr std::string_view uniform_assignor = "uniform";
inline constexpr std::string_view range_assignor = "range";
bool is_known_assignor(std::string_view name);

/// `uniform`: every subscribed partition to exactly one subscribed member, counts as even as the subscriptions
/// allow, keeping each member's partitions from `previous` where that stays balanced (sticky).
std::map<std::string, partition_map> assign_uniform(const std::vector<assignor_member>& members,
                                                    const std::map<topic_uuid, int32_t>& partitions,
                                                    const std::map<std::string, partition_map>& previous);
/// `range`: per topic, its subscribed members in member id order each get a contiguous range
/// (partitions / members, the first partitions % members one more).
std::map<std::string, partition_map> assign_range(const std::vector<assignor_member>& members,
                                                  const std::map<topic_uuid, int32_t>& partitions);

/// ConsumerGroupHeartbeat v0-1 (KIP-848). Optional fields are null when unchanged since the last heartbeat.
struct consumer_heartbeat_request {
  std::string group_id;
  std::string member_id;        // v1+: chosen by the client; v0 may send "" on join (the coordinator picks one)
  int32_t member_epoch = 0;     // 0 join, -1 leave, -2 static member leaving temporarily
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  int32_t rebalance_timeout_ms = -1;
  std::optional<std::vector<std::string>> subscribed_topic_names;
  std::optional<std::string> subscribed_topic_regex;   // v1+
  std::optional<std::string> server_assignor;
  std::optional<partition_map> owned;                  // TopicPartitions
  std::string client_id;
  std::string client_host;
  int16_t api_version = 1;
};

struct consumer_heartbeat_result {
  group_error error = group_error::none;
  std::optional<std::string> error_message;
  std::optional<std::string> member_id;
  int32_t member_epoch = 0;
  int32_t heartbeat_interval_ms = 0;
  std::optional<partition_map> assignment;  // set when it changed, or the request was a full one
};

/// ConsumerGroupDescribe for one group.
struct consumer_group_description {
  group_error error = group_error::none;
  std::optional<std::string> error_message;
  std::string group_id;
  std::string state;
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;
  std::string assignor;
  std::vector<consumer_member> members;
  std::map<std::string, partition_map> target;
};

/// True when every partition of `subset` is in `of` (a member coming back with its previous epoch).
bool is_subset(const partition_map& subset, const partition_map& of);
/// Number of partitions in `m`.
size_t partition_count(const partition_map& m);

}  // namespace sluice::groups
