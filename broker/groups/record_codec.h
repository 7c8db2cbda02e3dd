#pragma once
// The __consumer_offsets record schemas, in Kafka's big-endian non-flexible encoding:
//   key:   int16 version, then OffsetCommitKey (versions 0-1: group, topic, partition)
//                          or GroupMetadataKey (version 2: group)
//   value: int16 version, then OffsetCommitValue (0-3) or GroupMetadataValue (0-3).
// We write OffsetCommitKey v1, OffsetCommitValue v3 (v1 when an explicit expire timestamp from
// OffsetCommit v2-4 retention_time must be kept), GroupMetadataKey v2, GroupMetadataValue v3, and read
// versions 0-3 of each value. Key versions 3+ (KIP-848 records) decode as `other_key` and are ignored.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "broker/groups/group_types.h"

namespace sluice::groups {

/// Big-endian writer of Kafka's primitive types (non-flexible encodings).
class kafka_writer {
 public:
  void int16(int16_t v);
  void int32(int32_t v);
  void int64(int64_t v);
  void string(std::string_view s);                       // int16 length + bytes
  void nullable_string(const std::optional<std::string>& s);  // -1 for null
  void bytes_field(const bytes& b);                      // int32 length + bytes
  bytes take() { return std::move(buf_); }

 private:
  bytes buf_;
};

/// Bounds-checked big-endian reader with a sticky error: after the first short read every read returns
/// a zero value and ok() is false.
class kafka_reader {
 public:
  explicit kafka_reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  explicit kafka_reader(const bytes& b) : kafka_reader(b.data(), b.size()) {}
  int16_t int16();
  int32_t int32();
  int64_t int64();
  std::string string();
  std::optional<std::string> nullable_string();
  bytes bytes_field();
  /// Reads an int32 array length; -1 (null) reads as 0. Fails (and returns 0) when the count could not
  /// fit in the bytes remaining given `min_element_size`.
  int32_t array_length(size_t min_element_size);
  bool ok() const { return ok_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  bool need(size_t n);
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

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
/// Decode a value of the given schema (versions 0-3). Errors: truncated bytes, unsupported version.
result<offset_commit_value> decode_offset_commit_value(const bytes& b);
result<group_metadata_value> decode_group_metadata_value(const bytes& b);

/// The topics of a ConsumerProtocolSubscription (protocol type "consumer"): int16 version, then
/// [string] topics (a prefix common to all versions). Error when the bytes are too short.
result<std::vector<std::string>> decode_subscription_topics(const bytes& metadata);

}  // namespace sluice::groups
