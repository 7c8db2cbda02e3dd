#include "broker/groups/record_codec.h"

#include <cstring>

namespace sluice::groups {

namespace {
template <typename U>
void put_be(bytes& out, U v) {
  for (int i = sizeof(U) - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
constexpr int16_t offset_commit_key_version = 1;
constexpr int16_t group_metadata_key_version = 2;
}  // namespace

void kafka_writer::int16(int16_t v) { put_be(buf_, static_cast<uint16_t>(v)); }
void kafka_writer::int32(int32_t v) { put_be(buf_, static_cast<uint32_t>(v)); }
void kafka_writer::int64(int64_t v) { put_be(buf_, static_cast<uint64_t>(v)); }
void kafka_writer::string(std::string_view s) {
  int16(static_cast<int16_t>(s.size()));
  buf_.insert(buf_.end(), s.begin(), s.end());
}
void kafka_writer::nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    int16(-1);
  } else {
    string(*s);
  }
}
void kafka_writer::bytes_field(const bytes& b) {
  int32(static_cast<int32_t>(b.size()));
  buf_.insert(buf_.end(), b.begin(), b.end());
}

bool kafka_reader::need(size_t n) {
  if (!ok_ || remaining() < n) {
    ok_ = false;
    return false;
  }
  return true;
}

namespace {
template <typename U>
U get_be(const uint8_t*& p) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) v = static_cast<U>((v << 8) | *p++);
  return v;
}
}  // namespace

int16_t kafka_reader::int16() { return need(2) ? static_cast<int16_t>(get_be<uint16_t>(p_)) : 0; }
int32_t kafka_reader::int32() { return need(4) ? static_cast<int32_t>(get_be<uint32_t>(p_)) : 0; }
int64_t kafka_reader::int64() { return need(8) ? static_cast<int64_t>(get_be<uint64_t>(p_)) : 0; }

std::optional<std::string> kafka_reader::nullable_string() {
  int16_t n = int16();
  if (!ok_) return std::string();
  if (n < 0) return std::nullopt;
  if (!need(static_cast<size_t>(n))) return std::string();
  std::string s(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
  p_ += n;
  return s;
}

std::string kafka_reader::string() {
  auto s = nullable_string();
  if (!s) {
    ok_ = false;  // a null where the schema has a non-nullable string
    return {};
  }
  return std::move(*s);
}

bytes kafka_reader::bytes_field() {
  int32_t n = int32();
  if (!ok_ || n < 0) return {};  // null bytes read as empty
  if (!need(static_cast<size_t>(n))) return {};
  bytes b(p_, p_ + n);
  p_ += n;
  return b;
}

int32_t kafka_reader::array_length(size_t min_element_size) {
  int32_t n = int32();
  if (!ok_ || n < 0) return 0;
  if (min_element_size > 0 && static_cast<size_t>(n) > remaining() / min_element_size) {
    ok_ = false;
    return 0;
  }
  return n;
}

bytes encode_key(const offset_commit_key& k) {
  kafka_writer w;
  w.int16(offset_commit_key_version);
  w.string(k.group);
  w.string(k.topic);
  w.int32(k.partition);
  return w.take();
}

bytes encode_key(const group_metadata_key& k) {
  kafka_writer w;
  w.int16(group_metadata_key_version);
  w.string(k.group);
  return w.take();
}

bytes encode_value(const offset_commit_value& v) {
  kafka_writer w;
  if (v.expire_timestamp) {
    // Version 1 is the only one carrying an explicit expire timestamp (OffsetCommit v2-4 retention).
    w.int16(1);
    w.int64(v.offset);
    w.string(v.metadata);
    w.int64(v.commit_timestamp);
    w.int64(*v.expire_timestamp);
  } else {
    w.int16(3);
    w.int64(v.offset);
    w.int32(v.leader_epoch);
    w.string(v.metadata);
    w.int64(v.commit_timestamp);
  }
  return w.take();
}

bytes encode_value(const group_metadata_value& v) {
  kafka_writer w;
  w.int16(3);
  w.string(v.protocol_type);
  w.int32(v.generation);
  w.nullable_string(v.protocol);
  w.nullable_string(v.leader);
  w.int64(v.current_state_timestamp);
  w.int32(static_cast<int32_t>(v.members.size()));
  for (const auto& m : v.members) {
    w.string(m.member_id);
    w.nullable_string(m.group_instance_id);
    w.string(m.client_id);
    w.string(m.client_host);
    w.int32(m.rebalance_timeout);
    w.int32(m.session_timeout);
    w.bytes_field(m.subscription);
    w.bytes_field(m.assignment);
  }
  return w.take();
}

result<record_key> decode_key(const bytes& b) {
  kafka_reader r(b);
  int16_t version = r.int16();
  if (!r.ok() || version < 0) return error{1, "bad __consumer_offsets key version"};
  if (version <= 1) {
    offset_commit_key k;
    k.group = r.string();
    k.topic = r.string();
    k.partition = r.int32();
    if (!r.ok()) return error{1, "truncated OffsetCommitKey"};
    return record_key{std::move(k)};
  }
  if (version == 2) {
    group_metadata_key k;
    k.group = r.string();
    if (!r.ok()) return error{1, "truncated GroupMetadataKey"};
    return record_key{std::move(k)};
  }
  return record_key{other_key{version}};
}

result<offset_commit_value> decode_offset_commit_value(const bytes& b) {
  kafka_reader r(b);
  int16_t version = r.int16();
  if (!r.ok() || version < 0 || version > 3) {
    return error{1, "unsupported OffsetCommitValue version " + std::to_string(version)};
  }
  offset_commit_value v;
  v.offset = r.int64();
  if (version >= 3) v.leader_epoch = r.int32();
  v.metadata = r.string();
  v.commit_timestamp = r.int64();
  if (version == 1) v.expire_timestamp = r.int64();
  if (!r.ok()) return error{1, "truncated OffsetCommitValue"};
  return v;
}

result<group_metadata_value> decode_group_metadata_value(const bytes& b) {
  kafka_reader r(b);
  int16_t version = r.int16();
  if (!r.ok() || version < 0 || version > 3) {
    return error{1, "unsupported GroupMetadataValue version " + std::to_string(version)};
  }
  group_metadata_value v;
  v.protocol_type = r.string();
  v.generation = r.int32();
  v.protocol = r.nullable_string();
  v.leader = r.nullable_string();
  if (version >= 2) v.current_state_timestamp = r.int64();
  // Smallest member: 3 empty strings (6) + session timeout (4) + 2 empty byte fields (8).
  int32_t n = r.array_length(18);
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    member_metadata_record m;
    m.member_id = r.string();
    if (version >= 3) m.group_instance_id = r.nullable_string();
    m.client_id = r.string();
    m.client_host = r.string();
    if (version >= 1) m.rebalance_timeout = r.int32();
    m.session_timeout = r.int32();
    if (version == 0) m.rebalance_timeout = m.session_timeout;
    m.subscription = r.bytes_field();
    m.assignment = r.bytes_field();
    v.members.push_back(std::move(m));
  }
  if (!r.ok()) return error{1, "truncated GroupMetadataValue"};
  return v;
}

result<std::vector<std::string>> decode_subscription_topics(const bytes& metadata) {
  kafka_reader r(metadata);
  (void)r.int16();  // ConsumerProtocolSubscription version: topics come first in every version
  int32_t n = r.array_length(2);
  std::vector<std::string> topics;
  for (int32_t i = 0; i < n && r.ok(); ++i) topics.push_back(r.string());
  if (!r.ok()) return error{1, "malformed ConsumerProtocolSubscription"};
  return topics;
}

}  // namespace sluice::groups
