#include "storage/record_batch.h"

#include <gtest/gtest.h>

#include "storage/byte_order.h"
#include "storage/errc.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::make_batch;

TEST(RecordBatch, BuilderIteratorRoundTrip) {
  const record_header hdrs[] = {{"trace", std::string_view("abc")}, {"nullh", std::nullopt}};
  record_batch_builder b;
  b.set_base_offset(100).set_producer(7, 2, 30).set_partition_leader_epoch(5);
  b.add(std::string_view("key0"), std::string_view("value0"), 5000, hdrs);
  b.add(std::nullopt, std::string_view(""), 4990);            // null key, empty value, earlier timestamp
  b.add(std::string_view("key2"), std::nullopt, 5100);        // tombstone
  const auto bytes = b.build();
  ASSERT_EQ(bytes.size(), b.size_bytes());

  auto h = validate_record_batch(bytes);
  ASSERT_TRUE(h.ok()) << h.err().message;
  EXPECT_EQ(h->base_offset, 100);
  EXPECT_EQ(h->size_bytes(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(h->magic, 2);
  EXPECT_EQ(h->records_count, 3);
  EXPECT_EQ(h->last_offset_delta, 2);
  EXPECT_EQ(h->last_offset(), 102);
  EXPECT_EQ(h->base_timestamp, 5000);
  EXPECT_EQ(h->max_timestamp, 5100);
  EXPECT_EQ(h->producer_id, 7);
  EXPECT_EQ(h->producer_epoch, 2);
  EXPECT_EQ(h->base_sequence, 30);
  EXPECT_EQ(h->partition_leader_epoch, 5);
  EXPECT_EQ(h->compression(), compression_codec::none);
  EXPECT_EQ(h->ts_type(), timestamp_type::create_time);
  EXPECT_FALSE(h->is_transactional());
  EXPECT_FALSE(h->is_control());

  auto it = record_iterator::open(bytes);
  ASSERT_TRUE(it.ok());
  record_view r;
  ASSERT_TRUE(it->next(r));
  EXPECT_EQ(r.offset, 100);
  EXPECT_EQ(r.timestamp, 5000);
  EXPECT_EQ(r.key, "key0");
  EXPECT_EQ(r.value, "value0");
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(r.headers[0].key, "trace");
  EXPECT_EQ(r.headers[0].value, "abc");
  EXPECT_EQ(r.headers[1].key, "nullh");
  EXPECT_FALSE(r.headers[1].value.has_value());
  ASSERT_TRUE(it->next(r));
  EXPECT_EQ(r.offset, 101);
  EXPECT_EQ(r.timestamp, 4990);
  EXPECT_FALSE(r.key.has_value());
  EXPECT_EQ(r.value, "");
  EXPECT_TRUE(r.headers.empty());
  ASSERT_TRUE(it->next(r));
  EXPECT_EQ(r.offset, 102);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_FALSE(it->next(r));
  EXPECT_FALSE(it->error().has_value());
}

TEST(RecordBatch, AttributesBits) {
  record_batch_builder b;
  b.set_transactional().set_control().set_timestamp_type(timestamp_type::log_append_time);
  b.add(std::nullopt, std::string_view("x"), 1);
  auto h = validate_record_batch(b.build());
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->is_transactional());
  EXPECT_TRUE(h->is_control());
  EXPECT_EQ(h->ts_type(), timestamp_type::log_append_time);
}

TEST(RecordBatch, LargeValuesUseMultiByteVarints) {
  std::string big(300000, 'z');
  record_batch_builder b;
  b.add(std::string_view("k"), big, -1);
  const auto bytes = b.build();
  auto it = record_iterator::open(bytes);
  ASSERT_TRUE(it.ok());
  record_view r;
  ASSERT_TRUE(it->next(r));
  EXPECT_EQ(r.value->size(), big.size());
  EXPECT_EQ(r.timestamp, -1);
}

TEST(RecordBatch, OffsetAndEpochOutsideCrc) {
  auto bytes = make_batch(3);
  set_base_offset(bytes, 123456789);
  set_partition_leader_epoch(bytes, 42);
  auto h = validate_record_batch(bytes);
  ASSERT_TRUE(h.ok()) << h.err().message;
  EXPECT_EQ(h->base_offset, 123456789);
  EXPECT_EQ(h->partition_leader_epoch, 42);
}

TEST(RecordBatch, LogAppendTimeStampsEveryRecord) {
  auto bytes = make_batch(3, 1000);
  set_log_append_time(bytes, 777777);
  auto h = validate_record_batch(bytes);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->ts_type(), timestamp_type::log_append_time);
  EXPECT_EQ(h->max_timestamp, 777777);
  auto it = record_iterator::open(bytes);
  record_view r;
  int n = 0;
  while (it->next(r)) {
    EXPECT_EQ(r.timestamp, 777777);
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST(RecordBatch, CorruptionDetected) {
  auto bytes = make_batch(2);
  bytes.back() ^= 0x01;
  auto h = validate_record_batch(bytes);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.err().code, errc::corrupt_message);
  recompute_crc(bytes);
  EXPECT_TRUE(validate_record_batch(bytes).ok());
}

TEST(RecordBatch, HeaderErrors) {
  auto bytes = make_batch(2);
  EXPECT_EQ(parse_record_batch_header(std::span<const uint8_t>(bytes).first(5)).err().code, errc::corrupt_message);
  EXPECT_EQ(parse_record_batch_header(std::span<const uint8_t>(bytes).first(bytes.size() - 1)).err().code,
            errc::corrupt_message);
  auto v1 = bytes;
  v1[batch_field::magic] = 1;
  EXPECT_EQ(parse_record_batch_header(v1).err().code, errc::unsupported_magic);
  auto short_len = bytes;
  detail::store_be<int32_t>(short_len.data() + batch_field::batch_length, 20);
  EXPECT_EQ(parse_record_batch_header(short_len).err().code, errc::corrupt_message);
}

TEST(RecordBatch, IteratorRejectsCompressedAndMalformed) {
  auto bytes = make_batch(2);
  auto compressed = bytes;
  compressed[batch_field::attributes + 1] |= 0x01;  // gzip
  EXPECT_EQ(record_iterator::open(compressed).err().code, errc::invalid_argument);

  auto bad = bytes;
  detail::store_be<int32_t>(bad.data() + batch_field::records_count, 3);  // says 3, holds 2
  auto it = record_iterator::open(bad);
  ASSERT_TRUE(it.ok());
  record_view r;
  EXPECT_TRUE(it->next(r));
  EXPECT_TRUE(it->next(r));
  EXPECT_FALSE(it->next(r));
  ASSERT_TRUE(it->error().has_value());
  EXPECT_EQ(it->error()->code, errc::invalid_record);
}

}  // namespace
}  // namespace sluice::storage
