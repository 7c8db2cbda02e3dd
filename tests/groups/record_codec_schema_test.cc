// __consumer_offsets records through the generated schemas (protocol/defs/consumer_offsets.def):
// bytes written by the hand-written codec that preceded them stay byte for byte the same and decode to the
// same values; older and flexible value versions are read; a flexible value keeps its unknown tagged fields
// through a decode -> encode of the generated type, as Kafka's generated messages do.
#include <gtest/gtest.h>

#include "broker/groups/record_codec.h"
#include "protocol/messages/consumer_offsets.h"
#include "protocol/reader.h"

namespace sluice::groups {
namespace {

// Golden bytes: printed by the hand-written record_codec of main (commit e55c3b3) for the values below.
const bytes golden_offset_key = {0x00, 0x01, 0x00, 0x03, 0x67, 0x72, 0x70, 0x00, 0x07, 0x74,
                                 0x6f, 0x70, 0x69, 0x63, 0x2d, 0x61, 0x00, 0x00, 0x00, 0x07};
const bytes golden_group_key = {0x00, 0x02, 0x00, 0x03, 0x67, 0x72, 0x70};
const bytes golden_offset_value_v3 = {0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
                                      0x00, 0x00, 0x00, 0x03, 0x00, 0x04, 0x6d, 0x65, 0x74, 0x61,
                                      0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b};
// OffsetCommitValue v4 as Kafka 4.4 writes it: flexible (compact string), the topic id as tagged field 0.
const bytes golden_offset_value_v4 = {0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
                                      0x00, 0x00, 0x00, 0x03, 0x05, 0x6d, 0x65, 0x74, 0x61, 0x00,
                                      0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b, 0x01, 0x00, 0x10,
                                      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                      0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10};
const bytes golden_offset_value_v1 = {0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,
                                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,
                                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xd0};
const bytes golden_group_value_v3 = {
    0x00, 0x03, 0x00, 0x08, 0x63, 0x6f, 0x6e, 0x73, 0x75, 0x6d, 0x65, 0x72, 0x00, 0x00, 0x00, 0x04, 0x00, 0x05,
    0x72, 0x61, 0x6e, 0x67, 0x65, 0x00, 0x03, 0x6d, 0x2d, 0x31, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x6b, 0xe7,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x03, 0x6d, 0x2d, 0x31, 0x00, 0x02, 0x69, 0x31, 0x00, 0x03, 0x63, 0x6c, 0x69,
    0x00, 0x0a, 0x2f, 0x31, 0x32, 0x37, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x31, 0x00, 0x00, 0xea, 0x60, 0x00, 0x00,
    0x27, 0x10, 0x00, 0x00, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x09, 0x00, 0x03, 0x6d, 0x2d,
    0x32, 0xff, 0xff, 0x00, 0x04, 0x63, 0x6c, 0x69, 0x32, 0x00, 0x0a, 0x2f, 0x31, 0x32, 0x37, 0x2e, 0x30, 0x2e,
    0x30, 0x2e, 0x32, 0x00, 0x00, 0xaf, 0xc8, 0x00, 0x00, 0x17, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00};
const bytes golden_group_value_empty = {0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00};

group_metadata_value golden_group() {
  group_metadata_value v;
  v.protocol_type = "consumer";
  v.generation = 4;
  v.protocol = "range";
  v.leader = "m-1";
  v.current_state_timestamp = 1700000000999;
  v.members.push_back({"m-1", std::string("i1"), "cli", "/127.0.0.1", 60000, 10000, {0, 1, 2}, {9}});
  v.members.push_back({"m-2", std::nullopt, "cli2", "/127.0.0.2", 45000, 6000, {}, {}});
  return v;
}

TEST(record_codec_schema, writes_the_bytes_of_the_hand_written_codec) {
  EXPECT_EQ(encode_key(offset_commit_key{"grp", "topic-a", 7}), golden_offset_key);
  EXPECT_EQ(encode_key(group_metadata_key{"grp"}), golden_group_key);
  offset_commit_value with_id{42, 3, "meta", 1700000000123, std::nullopt};
  for (uint8_t i = 0; i < 16; ++i) with_id.topic_id[i] = static_cast<uint8_t>(i + 1);
  EXPECT_EQ(encode_value(with_id), golden_offset_value_v4);
  EXPECT_EQ(encode_value(offset_commit_value{9, 5, "", 1000, 2000}), golden_offset_value_v1);
  EXPECT_EQ(encode_value(golden_group()), golden_group_value_v3);
  group_metadata_value empty;
  EXPECT_EQ(encode_value(empty), golden_group_value_empty);
}

TEST(record_codec_schema, reads_records_of_the_hand_written_codec) {
  EXPECT_EQ(std::get<offset_commit_key>(*decode_key(golden_offset_key)), (offset_commit_key{"grp", "topic-a", 7}));
  EXPECT_EQ(std::get<group_metadata_key>(*decode_key(golden_group_key)), (group_metadata_key{"grp"}));
  EXPECT_EQ(*decode_offset_commit_value(golden_offset_value_v3),
            (offset_commit_value{42, 3, "meta", 1700000000123, std::nullopt}));
  offset_commit_value with_id{42, 3, "meta", 1700000000123, std::nullopt};
  for (uint8_t i = 0; i < 16; ++i) with_id.topic_id[i] = static_cast<uint8_t>(i + 1);
  EXPECT_EQ(*decode_offset_commit_value(golden_offset_value_v4), with_id);
  // v1 has no leader epoch: it reads back as -1.
  EXPECT_EQ(*decode_offset_commit_value(golden_offset_value_v1), (offset_commit_value{9, -1, "", 1000, 2000}));
  EXPECT_EQ(*decode_group_metadata_value(golden_group_value_v3), golden_group());
  EXPECT_EQ(*decode_group_metadata_value(golden_group_value_empty), group_metadata_value{});
}

TEST(record_codec_schema, reads_group_metadata_value_v0_to_v2) {
  for (int16_t version : {0, 1, 2}) {
    SCOPED_TRACE(version);
    kafka_writer w;
    w.int16(version);
    w.string("consumer");
    w.int32(3);
    w.nullable_string(std::string("range"));
    w.nullable_string(std::string("m"));
    if (version >= 2) w.int64(77);
    w.int32(1);
    w.string("m");
    w.string("c");
    w.string("/h");
    if (version >= 1) w.int32(50000);  // rebalance timeout
    w.int32(9000);                     // session timeout
    w.bytes_field({1});
    w.bytes_field({});
    auto v = decode_group_metadata_value(w.take());
    ASSERT_TRUE(v);
    EXPECT_EQ(v->current_state_timestamp, version >= 2 ? 77 : -1);
    ASSERT_EQ(v->members.size(), 1u);
    EXPECT_EQ(v->members[0].group_instance_id, std::nullopt);
    EXPECT_EQ(v->members[0].rebalance_timeout, version >= 1 ? 50000 : 9000) << "v0: the session timeout";
    EXPECT_EQ(v->members[0].subscription, (bytes{1}));
  }
}

// OffsetCommitValue v4 (flexible): compact metadata string, then a tagged-field section with one field
// (tag 7, 2 bytes) that the definition does not know.
bytes offset_commit_value_v4_with_unknown_tag() {
  return {0x00, 0x04,                                      // version 4
          0, 0, 0, 0, 0, 0, 0, 0x2a,                       // offset 42
          0, 0, 0, 0x03,                                   // leader epoch 3
          0x03, 'm', 'd',                                  // compact string "md"
          0, 0, 0, 0, 0, 0, 0x01, 0x00,                    // commit timestamp 256
          0x01, 0x07, 0x02, 0xbe, 0xef};                   // 1 tagged field: tag 7, size 2, payload
}

TEST(record_codec_schema, v4_value_keeps_unknown_tagged_fields) {
  const bytes rec = offset_commit_value_v4_with_unknown_tag();
  protocol::reader r(std::span<const uint8_t>(rec).subspan(2));
  protocol::offset_commit_value m;
  m.decode(r, 4);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(r.remaining(), 0u);
  ASSERT_EQ(m.unknown_tagged_fields.size(), 1u);
  EXPECT_EQ(m.unknown_tagged_fields[0], (protocol::raw_tagged_field{7, {0xbe, 0xef}}));
  protocol::writer w;
  w.write_int16(4);
  m.encode(w, 4);
  EXPECT_EQ(w.finish().bytes, rec) << "decode -> encode writes the unknown tagged field back";

  // The coordinator's view of the same record: the known fields.
  auto v = decode_offset_commit_value(rec);
  ASSERT_TRUE(v) << v.err().message;
  EXPECT_EQ(*v, (offset_commit_value{42, 3, "md", 256, std::nullopt}));
}

TEST(record_codec_schema, v4_group_value_keeps_unknown_tagged_fields_at_every_level) {
  protocol::group_metadata_value m;
  m.protocol_type = "consumer";
  m.generation = 1;
  m.protocol = std::nullopt;
  m.leader = std::nullopt;
  auto& member = m.members.emplace_back();
  member.member_id = "m";
  member.unknown_tagged_fields = {{0, {1}}, {200, {2, 3}}};
  m.unknown_tagged_fields = {{5, {}}};
  protocol::writer w;
  w.write_int16(4);
  m.encode(w, 4);
  const bytes rec = w.finish().bytes;

  protocol::reader r(std::span<const uint8_t>(rec).subspan(2));
  protocol::group_metadata_value d;
  d.decode(r, 4);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(d, m);
  protocol::writer w2;
  w2.write_int16(4);
  d.encode(w2, 4);
  EXPECT_EQ(w2.finish().bytes, rec);

  auto v = decode_group_metadata_value(rec);
  ASSERT_TRUE(v) << v.err().message;
  EXPECT_EQ(v->protocol_type, "consumer");
  ASSERT_EQ(v->members.size(), 1u);
  EXPECT_EQ(v->members[0].member_id, "m");
}

TEST(record_codec_schema, malformed_values_fail_as_in_kafka) {
  EXPECT_FALSE(decode_offset_commit_value({0, 5})) << "no version 5";
  EXPECT_FALSE(decode_group_metadata_value({0, 5}));
  bytes v4 = offset_commit_value_v4_with_unknown_tag();
  v4.pop_back();  // the tagged field's payload is cut short
  EXPECT_FALSE(decode_offset_commit_value(v4));
  // A null member array (non-nullable in the schema) is an error, as Kafka's generated reader throws.
  kafka_writer w;
  w.int16(3);
  w.string("consumer");
  w.int32(1);
  w.nullable_string(std::nullopt);
  w.nullable_string(std::nullopt);
  w.int64(-1);
  w.int32(-1);
  EXPECT_FALSE(decode_group_metadata_value(w.take()));
}

}  // namespace
}  // namespace sluice::groups
