// Transactions in storage (KIP-98): transaction markers (control batches) built and parsed, the aborted-
// transaction index (.txnindex: Kafka's 34-byte entries) written, reopened, searched and truncated, and the
// producer state's open transactions, markers and first unstable offset.
#include <gtest/gtest.h>

#include <fstream>

#include "storage/byte_order.h"
#include "storage/control_record.h"
#include "storage/errc.h"
#include "storage/producer_state.h"
#include "storage/transaction_index.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::temp_dir;

TEST(ControlRecord, MarkerBatchRoundTripAndLayout) {
  auto batch = build_end_txn_marker_batch(42, 3, {true, 7}, 1000);
  auto h = validate_record_batch(batch);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->is_control());
  EXPECT_TRUE(h->is_transactional());
  EXPECT_EQ(h->producer_id, 42);
  EXPECT_EQ(h->producer_epoch, 3);
  EXPECT_EQ(h->base_sequence, -1);
  EXPECT_EQ(h->records_count, 1);
  auto it = record_iterator::open(batch);
  ASSERT_TRUE(it);
  record_view r;
  ASSERT_TRUE(it->next(r));
  ASSERT_TRUE(r.key && r.value);
  EXPECT_EQ(std::string(*r.key), std::string("\0\0\0\1", 4)) << "key version 0, type COMMIT (1)";
  EXPECT_EQ(std::string(*r.value), std::string("\0\0\0\0\0\7", 6)) << "value version 0, coordinator epoch 7";
  auto m = parse_end_txn_marker(batch);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (end_txn_marker{true, 7}));
  auto abort = parse_end_txn_marker(build_end_txn_marker_batch(42, 3, {false, 0}, 1000));
  ASSERT_TRUE(abort);
  EXPECT_FALSE(abort->commit);
  // A data batch is not a marker.
  auto data = testing::make_batch(1);
  EXPECT_EQ(parse_end_txn_marker(data).err().code, errc::invalid_record);
}

TEST(TransactionIndex, AppendReopenCollectTruncate) {
  temp_dir tmp;
  const auto path = tmp.path() / "00000000000000000000.txnindex";
  {
    auto idx = transaction_index::open(path);
    ASSERT_TRUE(idx);
    ASSERT_TRUE(idx->append({1, 0, 10, 11}));
    ASSERT_TRUE(idx->append({2, 5, 20, 21}));
    ASSERT_TRUE(idx->append({3, 30, 40, 41}));
    EXPECT_EQ(idx->append({4, 1, 40, 41}).err().code, errc::invalid_argument) << "last offsets must increase";
    idx->close();
  }
  EXPECT_EQ(std::filesystem::file_size(path), 3 * aborted_txn_entry_size);
  auto idx = transaction_index::open(path);
  ASSERT_TRUE(idx);
  ASSERT_EQ(idx->entries().size(), 3u);
  EXPECT_EQ(idx->entries()[1], (aborted_txn{2, 5, 20, 21}));

  std::vector<aborted_txn> out;
  // Fetching [12, 25): the transaction of producer 2 (5..20) overlaps; 1 ended at 10; 3 starts at 30.
  EXPECT_TRUE(idx->collect_aborted(12, 25, out)) << "entry 3's LSO 41 >= 25: no later segment matters";
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].producer_id, 2);
  out.clear();
  EXPECT_FALSE(idx->collect_aborted(0, 100, out));
  EXPECT_EQ(out.size(), 3u);

  ASSERT_TRUE(idx->truncate_to(20));
  EXPECT_EQ(idx->entries().size(), 1u) << "entries whose marker is at or past 20 are cut";
  EXPECT_EQ(std::filesystem::file_size(path), aborted_txn_entry_size);
  ASSERT_TRUE(idx->reset());
  EXPECT_TRUE(idx->entries().empty());
}

TEST(TransactionIndex, EntryBytesAreKafkasLayoutAndCorruptFilesAreRefused) {
  auto b = transaction_index::encode({0x0102, 3, 4, 5});
  ASSERT_EQ(b.size(), 34u);
  EXPECT_EQ(detail::load_be<int16_t>(b.data()), 0);
  EXPECT_EQ(detail::load_be<int64_t>(b.data() + 2), 0x0102);
  EXPECT_EQ(detail::load_be<int64_t>(b.data() + 10), 3);
  EXPECT_EQ(detail::load_be<int64_t>(b.data() + 18), 4);
  EXPECT_EQ(detail::load_be<int64_t>(b.data() + 26), 5);
  temp_dir tmp;
  const auto torn = tmp.path() / "torn.txnindex";
  {
    std::ofstream f(torn, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), 20);
  }
  EXPECT_EQ(transaction_index::open(torn).err().code, errc::corrupt_message);
  const auto version = tmp.path() / "version.txnindex";
  b[1] = 9;
  {
    std::ofstream f(version, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  EXPECT_EQ(transaction_index::open(version).err().code, errc::corrupt_message);
}

class ProducerTxnStateTest : public ::testing::Test {
 protected:
  record_batch_header data(int64_t pid, int16_t epoch, int32_t seq, int64_t offset, int records, bool txn) {
    record_batch_header h;
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.base_offset = offset;
    h.last_offset_delta = records - 1;
    h.records_count = records;
    h.max_timestamp = 1000;
    if (txn) h.attributes = batch_attribute::transactional_bit;
    return h;
  }
  record_batch_header marker(int64_t pid, int16_t epoch, int64_t offset) {
    auto h = data(pid, epoch, -1, offset, 1, true);
    h.attributes = static_cast<int16_t>(batch_attribute::transactional_bit | batch_attribute::control_bit);
    return h;
  }
  sluice::result<std::optional<producer_batch_metadata>> append(const record_batch_header& h) {
    producer_state_manager::pending_append p;
    auto r = state.check_and_stage(p, h);
    if (r && !r->has_value()) state.commit(std::move(p));
    return r;
  }
  temp_dir tmp;
  producer_state_manager state{tmp.path(), 86400000};
};

TEST_F(ProducerTxnStateTest, OpenTransactionsBoundTheFirstUnstableOffset) {
  ASSERT_TRUE(append(data(1, 0, 0, 0, 2, true)));   // producer 1 opens at 0
  ASSERT_TRUE(append(data(2, 0, 0, 2, 1, false)));  // idempotent only
  ASSERT_TRUE(append(data(3, 0, 0, 3, 1, true)));   // producer 3 opens at 3
  ASSERT_TRUE(append(data(1, 0, 2, 4, 1, true)));   // producer 1's transaction goes on
  EXPECT_EQ(state.find(1)->current_txn_first_offset, 0);
  EXPECT_EQ(state.find(2)->current_txn_first_offset, -1);
  EXPECT_EQ(state.first_unstable_offset(), 0);
  EXPECT_EQ(state.open_transactions().size(), 2u);

  // A non-transactional batch from a producer with an open transaction is refused.
  EXPECT_EQ(append(data(1, 0, 3, 5, 1, false)).err().code, errc::invalid_txn_state);

  // Producer 1 aborts (marker at 5): unstable until the HW passes 5.
  auto m = marker(1, 0, 5);
  ASSERT_TRUE(state.check_marker(m, {false, 0}));
  auto t = state.complete_txn(m, {false, 0});
  EXPECT_EQ(t, (completed_txn{1, 0, 5, true}));
  EXPECT_EQ(state.last_stable_offset_after(t), 3) << "producer 3's transaction is still open";
  EXPECT_EQ(state.find(1)->current_txn_first_offset, -1);
  EXPECT_EQ(state.first_unstable_offset(), 0) << "the marker is not replicated yet";
  state.on_high_watermark_updated(6);
  EXPECT_EQ(state.first_unstable_offset(), 3);
  // Producer 3 commits (marker at 6), HW past it: nothing unstable.
  auto t3 = state.complete_txn(marker(3, 0, 6), {true, 0});
  EXPECT_FALSE(t3.aborted);
  EXPECT_EQ(state.last_stable_offset_after(t3), 7);
  state.on_high_watermark_updated(7);
  EXPECT_FALSE(state.first_unstable_offset());
  // After the marker producer 1 may write non-transactionally again, or open a new transaction.
  EXPECT_TRUE(append(data(1, 0, 3, 7, 1, false)));
}

TEST_F(ProducerTxnStateTest, MarkerEpochAndCoordinatorEpochFencing) {
  ASSERT_TRUE(append(data(1, 2, 0, 0, 1, true)));
  EXPECT_EQ(state.check_marker(marker(1, 1, 1), {true, 0}).err().code, errc::invalid_producer_epoch);
  // A marker with a bumped epoch (the coordinator fenced the producer) moves the epoch.
  auto t = state.complete_txn(marker(1, 3, 1), {false, 5});
  EXPECT_TRUE(t.aborted);
  EXPECT_EQ(state.find(1)->producer_epoch, 3);
  EXPECT_EQ(state.find(1)->coordinator_epoch, 5);
  EXPECT_EQ(append(data(1, 2, 1, 2, 1, true)).err().code, errc::invalid_producer_epoch) << "the old epoch is fenced";
  EXPECT_EQ(state.check_marker(marker(1, 3, 2), {true, 4}).err().code, errc::coordinator_fenced);
  EXPECT_TRUE(state.check_marker(marker(1, 3, 2), {true, 5}));
  // A marker for a producer with nothing open completes no transaction (Kafka emits no CompletedTxn): it is
  // not unstable and gets no aborted-transaction entry.
  const auto unstable_before = state.first_unstable_offset();
  auto empty = state.complete_txn(marker(9, 0, 20), {false, 5});
  EXPECT_EQ(empty, (completed_txn{9, 20, 20, true, false}));
  EXPECT_EQ(state.first_unstable_offset(), unstable_before) << "an empty transaction is never unstable";
  EXPECT_EQ(state.find(9)->coordinator_epoch, 5) << "the producer's state still takes the marker";
}

TEST_F(ProducerTxnStateTest, OpenTransactionsSurviveASnapshotAndReplay) {
  ASSERT_TRUE(append(data(1, 0, 0, 10, 2, true)));
  state.set_map_end_offset(12);
  ASSERT_TRUE(state.take_snapshot());
  producer_state_manager loaded(tmp.path(), 86400000);
  ASSERT_EQ(loaded.load_latest_snapshot(100, 2000), 12);
  EXPECT_EQ(loaded.find(1)->current_txn_first_offset, 10);
  EXPECT_EQ(loaded.first_unstable_offset(), 10);
  loaded.replay(data(4, 0, 0, 12, 1, true));
  EXPECT_EQ(loaded.open_transactions().at(12), 4);
  loaded.complete_txn(marker(1, 0, 13), {true, 0});
  loaded.on_high_watermark_updated(14);
  EXPECT_EQ(loaded.first_unstable_offset(), 12);
  // Expiry keeps producers with an open transaction.
  EXPECT_EQ(loaded.remove_expired(1000 + 86400000 + 1), 1u);
  EXPECT_NE(loaded.find(4), nullptr);
  loaded.reset(0);
  EXPECT_FALSE(loaded.first_unstable_offset());
}

}  // namespace
}  // namespace sluice::storage
