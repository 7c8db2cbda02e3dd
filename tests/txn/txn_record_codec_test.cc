// __transaction_state records: our encoder's bytes decoded field by field by hand (Kafka's TransactionLog
// layout), both directions, v1 values read, and malformed input refused.
#include "broker/txn/txn_record_codec.h"

#include <gtest/gtest.h>

namespace sluice::txn {
namespace {

TEST(txn_record_codec, key_is_version_0_then_the_transactional_id) {
  auto key = encode_key("tx-1");
  EXPECT_EQ(key, (bytes{0, 0, 0, 4, 't', 'x', '-', '1'}));
  auto back = decode_key(key);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "tx-1");
  EXPECT_FALSE(decode_key(bytes{0, 1, 0, 0}));  // version 1 does not exist
  EXPECT_FALSE(decode_key(bytes{0, 0, 0, 9, 'x'}));  // truncated
}

TEST(txn_record_codec, value_v0_layout_and_round_trip) {
  txn_log_value v;
  v.producer_id = 0x0102030405060708;
  v.producer_epoch = 3;
  v.timeout_ms = 60000;
  v.state = txn_state::ongoing;
  v.partitions = {{"b", 1}, {"a", 0}, {"a", 2}};
  v.last_update_timestamp_ms = 1000;
  v.start_timestamp_ms = 900;
  auto bytes_ = encode_value(v);
  // version 0, producer id, epoch, timeout, status, [topic, [partitions]], last update, start.
  bytes expected{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 0, 0xea, 0x60, 1,
                 0, 0, 0, 2,                                  // two topics, sorted
                 0, 1, 'a', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2,
                 0, 1, 'b', 0, 0, 0, 1, 0, 0, 0, 1,
                 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x03, 0x84};
  EXPECT_EQ(bytes_, expected);
  auto back = decode_value(bytes_);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, v);
}

TEST(txn_record_codec, empty_state_writes_null_partitions) {
  txn_log_value v;
  v.producer_id = 7;
  v.producer_epoch = 0;
  v.state = txn_state::empty;
  auto b = encode_value(v);
  // after version(2) id(8) epoch(2) timeout(4) status(1): the array length -1
  ASSERT_GE(b.size(), 21u);
  EXPECT_EQ((bytes{b.begin() + 17, b.begin() + 21}), (bytes{0xff, 0xff, 0xff, 0xff}));
  auto back = decode_value(b);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->partitions.empty());
}

TEST(txn_record_codec, a_previous_producer_id_is_kept_in_version_1) {
  txn_log_value v;
  v.producer_id = 9;
  v.previous_producer_id = 8;
  v.state = txn_state::complete_abort;
  auto b = encode_value(v);
  EXPECT_EQ((bytes{b[0], b[1]}), (bytes{0, 1}));
  auto back = decode_value(b);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, v);
  v.previous_producer_id = -1;
  EXPECT_EQ(encode_value(v)[1], 0) << "nothing to keep: version 0, as Kafka writes for transaction version 1";
}

TEST(txn_record_codec, refuses_unknown_versions_statuses_and_truncation) {
  txn_log_value v;
  v.state = txn_state::complete_commit;
  auto b = encode_value(v);
  auto bad_status = b;
  bad_status[16] = 9;
  EXPECT_FALSE(decode_value(bad_status));
  auto bad_version = b;
  bad_version[1] = 5;
  EXPECT_FALSE(decode_value(bad_version));
  EXPECT_FALSE(decode_value(bytes(b.begin(), b.begin() + 10)));
}

}  // namespace
}  // namespace sluice::txn
