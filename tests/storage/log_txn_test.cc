// storage::log with transactions (KIP-98): transactional appends open a producer's transaction, markers end it,
// aborted ones land in the .txnindex of the marker's segment, collect_aborted finds what overlaps a read, and a
// log reopened after a crash (no snapshot of the tail) rebuilds open transactions and the index.
#include <gtest/gtest.h>

#include <filesystem>

#include "storage/errc.h"
#include "storage/log.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::temp_dir;

class LogTxnTest : public ::testing::Test {
 protected:
  std::filesystem::path dir() const { return tmp_.path() / "topic-0"; }
  std::unique_ptr<log> open_log(const std::filesystem::path& d) {
    auto l = log::open(d, cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  std::vector<uint8_t> txn_batch(int64_t pid, int16_t epoch, int32_t seq, int records = 1, bool txn = true) {
    record_batch_builder b;
    b.set_producer(pid, epoch, seq);
    if (txn) b.set_transactional();
    for (int i = 0; i < records; ++i) b.add("k", "v" + std::to_string(seq + i), clock_.now_ms());
    return b.build();
  }
  int64_t append(log& l, std::vector<uint8_t> bytes) {
    auto r = l.append(bytes, 0);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? r->base_offset : -1;
  }
  std::filesystem::path crash_copy(const std::string& name) {
    auto to = tmp_.path() / name;
    std::filesystem::copy(dir(), to, std::filesystem::copy_options::recursive);
    return to;
  }
  log_config cfg;
  temp_dir tmp_;
  manual_clock clock_;
};

TEST_F(LogTxnTest, MarkersEndTransactionsAndAbortsAreIndexed) {
  auto l = open_log(dir());
  EXPECT_EQ(append(*l, txn_batch(1, 0, 0, 3)), 0);  // producer 1: 0..2
  EXPECT_EQ(append(*l, txn_batch(2, 0, 0, 2)), 3);  // producer 2: 3..4
  EXPECT_EQ(l->first_unstable_offset(), 0);
  auto a = l->append_marker(1, 0, {false, 4}, 0);  // abort producer 1 at 5
  ASSERT_TRUE(a) << a.err().message;
  EXPECT_EQ(a->offset, 5);
  EXPECT_EQ(a->txn, (completed_txn{1, 0, 5, true}));
  EXPECT_EQ(l->log_end_offset(), 6);
  l->on_high_watermark_updated(6);
  EXPECT_EQ(l->first_unstable_offset(), 3) << "producer 2 is still open";
  auto c = l->append_marker(2, 0, {true, 4}, 0);  // commit producer 2 at 6
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->txn.aborted);
  l->on_high_watermark_updated(7);
  EXPECT_FALSE(l->first_unstable_offset());
  EXPECT_TRUE(std::filesystem::exists(dir() / "00000000000000000000.txnindex"));

  auto aborted = l->collect_aborted(0, 7);
  ASSERT_EQ(aborted.size(), 1u);
  EXPECT_EQ(aborted[0], (aborted_txn{1, 0, 5, 3})) << "LSO after the abort: producer 2's first offset";
  EXPECT_TRUE(l->collect_aborted(6, 7).empty()) << "a read after the marker needs nothing";

  // The read returns the marker as a batch too (consumers skip control batches).
  auto r = l->read(5, 1 << 20, 7, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first_offset, 5);
}

// A coordinator's transactional writes (the group coordinator's TxnOffsetCommit: base sequence -1, Kafka's
// RecordBatch.NO_SEQUENCE) skip the sequence and duplicate checks (AppendOrigin.COORDINATOR), keep the epoch check,
// and open the producer's transaction like any transactional batch.
TEST_F(LogTxnTest, CoordinatorOriginSkipsSequenceChecksButNotTheEpoch) {
  auto l = open_log(dir());
  auto first = txn_batch(5, 2, -1, 2);
  auto a = l->append(first, 0, append_origin::coordinator);
  ASSERT_TRUE(a.ok()) << a.err().message;
  EXPECT_EQ(a->base_offset, 0);
  EXPECT_EQ(l->producer_state().open_transactions().at(0), 5);
  // The same sequence range again is no duplicate for the coordinator: written at the next offsets.
  auto second = txn_batch(5, 2, -1, 2);
  auto b = l->append(second, 0, append_origin::coordinator);
  ASSERT_TRUE(b.ok()) << b.err().message;
  EXPECT_FALSE(b->duplicate);
  EXPECT_EQ(b->base_offset, 2);
  // A client may not send it: a batch with a producer id and no sequence is INVALID_RECORD (Kafka's
  // validateBatch), and nothing is written.
  auto third = txn_batch(5, 2, -1, 2);
  auto c = l->append(third, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.err().code, errc::invalid_record);
  EXPECT_EQ(l->log_end_offset(), 4);
  // An older epoch is fenced whatever the origin.
  auto stale = txn_batch(5, 1, -1, 1);
  auto d = l->append(stale, 0, append_origin::coordinator);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.err().code, errc::invalid_producer_epoch);
  // The marker ends the transaction the coordinator's batches opened.
  auto m = l->append_marker(5, 2, {true, 0}, 0);
  ASSERT_TRUE(m.ok()) << m.err().message;
  EXPECT_EQ(m->offset, 4);
  EXPECT_TRUE(l->producer_state().open_transactions().empty());
}

TEST_F(LogTxnTest, FencingAndInvalidStates) {
  auto l = open_log(dir());
  append(*l, txn_batch(1, 2, 0));
  auto plain = txn_batch(1, 2, 1, 1, false);
  EXPECT_EQ(l->append(plain, 0).err().code, errc::invalid_txn_state);
  EXPECT_EQ(l->append_marker(1, 1, {true, 0}, 0).err().code, errc::invalid_producer_epoch);
  ASSERT_TRUE(l->append_marker(1, 3, {false, 5}, 0)) << "a bumped epoch fences the producer";
  auto old = txn_batch(1, 2, 1);
  EXPECT_EQ(l->append(old, 0).err().code, errc::invalid_producer_epoch);
  EXPECT_EQ(l->append_marker(1, 3, {true, 4}, 0).err().code, errc::coordinator_fenced);
  EXPECT_EQ(l->log_end_offset(), 2) << "nothing refused was written";
}

TEST_F(LogTxnTest, AbortsInLaterSegmentsAreFoundAndRecoveryRebuildsState) {
  cfg.segment_bytes = 300;  // rolls every few batches
  auto l = open_log(dir());
  int32_t seq = 0;
  append(*l, txn_batch(7, 0, seq, 2));  // opens at 0
  seq += 2;
  for (int i = 0; i < 6; ++i) {
    append(*l, txn_batch(8, 0, i));  // another producer's transaction, to roll segments
  }
  ASSERT_TRUE(l->append_marker(8, 0, {true, 1}, 0));
  auto a = l->append_marker(7, 0, {false, 1}, 0);
  ASSERT_TRUE(a);
  ASSERT_GT(l->segment_count(), 1u);
  auto found = l->collect_aborted(0, 2);
  ASSERT_EQ(found.size(), 1u) << "the abort's entry is in the marker's (later) segment";
  EXPECT_EQ(found[0].first_offset, 0);
  EXPECT_EQ(found[0].last_offset, a->offset);

  // An open transaction, then a crash: the tail after the newest snapshot is replayed.
  const int64_t open_first = append(*l, txn_batch(9, 0, 0, 2));
  const auto crashed = crash_copy("crashed");
  auto l2 = open_log(crashed);
  ASSERT_NE(l2, nullptr);
  EXPECT_EQ(l2->producer_state().find(9)->current_txn_first_offset, open_first);
  l2->on_high_watermark_updated(l2->log_end_offset());
  EXPECT_EQ(l2->first_unstable_offset(), open_first);
  auto again = l2->collect_aborted(0, 2);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], found[0]);

  // The index file lost (a crash before it was written): rebuilt from the markers replayed after the snapshot.
  const auto lost = crash_copy("lost-index");
  for (const auto& e : std::filesystem::directory_iterator(lost)) {
    if (e.path().extension() == ".txnindex") std::filesystem::remove(e.path());
  }
  for (const auto& e : std::filesystem::directory_iterator(lost)) {
    if (e.path().extension() == ".snapshot") std::filesystem::remove(e.path());
  }
  auto l3 = open_log(lost);
  ASSERT_NE(l3, nullptr);
  auto rebuilt = l3->collect_aborted(0, 2);
  ASSERT_EQ(rebuilt.size(), 1u);
  EXPECT_EQ(rebuilt[0], found[0]);
}

TEST_F(LogTxnTest, TruncationDropsAbortedEntriesAtOrPastTheCut) {
  auto l = open_log(dir());
  append(*l, txn_batch(1, 0, 0));
  auto a = l->append_marker(1, 0, {false, 0}, 0);
  ASSERT_TRUE(a);
  append(*l, txn_batch(1, 0, 1));
  ASSERT_EQ(l->collect_aborted(0, 10).size(), 1u);
  ASSERT_TRUE(l->truncate_to(a->offset));
  EXPECT_TRUE(l->collect_aborted(0, 10).empty());
  EXPECT_EQ(l->producer_state().find(1)->current_txn_first_offset, 0) << "the transaction is open again";
}

}  // namespace
}  // namespace sluice::storage
