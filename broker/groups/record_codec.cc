#include "broker/groups/record_codec.h"

#include <span>

#include "protocol/messages/consumer_offsets.h"
#include "protocol/reader.h"

namespace sluice::groups {

namespace {

namespace p = ::sluice::protocol;

// The versions we write (see record_codec.h); a key's version names its record type.
constexpr int16_t offset_commit_key_version = 1;
constexpr int16_t group_metadata_key_version = 2;
constexpr int16_t offset_commit_value_version = 4;  // Kafka 4.4: flexible, the topic id as tagged field 0
constexpr int16_t offset_commit_value_expire_version = 1;  // the only one with an expire timestamp
constexpr int16_t group_metadata_value_version = 3;

/// Decodes the struct that follows the version prefix (at `version`) from `r`; false on a malformed body.
/// Trailing bytes are not an error (Kafka's record readers ignore them too).
template <typename Msg>
bool decode_body(p::reader& r, int16_t version, Msg& out) {
  out.decode(r, version);
  return r.ok();
}

std::span<const uint8_t> span_of(const bytes& b) { return std::span<const uint8_t>(b.data(), b.size()); }

}  // namespace

bytes encode_key(const offset_commit_key& k) {
  p::offset_commit_key m;
  m.group = k.group;
  m.topic = k.topic;
  m.partition = k.partition;
  return encode_versioned(m, offset_commit_key_version);
}

bytes encode_key(const group_metadata_key& k) {
  p::group_metadata_key m;
  m.group = k.group;
  return encode_versioned(m, group_metadata_key_version);
}

bytes encode_value(const offset_commit_value& v) {
  p::offset_commit_value m;
  m.offset = v.offset;
  m.leader_epoch = v.leader_epoch;  // not written in v1
  m.metadata = v.metadata;
  m.commit_timestamp = v.commit_timestamp;
  m.topic_id.bytes = v.topic_id;
  if (v.expire_timestamp) {
    // Version 1 is the only one carrying an explicit expire timestamp (OffsetCommit v2-4 retention).
    m.expire_timestamp = *v.expire_timestamp;
    return encode_versioned(m, offset_commit_value_expire_version);
  }
  return encode_versioned(m, offset_commit_value_version);
}

bytes encode_value(const group_metadata_value& v) {
  p::group_metadata_value m;
  m.protocol_type = v.protocol_type;
  m.generation = v.generation;
  m.protocol = v.protocol;
  m.leader = v.leader;
  m.current_state_timestamp = v.current_state_timestamp;
  m.members.reserve(v.members.size());
  for (const auto& rm : v.members) {
    auto& mm = m.members.emplace_back();
    mm.member_id = rm.member_id;
    mm.group_instance_id = rm.group_instance_id;
    mm.client_id = rm.client_id;
    mm.client_host = rm.client_host;
    mm.rebalance_timeout = rm.rebalance_timeout;
    mm.session_timeout = rm.session_timeout;
    mm.subscription = rm.subscription;
    mm.assignment = rm.assignment;
  }
  return encode_versioned(m, group_metadata_value_version);
}

result<record_key> decode_key(const bytes& b) {
  p::reader r(span_of(b));
  int16_t version = r.read_int16("key.version");
  if (!r.ok() || version < 0) return error{base_errc::failed, "bad __consumer_offsets key version"};
  if (version <= p::offset_commit_key::max_version) {
    p::offset_commit_key m;
    if (!decode_body(r, version, m)) return error{base_errc::failed, "truncated OffsetCommitKey"};
    return record_key{offset_commit_key{std::move(m.group), std::move(m.topic), m.partition}};
  }
  if (version == p::group_metadata_key::min_version) {
    p::group_metadata_key m;
    if (!decode_body(r, version, m)) return error{base_errc::failed, "truncated GroupMetadataKey"};
    return record_key{group_metadata_key{std::move(m.group)}};
  }
  return record_key{other_key{version}};
}

result<offset_commit_value> decode_offset_commit_value(const bytes& b) {
  p::reader r(span_of(b));
  int16_t version = r.read_int16("value.version");
  if (!r.ok() || version < p::offset_commit_value::min_version || version > p::offset_commit_value::max_version) {
    return error{base_errc::failed, "unsupported OffsetCommitValue version " + std::to_string(version)};
  }
  p::offset_commit_value m;
  if (!decode_body(r, version, m)) return error{base_errc::failed, "truncated OffsetCommitValue"};
  offset_commit_value v;
  v.offset = m.offset;
  v.leader_epoch = m.leader_epoch;  // -1 before v3
  v.metadata = std::move(m.metadata);
  v.commit_timestamp = m.commit_timestamp;
  if (version == offset_commit_value_expire_version) v.expire_timestamp = m.expire_timestamp;
  v.topic_id = m.topic_id.bytes;
  return v;
}

result<group_metadata_value> decode_group_metadata_value(const bytes& b) {
  p::reader r(span_of(b));
  int16_t version = r.read_int16("value.version");
  if (!r.ok() || version < p::group_metadata_value::min_version || version > p::group_metadata_value::max_version) {
    return error{base_errc::failed, "unsupported GroupMetadataValue version " + std::to_string(version)};
  }
  p::group_metadata_value m;
  if (!decode_body(r, version, m)) return error{base_errc::failed, "truncated GroupMetadataValue"};
  group_metadata_value v;
  v.protocol_type = std::move(m.protocol_type);
  v.generation = m.generation;
  v.protocol = std::move(m.protocol);
  v.leader = std::move(m.leader);
  v.current_state_timestamp = m.current_state_timestamp;  // -1 before v2
  v.members.reserve(m.members.size());
  for (auto& mm : m.members) {
    member_metadata_record& rm = v.members.emplace_back();
    rm.member_id = std::move(mm.member_id);
    rm.group_instance_id = std::move(mm.group_instance_id);  // null before v3
    rm.client_id = std::move(mm.client_id);
    rm.client_host = std::move(mm.client_host);
    // v0 has no rebalance timeout: Kafka takes the session timeout.
    rm.rebalance_timeout = version >= 1 ? mm.rebalance_timeout : mm.session_timeout;
    rm.session_timeout = mm.session_timeout;
    rm.subscription = std::move(mm.subscription);
    rm.assignment = std::move(mm.assignment);
  }
  return v;
}

result<std::vector<std::string>> decode_subscription_topics(const bytes& metadata) {
  // Only the prefix common to every ConsumerProtocolSubscription version is read (int16 version, then
  // [string] topics), so versions newer than our definition still give their topics. A null topic
  // array reads as no topics.
  p::reader r(span_of(metadata));
  (void)r.read_int16("subscription.version");
  int32_t n = r.read_array_length("subscription.topics", false, true, 2);
  std::vector<std::string> topics;
  for (int32_t i = 0; i < n && r.ok(); ++i) topics.push_back(r.read_string("subscription.topics"));
  if (!r.ok()) return error{base_errc::failed, "malformed ConsumerProtocolSubscription"};
  return topics;
}

}  // namespace sluice::groups
