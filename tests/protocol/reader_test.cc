// reader: bounds checks, sticky error, lengths, varints, allocation bounds.
#include "protocol/reader.h"

#include <gtest/gtest.h>

#include <vector>

#include "protocol/messages/metadata.h"
#include "protocol/messages/produce.h"

namespace sluice::protocol {
namespace {

std::span<const uint8_t> as_span(const std::vector<uint8_t>& v) { return v; }

TEST(reader, big_endian_integers) {
  std::vector<uint8_t> b = {0x01, 0x02, 0x80, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x01};
  reader r(as_span(b));
  EXPECT_EQ(r.read_int16("a"), 0x0102);
  EXPECT_EQ(r.read_int32("b"), static_cast<int32_t>(0x80000001u));
  EXPECT_EQ(r.read_int64("c"), -2);
  EXPECT_TRUE(r.read_bool("d"));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(reader, sticky_error_names_field_and_offset) {
  std::vector<uint8_t> b = {0x00, 0x01, 0x02};
  reader r(as_span(b));
  r.set_context("Produce", 9);
  EXPECT_EQ(r.read_int16("first"), 1);
  EXPECT_EQ(r.read_int32("second"), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "second");
  EXPECT_EQ(r.error_offset(), 2u);
  EXPECT_EQ(r.read_int8("third"), 0);  // sticky: zero values afterwards
  EXPECT_EQ(r.error_field(), "second");
  EXPECT_NE(r.error_message().find("Produce v9 request"), std::string::npos);
  EXPECT_NE(r.error_message().find("'second' at byte 2"), std::string::npos);
}

TEST(reader, varints) {
  std::vector<uint8_t> b = {0x96, 0x01, 0x03, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  reader r(as_span(b));
  EXPECT_EQ(r.read_unsigned_varint("a"), 150u);
  EXPECT_EQ(r.read_varint("b"), -2);  // zigzag 3 -> -2
  EXPECT_EQ(r.read_unsigned_varint("c"), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "c");
  EXPECT_EQ(r.error_offset(), 3u);
}

TEST(reader, varlong_zigzag) {
  writer w;
  w.write_varlong(-123456789012LL);
  w.write_varint(std::numeric_limits<int32_t>::min());
  auto f = w.finish();
  reader r(f.bytes);
  EXPECT_EQ(r.read_varlong("a"), -123456789012LL);
  EXPECT_EQ(r.read_varint("b"), std::numeric_limits<int32_t>::min());
  EXPECT_TRUE(r.ok());
}

TEST(reader, strings_and_nulls) {
  std::vector<uint8_t> b = {0x00, 0x02, 'h', 'i', 0xff, 0xff, 0x00, 0x03, 'a', 'b', 0xff, 0xff};
  reader r(as_span(b));
  EXPECT_EQ(r.read_string("a"), "hi");
  EXPECT_EQ(r.read_nullable_string("b"), std::nullopt);
  EXPECT_EQ(r.read_compact_nullable_string("c"), std::nullopt);  // 0x00 = null
  EXPECT_EQ(r.read_compact_string("d"), "ab");
  EXPECT_EQ(r.read_string("e"), "");  // -1 where null is not allowed
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "e");
  EXPECT_EQ(r.error_offset(), 10u);
}

TEST(reader, malformed_utf8_becomes_the_replacement_character_as_kafka_decodes_it) {
  // "bad" + 0xff 0xfe (no UTF-8 lead bytes), then a well-formed "é" (c3 a9), then a truncated 3-byte sequence.
  std::vector<uint8_t> b = {0x00, 0x0a, 'b', 'a', 'd', 0xff, 0xfe, 0xc3, 0xa9, 0xe2, 0x82, 'x'};
  reader r(as_span(b));
  EXPECT_EQ(r.read_string("s"), "bad\xEF\xBF\xBD\xEF\xBF\xBD\xC3\xA9\xEF\xBF\xBD\xEF\xBF\xBDx");
  EXPECT_TRUE(r.ok());
  std::vector<uint8_t> fine = {0x04, 0xc3, 0xa9, 'o'};  // compact "éo": kept as sent
  reader r2(as_span(fine));
  EXPECT_EQ(r2.read_compact_string("s"), "\xC3\xA9o");
}

TEST(reader, a_compact_string_over_32767_bytes_fails) {
  std::vector<uint8_t> b = {0x81, 0x80, 0x02};  // unsigned varint 32769: a 32768-byte string
  b.resize(b.size() + 32768, 'x');
  reader r(as_span(b));
  EXPECT_EQ(r.read_compact_string("group_id"), "");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "group_id");
  std::vector<uint8_t> ok = {0x80, 0x80, 0x02};  // 32768 - 1 = 32767 bytes: the largest allowed
  ok.resize(ok.size() + 32767, 'y');
  reader r2(as_span(ok));
  EXPECT_EQ(r2.read_compact_string("group_id").size(), 32767u);
  EXPECT_TRUE(r2.ok());
}

TEST(reader, length_beyond_remaining_fails) {
  std::vector<uint8_t> b = {0x00, 0x00, 0x10, 0x00, 1, 2, 3};
  reader r(as_span(b));
  EXPECT_TRUE(r.read_bytes("payload").empty());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_offset(), 0u);
}

TEST(reader, negative_length_fails) {
  std::vector<uint8_t> b = {0xff, 0xfe, 1, 2};
  reader r(as_span(b));
  EXPECT_EQ(r.read_nullable_string("s"), std::nullopt);
  EXPECT_FALSE(r.ok());
}

TEST(reader, huge_array_count_fails_without_allocating) {
  // int32 count 0x7fffffff followed by 10 bytes: must fail before any reserve.
  std::vector<uint8_t> b = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  reader r(as_span(b));
  EXPECT_EQ(r.read_array_length("arr", false, false), 0);
  EXPECT_FALSE(r.ok());

  // Same through a generated decoder (ProduceRequest v3: transactional_id null, acks, timeout, topics).
  std::vector<uint8_t> p = {0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0x7f, 0xff, 0xff, 0xff,
                            0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  reader rp(as_span(p));
  produce_request req;
  req.decode(rp, 3);
  EXPECT_FALSE(rp.ok());
  EXPECT_EQ(rp.error_field(), "produce_request.topic_data");
  EXPECT_EQ(rp.error_offset(), 8u);
  EXPECT_EQ(req.topic_data.capacity(), 0u);
}

TEST(reader, array_count_checked_against_element_size) {
  // 3 int32 elements need 12 bytes; 8 remain.
  std::vector<uint8_t> b = {0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2};
  reader r(as_span(b));
  EXPECT_EQ(r.read_array_length("ids", false, false, 4), 0);
  EXPECT_FALSE(r.ok());
}

TEST(reader, compact_array_null_only_when_nullable) {
  std::vector<uint8_t> b = {0x00};
  reader r1(as_span(b));
  EXPECT_EQ(r1.read_array_length("a", true, true), -1);
  EXPECT_TRUE(r1.ok());
  reader r2(as_span(b));
  EXPECT_EQ(r2.read_array_length("a", true, false), 0);
  EXPECT_FALSE(r2.ok());
}

TEST(reader, records_are_views_with_owner) {
  auto frame = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{0, 0, 0, 3, 9, 8, 7});
  reader r(std::span<const uint8_t>(*frame), frame);
  std::optional<records> rec = r.read_nullable_records("records", false);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->size(), 3u);
  EXPECT_EQ(rec->bytes.data(), frame->data() + 4);
  EXPECT_EQ(rec->owner.get(), frame.get());
}

TEST(reader, tagged_fields_unknown_are_skipped_and_sizes_checked) {
  // two tagged fields: tag 5 (2 bytes), tag 9 (0 bytes); then the declared size exceeds the input.
  std::vector<uint8_t> ok_bytes = {0x02, 0x05, 0x02, 0xaa, 0xbb, 0x09, 0x00};
  reader r(as_span(ok_bytes));
  r.skip_tagged_fields("tags");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
  std::vector<uint8_t> bad = {0x01, 0x05, 0x10, 0xaa};
  reader r2(as_span(bad));
  r2.skip_tagged_fields("tags");
  EXPECT_FALSE(r2.ok());
}

TEST(reader, metadata_v0_null_topics_rejected) {
  std::vector<uint8_t> b = {0xff, 0xff, 0xff, 0xff};
  reader r(as_span(b));
  metadata_request m;
  m.decode(r, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "metadata_request.topics");
}

TEST(uuid, text_round_trip) {
  uuid u;
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(i * 17);
  std::string s = u.to_string();
  EXPECT_EQ(s.size(), 22u);
  auto back = uuid::from_string(s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, u);
  EXPECT_EQ(uuid{}.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
  EXPECT_FALSE(uuid::from_string("short").has_value());
}

}  // namespace
}  // namespace sluice::protocol

namespace sluice::protocol {
namespace {

TEST(reader, reserve_is_bounded_by_remaining_bytes) {
  // ProduceRequest v3 claiming 1000 topics with exactly 1000 bytes left: the count passes the
  // per-element check (1 byte each) but the reservation stays within the remaining bytes.
  std::vector<uint8_t> p = {0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x03, 0xe8};
  p.resize(p.size() + 1000, 0);
  p[12] = 0x7f;  // the first topic name claims 32767 bytes: decoding stops at the first element
  p[13] = 0xff;
  reader r(p);
  produce_request req;
  req.decode(r, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_field(), "topic_produce_data.name");
  EXPECT_LE(req.topic_data.capacity() * sizeof(produce_request::topic_produce_data),
            1000 + sizeof(produce_request::topic_produce_data));
}

}  // namespace
}  // namespace sluice::protocol
