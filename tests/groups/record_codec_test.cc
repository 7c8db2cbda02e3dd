// __consumer_offsets record schemas, consumer subscription decoding, partition_for_group.
#include <gtest/gtest.h>

#include "broker/groups/partition_for_group.h"
#include "broker/groups/record_codec.h"

namespace sluice::groups {
namespace {

TEST(partition_for_group, matches_java_string_hashcode) {
  EXPECT_EQ(java_hashcode(""), 0);
  EXPECT_EQ(java_hashcode("a"), 97);
  EXPECT_EQ(java_hashcode("hello"), 99162322);
  // "test-group" by Java's rule s[0]*31^(n-1) + ... + s[n-1], in int32 arithmetic.
  int32_t h = 0;
  for (char c : std::string("test-group")) h = static_cast<int32_t>(31u * static_cast<uint32_t>(h) + c);
  EXPECT_EQ(java_hashcode("test-group"), h);
  EXPECT_EQ(java_hashcode("test-group"), 627841412);
  EXPECT_EQ(java_hashcode("gr\xC3\xBCppe"), -1233264812) << "UTF-16 code units, negative hash";
  EXPECT_EQ(java_hashcode("\xF0\x9F\x98\x80g"), 54959972) << "surrogate pair";
}

TEST(partition_for_group, uses_kafka_utils_abs_and_modulo) {
  EXPECT_EQ(partition_for_group("", 50), 0);
  EXPECT_EQ(partition_for_group("a", 50), 47);
  EXPECT_EQ(partition_for_group("test-group", 50), 12);
  EXPECT_EQ(partition_for_group("gr\xC3\xBCppe", 50), 12);  // hash -1233264812: Math.abs, not the mask (36)
  EXPECT_EQ(partition_for_group("console-consumer-12345", 50), 6);
  EXPECT_EQ(partition_for_group("anything", 1), 0);
  // A negative hash code (-1079758529): Kafka 4.4 puts this group in partition 29 of 50 (Math.abs), where a
  // mask of the sign bit would give 19 (found by compat/diff, AddOffsetsToTxn then DescribeTransactions).
  EXPECT_EQ(java_hashcode("d-add_offsets_to_txn-1-v2-65602-g"), -1079758529);
  EXPECT_EQ(partition_for_group("d-add_offsets_to_txn-1-v2-65602-g", 50), 29);
}

TEST(record_codec, offset_commit_key_bytes) {
  bytes k = encode_key(offset_commit_key{"g", "t", 258});
  EXPECT_EQ(k, (bytes{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 1, 2}));
  auto d = decode_key(k);
  ASSERT_TRUE(d);
  EXPECT_EQ(std::get<offset_commit_key>(*d), (offset_commit_key{"g", "t", 258}));
  EXPECT_EQ(encode_key(group_metadata_key{"g"}), (bytes{0, 2, 0, 1, 'g'}));
  EXPECT_EQ(std::get<group_metadata_key>(*decode_key({0, 2, 0, 1, 'g'})).group, "g");
  EXPECT_EQ(std::get<other_key>(*decode_key({0, 5, 1})).version, 5);
  EXPECT_FALSE(decode_key({0, 1, 0, 5, 'g'}));
  EXPECT_FALSE(decode_key({0}));
}

TEST(record_codec, offset_commit_value_versions) {
  offset_commit_value v{123, 4, "meta", 1700000000000, std::nullopt};
  bytes e = encode_value(v);
  // v4 (flexible): compact string, then an empty tagged-field section (no topic id).
  EXPECT_EQ(e.size(), 2u + 8 + 4 + 1 + 4 + 8 + 1);
  EXPECT_EQ(e[1], 4);
  EXPECT_EQ(*decode_offset_commit_value(e), v);
  // With a topic id: tagged field 0, 16 bytes.
  offset_commit_value vt = v;
  for (uint8_t i = 0; i < 16; ++i) vt.topic_id[i] = static_cast<uint8_t>(0xa0 + i);
  bytes et = encode_value(vt);
  ASSERT_EQ(et.size(), e.size() + 18);
  EXPECT_EQ(et[e.size() - 1], 1) << "one tagged field";
  EXPECT_EQ(et[e.size()], 0) << "tag 0";
  EXPECT_EQ(et[e.size() + 1], 16) << "16 bytes";
  EXPECT_EQ(et.back(), 0xaf);
  EXPECT_EQ(*decode_offset_commit_value(et), vt);
  offset_commit_value v1{5, -1, "", 10, 20};
  bytes e1 = encode_value(v1);
  EXPECT_EQ(e1[1], 1);
  EXPECT_EQ(*decode_offset_commit_value(e1), v1);
  // Version 0: offset, metadata, commit timestamp.
  kafka_writer w;
  w.int16(0);
  w.int64(77);
  w.string("m");
  w.int64(99);
  auto v0 = decode_offset_commit_value(w.take());
  ASSERT_TRUE(v0);
  EXPECT_EQ(v0->offset, 77);
  EXPECT_EQ(v0->leader_epoch, -1);
  EXPECT_FALSE(decode_offset_commit_value({0, 4}));
  e.pop_back();
  EXPECT_FALSE(decode_offset_commit_value(e));
}

TEST(record_codec, group_metadata_value_round_trip) {
  group_metadata_value v;
  v.protocol_type = "consumer";
  v.generation = 7;
  v.protocol = "range";
  v.leader = "m1";
  v.current_state_timestamp = 1234;
  v.members.push_back({"m1", std::string("inst"), "c1", "/1.2.3.4", 300000, 10000, {1, 2}, {3}});
  v.members.push_back({"m2", std::nullopt, "c2", "/1.2.3.5", 300000, 10000, {}, {}});
  bytes e = encode_value(v);
  EXPECT_EQ(e[1], 3);
  auto d = decode_group_metadata_value(e);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, v);

  group_metadata_value empty;
  empty.protocol_type = "consumer";
  empty.generation = 2;
  EXPECT_EQ(*decode_group_metadata_value(encode_value(empty)), empty);

  // A huge member count in few bytes fails without allocating.
  kafka_writer w;
  w.int16(3);
  w.string("consumer");
  w.int32(1);
  w.nullable_string(std::nullopt);
  w.nullable_string(std::nullopt);
  w.int64(-1);
  w.int32(0x7fffffff);
  EXPECT_FALSE(decode_group_metadata_value(w.take()));
}

TEST(record_codec, subscription_topics) {
  kafka_writer w;
  w.int16(1);
  w.int32(2);
  w.string("a");
  w.string("b");
  w.int32(-1);  // user data
  w.int32(0);   // owned partitions
  auto t = decode_subscription_topics(w.take());
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(decode_subscription_topics({0, 1, 0, 0, 0, 9}));
}

}  // namespace
}  // namespace sluice::groups
