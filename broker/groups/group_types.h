#pragma once
// Plain request and result types of the group coordinator. They carry the fields of Kafka's group APIs
// (JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5, OffsetCommit v0-9, OffsetFetch v0-9,
// DescribeGroups, ListGroups, DeleteGroups, OffsetDelete) without depending on the wire codec: the
// handlers in broker/handlers translate between these and the protocol's generated structs.
#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "broker/groups/group_error.h"

namespace sluice::groups {

using bytes = std::vector<uint8_t>;

struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const topic_partition&) const = default;
};

/// Coordinator settings, with Kafka's broker config keys and defaults.
struct group_config {
  int32_t min_session_timeout_ms = 6000;             // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;          // group.max.session.timeout.ms
  int32_t initial_rebalance_delay_ms = 3000;         // group.initial.rebalance.delay.ms
  int32_t max_size = 0x7fffffff;                     // group.max.size
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;       // offsets.retention.minutes (7 days)
  int64_t offsets_retention_check_interval_ms = 600000;       // offsets.retention.check.interval.ms
  int32_t offset_metadata_max_bytes = 4096;          // offset.metadata.max.bytes
  int32_t offsets_topic_num_partitions = 50;         // offsets.topic.num.partitions
  /// How long a new member's first JoinGroup may wait in a rebalance (Kafka's NewMemberJoinTimeoutMs).
  int32_t new_member_join_timeout_ms = 300000;
  // KIP-848 consumer groups.
  int32_t consumer_session_timeout_ms = 45000;       // group.consumer.session.timeout.ms
  int32_t consumer_heartbeat_interval_ms = 5000;     // group.consumer.heartbeat.interval.ms
  int32_t consumer_max_size = 0x7fffffff;            // group.consumer.max.size
  std::vector<std::string> consumer_assignors{"uniform", "range"};  // group.consumer.assignors; first = default
};

/// One (name, metadata) entry of a JoinGroup request's protocols, in the member's order of preference.
struct protocol_metadata {
  std::string name;
  bytes metadata;
  bool operator==(const protocol_metadata&) const = default;
};

struct join_group_request {
  std::string group_id;
  std::string member_id;                          // "" for a member without an id yet
  std::optional<std::string> group_instance_id;   // KIP-345 static membership (v5+)
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 10000;
  int32_t rebalance_timeout_ms = -1;              // v0 has none: the handler passes the session timeout
  std::string protocol_type;
  std::vector<protocol_metadata> protocols;
  bool require_known_member_id = false;           // v4+: KIP-394 MEMBER_ID_REQUIRED round
  bool supports_skip_assignment = false;          // v9+: static leader rejoining a Stable group
  std::string reason;                             // v8+, for the log
};

struct join_group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  bytes metadata;
};

/// JoinGroup answer. On an error, generation_id is -1, protocol fields are empty and member_id echoes
/// the request's (or, for MEMBER_ID_REQUIRED, carries the id assigned to the member).
struct join_group_result {
  group_error error = group_error::none;
  int32_t generation_id = -1;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;       // v7+ nullable; older versions encode "" for none
  std::string leader;
  bool skip_assignment = false;
  std::string member_id;
  std::vector<join_group_member> members;         // the leader gets every member, followers none
};
using join_group_callback = std::function<void(join_group_result)>;

struct sync_group_assignment {
  std::string member_id;
  bytes assignment;
};

struct sync_group_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::optional<std::string> protocol_type;       // v5+
  std::optional<std::string> protocol_name;       // v5+
  std::vector<sync_group_assignment> assignments; // only the leader's carries entries
};

struct sync_group_result {
  group_error error = group_error::none;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  bytes assignment;
};
using sync_group_callback = std::function<void(sync_group_result)>;

struct heartbeat_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

struct member_identity {
  std::string member_id;                          // "" with a group instance id: remove by instance id
  std::optional<std::string> group_instance_id;
  std::string reason;
};

struct member_leave_result {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  group_error error = group_error::none;
};

/// LeaveGroup answer. For v0-2 (one member) the handler reports the member's error as the top-level one
/// when the top-level error is none, as Kafka's LeaveGroupResponse does.
struct leave_group_result {
  group_error error = group_error::none;
  std::vector<member_leave_result> members;
};

struct offset_commit_partition {
  topic_partition tp;
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;            // null is stored as ""
  int64_t commit_timestamp_ms = -1;               // v1 only; -1 = the broker's time
  std::array<uint8_t, 16> topic_id{};             // the topic's id, written into the offset record (v4)
};

struct offset_commit_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int64_t retention_time_ms = -1;                 // v2-4; -1 = offsets.retention.minutes
  std::vector<offset_commit_partition> partitions;
  int16_t api_version = 0;                        // OffsetCommit version: v9+ answers GROUP_ID_NOT_FOUND
};

/// TxnOffsetCommit v0-4 (KIP-98; KIP-447 added the group fields in v3: older versions leave them at their defaults).
/// `partitions`' commit timestamps are unused (the broker's time is stored).
struct txn_offset_commit_request {
  std::string transactional_id;
  std::string group_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::vector<offset_commit_partition> partitions;
};

struct partition_error {
  topic_partition tp;
  group_error error = group_error::none;
};

/// Per-partition errors in request order.
struct offset_commit_result {
  std::vector<partition_error> partitions;
};
using offset_commit_callback = std::function<void(offset_commit_result)>;

struct offset_fetch_partition {
  topic_partition tp;
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  group_error error = group_error::none;
};

struct offset_fetch_result {
  group_error error = group_error::none;
  std::vector<offset_fetch_partition> partitions;
};

struct described_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  bytes metadata;                                 // only for a Stable group (Kafka's GroupSummary)
  bytes assignment;                               // likewise
};

struct group_description {
  group_error error = group_error::none;
  std::string group_id;
  std::string state;                              // "Empty", ..., "Dead" (unknown groups are "Dead")
  std::string protocol_type;
  std::string protocol;                           // selected protocol; "" unless Stable
  std::vector<described_member> members;
};

struct group_listing {
  std::string group_id;
  std::string protocol_type;
  std::string state;
  std::string type = "classic";                   // ListGroups v5+: "classic" or "consumer" (KIP-848)
};

struct list_groups_result {
  group_error error = group_error::none;
  std::vector<group_listing> groups;
};

struct group_deletion_result {
  std::string group_id;
  group_error error = group_error::none;
};
using delete_groups_callback = std::function<void(std::vector<group_deletion_result>)>;

/// OffsetDelete answer: a group-level error (then no partitions) or per-partition errors.
struct offset_delete_result {
  group_error error = group_error::none;
  std::vector<partition_error> partitions;
};
using offset_delete_callback = std::function<void(offset_delete_result)>;

}  // namespace sluice::groups
