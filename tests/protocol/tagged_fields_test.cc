// Unknown tagged fields (KIP-482) through generated messages: kept on decode, written back in tag order
// among the known ones, counted in encoded_size; and the internal-topic schema TransactionLogValue v1
// (known tagged fields 0-2) byte for byte.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/messages/transaction_state.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace sluice::protocol {
namespace {

TEST(tagged_fields, writer_interleaves_unknown_fields_below_each_known_tag) {
  const std::vector<raw_tagged_field> unknown = {{1, {0xaa}}, {4, {}}, {300, {0xbb, 0xcc}}};
  writer w;
  size_t at = w.write_raw_tagged_fields(unknown, 0, 0);
  EXPECT_EQ(at, 0u) << "nothing below tag 0";
  at = w.write_raw_tagged_fields(unknown, at, 2);
  EXPECT_EQ(at, 1u);
  at = w.write_raw_tagged_fields(unknown, at, uint64_t{1} << 32);
  EXPECT_EQ(at, 3u);
  const std::vector<uint8_t> expected = {0x01, 0x01, 0xaa, 0x04, 0x00, 0xac, 0x02, 0x02, 0xbb, 0xcc};
  EXPECT_EQ(w.finish().bytes, expected);
  EXPECT_EQ(sizes::raw_tagged_fields(unknown), expected.size());
}

// TransactionLogValue v1 with PreviousProducerId (tag 0), ClientTransactionVersion (tag 2) and two tags
// it does not define (3 and 9), in tag order on the wire.
const std::vector<uint8_t> txn_value_v1 = {
    0, 0, 0, 0, 0, 0, 0x10, 0x00,  // ProducerId 4096
    0x00, 0x02,                    // ProducerEpoch 2
    0x00, 0x00, 0xea, 0x60,        // TransactionTimeoutMs 60000
    0x01,                          // TransactionStatus 1 (Ongoing)
    0x02,                          // compact array of 1 partition set
    0x02, 't',                     //   Topic "t"
    0x03, 0, 0, 0, 0, 0, 0, 0, 5,  //   PartitionIds [0, 5]
    0x00,                          //   tagged fields of the partition set
    0, 0, 0, 0, 0, 0, 0, 0x64,     // TransactionLastUpdateTimestampMs 100
    0, 0, 0, 0, 0, 0, 0, 0x32,     // TransactionStartTimestampMs 50
    0x04,                          // 4 tagged fields
    0x00, 0x08, 0, 0, 0, 0, 0, 0, 0x0f, 0xff,  // tag 0: PreviousProducerId 4095
    0x02, 0x02, 0x00, 0x02,                    // tag 2: ClientTransactionVersion 2
    0x03, 0x01, 0x7f,                          // tag 3: unknown, 1 byte
    0x09, 0x00,                                // tag 9: unknown, empty
};

TEST(tagged_fields, transaction_log_value_v1_keeps_unknown_tags) {
  reader r(txn_value_v1);
  transaction_log_value v;
  v.decode(r, 1);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(v.producer_id, 4096);
  EXPECT_EQ(v.previous_producer_id, 4095);
  EXPECT_EQ(v.next_producer_id, -1) << "absent tag 1 keeps its default";
  EXPECT_EQ(v.client_transaction_version, 2);
  ASSERT_TRUE(v.transaction_partitions);
  ASSERT_EQ(v.transaction_partitions->size(), 1u);
  EXPECT_EQ((*v.transaction_partitions)[0].partition_ids, (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(v.unknown_tagged_fields, (std::vector<raw_tagged_field>{{3, {0x7f}}, {9, {}}}));

  EXPECT_EQ(v.encoded_size(1), txn_value_v1.size());
  writer w;
  v.encode(w, 1);
  EXPECT_EQ(w.finish().bytes, txn_value_v1);

  // Version 0 (not flexible) has no tagged section: the unknown fields are not written there.
  writer w0;
  v.encode(w0, 0);
  EXPECT_EQ(w0.size(), v.encoded_size(0));
  const std::vector<uint8_t> v0_bytes = w0.finish().bytes;
  reader r0(v0_bytes);
  transaction_log_value v0;
  v0.decode(r0, 0);
  ASSERT_TRUE(r0.ok()) << r0.error_message();
  EXPECT_TRUE(v0.unknown_tagged_fields.empty());
  EXPECT_EQ(v0.previous_producer_id, -1);
}

TEST(tagged_fields, decode_replaces_unknown_fields_of_a_reused_struct) {
  transaction_log_value v;
  v.unknown_tagged_fields = {{42, {1, 2, 3}}};
  reader r(txn_value_v1);
  v.decode(r, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(v.unknown_tagged_fields.size(), 2u);
}

}  // namespace
}  // namespace sluice::protocol
