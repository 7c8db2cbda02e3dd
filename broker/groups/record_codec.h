#pragma once
// The __consumer_offsets records, in Kafka's format: a key is an int16 version then the key struct at
// that version, a value an int16 version then the value struct at that version:
//   key:   OffsetCommitKey (versions 0-1: group, topic, partition) or GroupMetadataKey (version 2: group)
//   value: OffsetCommitValue (0-4) or GroupMetadataValue (0-4; 4 is flexible, KIP-915)
// The schemas are generated message definitions (protocol/defs/consumer_offsets.def ->
// protocol/messages/consumer_offsets.h); this file picks the versions and maps them to the
// coordinator's plain structs below. We write OffsetCommitKey v1, OffsetCommitValue v3 (v1 when an
// explicit expire timestamp from OffsetCommit v2-4 retention_time must be kept), GroupMetadataKey v2 and
// GroupMetadataValue v3, and read every value version 0-4 (unknown tagged fields of v4 are skipped
// here: the plain structs have no place for them). Key versions 3+ (KIP-848 records) decode as
// `other_key` and are ignored.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "broker/groups/group_types.h"
#include "protocol/writer.h"

namespace sluice::groups {

/// Appends Kafka's primitive types in their non-flexible big-endian encodings (a thin layer over
/// protocol::writer, for building raw records and consumer protocol bytes by hand, as tests do).
class kafka_writer {
 public:
  void int16(int16_t v) { w_.write_int16(v); }
  void int32(int32_t v) { w_.write_int32(v); }
  void int64(int64_t v) { w_.write_int64(v); }
  void string(std::string_view s) { w_.write_string(s); }  // int16 length + bytes
  void nullable_string(const std::optional<std::string>& s) { w_.write_nullable_string(s); }  // -1 for null
  void bytes_field(const bytes& b) { w_.write_bytes(b); }  // int32 length + bytes
  bytes take() { return w_.finish().bytes; }

 private:
  protocol::writer w_;
};

/// int16 `version`, then `msg` (a generated record struct) encoded at that version: Kafka's layout of every
/// __consumer_offsets key and value.
template <typename Msg>
bytes encode_versioned(const Msg& msg, int16_t version) {
  protocol::writer w(2 + msg.encoded_size(version));
  w.write_int16(version);
  msg.encode(w, version);
  return w.finish().bytes;
}

struct offset_commit_key {
  std::string group;
  std::string topic;
  int32_t partition = 0;
  bool operator==(const offset_commit_key&) const = default;
};

struct group_metadata_key {
  std::string group;
  bool operator==(const group_metadata_key&) const = default;
};

/// A key of another record type (version 3+, e.g. KIP-848's): skipped on replay.
struct other_key {
  int16_t version = 0;
  bool operator==(const other_key&) const = default;
};

using record_key = std::variant<offset_commit_key, group_metadata_key, other_key>;

struct offset_commit_value {
  int64_t offset = -1;
  int32_t leader_epoch = -1;                     // v3+
  std::string metadata;
  int64_t commit_timestamp = -1;
  std::optional<int64_t> expire_timestamp;       // v1 only
  std::array<uint8_t, 16> topic_id{};            // v4+ (tagged; zero: not written)
  bool operator==(const offset_commit_value&) const = default;
};

struct member_metadata_record {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout = -1;                // v1+ (v0: the session timeout)
  int32_t session_timeout = 0;
  bytes subscription;
  bytes assignment;
  bool operator==(const member_metadata_record&) const = default;
};

struct group_metadata_value {
  std::string protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol;
  std::optional<std::string> leader;
  int64_t current_state_timestamp = -1;          // v2+
  std::vector<member_metadata_record> members;
  bool operator==(const group_metadata_value&) const = default;
};

bytes encode_key(const offset_commit_key& k);
bytes encode_key(const group_metadata_key& k);
bytes encode_value(const offset_commit_value& v);
bytes encode_value(const group_metadata_value& v);

/// Decodes a key. Errors: truncated bytes, unknown key version < 0.
result<record_key> decode_key(const bytes& b);
/// Decode a value of the given schema (versions 0-4). Errors: truncated or malformed bytes (a null where
/// the schema has none, as Kafka's generated readers), unsupported version.
result<offset_commit_value> decode_offset_commit_value(const bytes& b);
result<group_metadata_value> decode_group_metadata_value(const bytes& b);

/// The topics of a ConsumerProtocolSubscription (protocol type "consumer"): int16 version, then
/// [string] topics (a prefix common to all versions). Error when the bytes are too short.
result<std::vector<std::string>> decode_subscription_topics(const bytes& metadata);

}  // namespace sluice::groups
