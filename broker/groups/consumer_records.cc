#include "broker/groups/consumer_records.h"

#include <span>

#include "broker/groups/record_codec.h"
#include "protocol/messages/consumer_offsets.h"
#include "protocol/reader.h"

namespace sluice::groups {

namespace {

namespace p = ::sluice::protocol;

constexpr int16_t value_version = 0;

template <typename Msg>
result<Msg> decode_value(const bytes& b, const char* what) {
  p::reader r(std::span<const uint8_t>(b.data(), b.size()));
  int16_t version = r.read_int16("value.version");
  if (!r.ok() || version < Msg::min_version || version > Msg::max_version) {
    return error{base_errc::failed, std::string("unsupported ") + what + " version " + std::to_string(version)};
  }
  Msg m;
  m.decode(r, version);
  if (!r.ok()) return error{base_errc::failed, std::string("truncated ") + what};
  return m;
}

template <typename Key>
bytes key_bytes(consumer_record_type type, const Key& k) {
  return encode_versioned(k, static_cast<int16_t>(type));
}

/// Our partition_map as the records' [TopicPartitions] (any struct with topic_id and partitions).
template <typename Entry>
std::vector<Entry> to_entries(const partition_map& m) {
  std::vector<Entry> out;
  out.reserve(m.size());
  for (const auto& [topic, parts] : m) {
    Entry e;
    e.topic_id.bytes = topic;
    e.partitions.assign(parts.begin(), parts.end());
    out.push_back(std::move(e));
  }
  return out;
}

template <typename Entry>
partition_map from_entries(const std::vector<Entry>& entries) {
  partition_map m;
  for (const auto& e : entries) {
    if (e.partitions.empty()) continue;
    m[e.topic_id.bytes].insert(e.partitions.begin(), e.partitions.end());
  }
  return m;
}

/// A key naming a group only (types 3, 6).
template <typename Key = p::consumer_group_metadata_key>
Key group_key(const std::string& group) {
  Key k;
  k.group_id = group;
  return k;
}

}  // namespace

result<std::optional<consumer_record_key>> decode_consumer_key(const bytes& key) {
  p::reader r(std::span<const uint8_t>(key.data(), key.size()));
  int16_t version = r.read_int16("key.version");
  if (!r.ok()) return error{base_errc::failed, "truncated key"};
  consumer_record_key out;
  out.type = static_cast<consumer_record_type>(version);
  auto read = [&](auto msg) -> result<std::optional<consumer_record_key>> {
    msg.decode(r, version);
    if (!r.ok()) return error{base_errc::failed, "truncated consumer group key of type " + std::to_string(version)};
    out.group = std::move(msg.group_id);
    if constexpr (requires { msg.member_id; }) out.sub = std::move(msg.member_id);
    if constexpr (requires { msg.regular_expression; }) out.sub = std::move(msg.regular_expression);
    return std::optional<consumer_record_key>(std::move(out));
  };
  switch (out.type) {
    case consumer_record_type::group_metadata: return read(p::consumer_group_metadata_key{});
    case consumer_record_type::member_metadata: return read(p::consumer_group_member_metadata_key{});
    case consumer_record_type::target_assignment_metadata:
      return read(p::consumer_group_target_assignment_metadata_key{});
    case consumer_record_type::target_assignment_member: return read(p::consumer_group_target_assignment_member_key{});
    case consumer_record_type::current_member_assignment:
      return read(p::consumer_group_current_member_assignment_key{});
    case consumer_record_type::regular_expression: return read(p::consumer_group_regular_expression_key{});
  }
  return std::optional<consumer_record_key>();
}

group_record group_epoch_record(const std::string& group, int32_t epoch) {
  p::consumer_group_metadata_value v;
  v.epoch = epoch;
  return {key_bytes(consumer_record_type::group_metadata, group_key(group)), encode_versioned(v, value_version)};
}

group_record group_epoch_tombstone(const std::string& group) {
  return {key_bytes(consumer_record_type::group_metadata, group_key(group)), std::nullopt};
}

namespace {

/// A key naming a group and one of its members (types 5, 7, 8).
template <typename Key>
Key member_key(const std::string& group, const std::string& member_id) {
  Key k;
  k.group_id = group;
  k.member_id = member_id;
  return k;
}

p::consumer_group_regular_expression_key regex_key(const std::string& group, const std::string& regex) {
  p::consumer_group_regular_expression_key k;
  k.group_id = group;
  k.regular_expression = regex;
  return k;
}

}  // namespace

group_record member_subscription_record(const std::string& group, const consumer_member& m) {
  p::consumer_group_member_metadata_value v;
  v.instance_id = m.instance_id;
  v.rack_id = m.rack_id;
  v.client_id = m.client_id;
  v.client_host = m.client_host;
  v.subscribed_topic_names = m.subscribed_topic_names;
  v.subscribed_topic_regex = m.subscribed_topic_regex;
  v.rebalance_timeout_ms = m.rebalance_timeout_ms;
  v.server_assignor = m.server_assignor;
  return {key_bytes(consumer_record_type::member_metadata, member_key<p::consumer_group_member_metadata_key>(group, m.member_id)),
          encode_versioned(v, value_version)};
}

group_record member_subscription_tombstone(const std::string& group, const std::string& member_id) {
  return {key_bytes(consumer_record_type::member_metadata, member_key<p::consumer_group_member_metadata_key>(group, member_id)), std::nullopt};
}

group_record target_assignment_epoch_record(const std::string& group, int32_t epoch) {
  p::consumer_group_target_assignment_metadata_value v;
  v.assignment_epoch = epoch;
  return {key_bytes(consumer_record_type::target_assignment_metadata, group_key<p::consumer_group_target_assignment_metadata_key>(group)),
          encode_versioned(v, value_version)};
}

group_record target_assignment_epoch_tombstone(const std::string& group) {
  return {key_bytes(consumer_record_type::target_assignment_metadata, group_key<p::consumer_group_target_assignment_metadata_key>(group)), std::nullopt};
}

group_record target_assignment_record(const std::string& group, const std::string& member_id,
                                      const partition_map& partitions) {
  p::consumer_group_target_assignment_member_value v;
  v.topic_partitions_ = to_entries<p::consumer_group_target_assignment_member_value::topic_partitions>(partitions);
  return {key_bytes(consumer_record_type::target_assignment_member, member_key<p::consumer_group_target_assignment_member_key>(group, member_id)),
          encode_versioned(v, value_version)};
}

group_record target_assignment_tombstone(const std::string& group, const std::string& member_id) {
  return {key_bytes(consumer_record_type::target_assignment_member, member_key<p::consumer_group_target_assignment_member_key>(group, member_id)), std::nullopt};
}

group_record current_assignment_record(const std::string& group, const consumer_member& m) {
  using entry = p::consumer_group_current_member_assignment_value::topic_partitions;
  p::consumer_group_current_member_assignment_value v;
  v.member_epoch = m.member_epoch;
  v.previous_member_epoch = m.previous_member_epoch;
  v.state = static_cast<int8_t>(m.state);
  v.assigned_partitions = to_entries<entry>(m.assigned);
  v.partitions_pending_revocation = to_entries<entry>(m.pending_revocation);
  return {key_bytes(consumer_record_type::current_member_assignment, member_key<p::consumer_group_current_member_assignment_key>(group, m.member_id)),
          encode_versioned(v, value_version)};
}

group_record current_assignment_tombstone(const std::string& group, const std::string& member_id) {
  return {key_bytes(consumer_record_type::current_member_assignment, member_key<p::consumer_group_current_member_assignment_key>(group, member_id)), std::nullopt};
}

group_record regex_record(const std::string& group, const std::string& regex, const resolved_regex& r) {
  p::consumer_group_regular_expression_value v;
  v.topics.assign(r.topics.begin(), r.topics.end());
  v.version_ = r.version;
  v.timestamp = r.timestamp;
  return {key_bytes(consumer_record_type::regular_expression, regex_key(group, regex)),
          encode_versioned(v, value_version)};
}

group_record regex_tombstone(const std::string& group, const std::string& regex) {
  return {key_bytes(consumer_record_type::regular_expression, regex_key(group, regex)), std::nullopt};
}

std::vector<group_record> consumer_group_tombstones(const std::string& group, const consumer_group_state& cg) {
  std::vector<group_record> out;
  for (const auto& [regex, r] : cg.regexes) out.push_back(regex_tombstone(group, regex));
  out.push_back(target_assignment_epoch_tombstone(group));
  out.push_back(group_epoch_tombstone(group));
  return out;
}

result<int32_t> decode_epoch_value(const bytes& value) {
  // ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue are both one int32 at version 0.
  auto v = decode_value<p::consumer_group_metadata_value>(value, "ConsumerGroupMetadataValue");
  if (!v) return v.err();
  return v->epoch;
}

result<void> decode_member_metadata_value(const bytes& value, consumer_member& m) {
  auto v = decode_value<p::consumer_group_member_metadata_value>(value, "ConsumerGroupMemberMetadataValue");
  if (!v) return v.err();
  m.instance_id = std::move(v->instance_id);
  m.rack_id = std::move(v->rack_id);
  m.client_id = std::move(v->client_id);
  m.client_host = std::move(v->client_host);
  m.subscribed_topic_names = std::move(v->subscribed_topic_names);
  m.subscribed_topic_regex = std::move(v->subscribed_topic_regex);
  m.rebalance_timeout_ms = v->rebalance_timeout_ms;
  m.server_assignor = std::move(v->server_assignor);
  return {};
}

result<partition_map> decode_target_assignment_value(const bytes& value) {
  auto v = decode_value<p::consumer_group_target_assignment_member_value>(value,
                                                                          "ConsumerGroupTargetAssignmentMemberValue");
  if (!v) return v.err();
  return from_entries(v->topic_partitions_);
}

result<void> decode_current_assignment_value(const bytes& value, consumer_member& m) {
  auto v = decode_value<p::consumer_group_current_member_assignment_value>(
      value, "ConsumerGroupCurrentMemberAssignmentValue");
  if (!v) return v.err();
  m.member_epoch = v->member_epoch;
  m.previous_member_epoch = v->previous_member_epoch;
  switch (v->state) {
    case 0: m.state = member_state::stable; break;
    case 1: m.state = member_state::unrevoked_partitions; break;
    case 2: m.state = member_state::unreleased_partitions; break;
    default: m.state = member_state::unknown; break;
  }
  m.assigned = from_entries(v->assigned_partitions);
  m.pending_revocation = from_entries(v->partitions_pending_revocation);
  return {};
}

result<resolved_regex> decode_regex_value(const bytes& value) {
  auto v = decode_value<p::consumer_group_regular_expression_value>(value, "ConsumerGroupRegularExpressionValue");
  if (!v) return v.err();
  resolved_regex r;
  r.topics.insert(v->topics.begin(), v->topics.end());
  r.version = v->version_;
  r.timestamp = v->timestamp;
  return r;
}

}  // namespace sluice::groups
