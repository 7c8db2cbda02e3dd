// The leader's side of replication in broker::partition: high watermark = smallest LEO over the ISR,
// ISR shrink and expansion proposals, min.insync.replicas, and what a role change does to appends. The
// partition's purgatory (wait_for_high_watermark, park) on the test's manual clock: time moves only when a
// test advances it, so every deadline is checked to the millisecond.
#include "broker/partition.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/clock.h"
#include "storage/errc.h"
#include "storage/record_batch.h"

namespace sluice::broker {
namespace {

std::vector<uint8_t> batch(int records) {
  storage::record_batch_builder b;
  for (int i = 0; i < records; ++i) b.add("k", "value-" + std::to_string(i), 1000 + i);
  return b.build();
}

class PartitionReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sluice-partition-test-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto l = storage::log::open(dir_ / "t-0", storage::log_config{}, clock_);
    ASSERT_TRUE(l.ok()) << l.err().message;
    log_ = std::move(l.value());
    p_ = std::make_shared<partition>("t", 0, log_.get(), io_.get_executor());
  }
  void TearDown() override {
    p_->close();
    std::filesystem::remove_all(dir_);
  }
  /// Runs what is ready on the io_context (the partition's strand and the waits' completions).
  void drain() {
    io_.restart();
    io_.poll();
  }
  /// Starts the coroutine form of wait_for_high_watermark; its outcome lands in the returned slot.
  std::shared_ptr<std::optional<hw_wait_result>> start_wait(int64_t offset, int32_t min_isr, int64_t timeout_ms) {
    auto out = std::make_shared<std::optional<hw_wait_result>>();
    const uint64_t term = p_->leadership_changes();
    auto until = wait_deadline::after(clock_, timeout_ms);
    boost::asio::co_spawn(io_, [p = p_, out, offset, term, min_isr, until]() -> boost::asio::awaitable<void> {
      auto op = p->wait_for_high_watermark(offset, term, min_isr, until);
      *out = co_await std::move(op);
    }, boost::asio::detached);
    drain();
    return out;
  }
  int64_t append(int records, int16_t acks = 1, int32_t min_isr = 1) {
    auto bytes = batch(records);
    auto r = p_->append(bytes, acks, min_isr);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? r->last_offset : -1;
  }

  std::filesystem::path dir_;
  manual_clock clock_;
  boost::asio::io_context io_;
  std::unique_ptr<storage::log> log_;
  std::shared_ptr<partition> p_;
};

TEST_F(PartitionReplicationTest, SingleReplicaHighWatermarkFollowsTheLogEnd) {
  append(3);
  EXPECT_EQ(p_->log_end_offset(), 3);
  EXPECT_EQ(p_->high_watermark(), 3);
}

TEST_F(PartitionReplicationTest, HighWatermarkIsTheSmallestLogEndOffsetOfTheIsr) {
  p_->become_leader(1, 5, {1, 2, 3}, {1, 2, 3}, 0, 0);
  EXPECT_EQ(p_->leader_epoch(), 5);
  append(5);
  EXPECT_EQ(p_->log_end_offset(), 5);
  EXPECT_EQ(p_->high_watermark(), 0);  // no follower has fetched yet
  EXPECT_FALSE(p_->record_follower_fetch(2, 5, 10).has_value());
  EXPECT_EQ(p_->high_watermark(), 0);  // broker 3 (in the ISR) still unknown
  p_->record_follower_fetch(3, 3, 10);
  EXPECT_EQ(p_->high_watermark(), 3);
  p_->record_follower_fetch(3, 5, 20);
  EXPECT_EQ(p_->high_watermark(), 5);
  // The new epoch starts at offset 0 in the leader epoch cache; batches carry epoch 5.
  EXPECT_EQ(p_->latest_epoch(), 5);
  EXPECT_EQ(p_->end_offset_for_epoch(5).start_offset, 5);
}

// A cluster replica restarted over a log whose tail it alone holds, then told it still leads at the same epoch (the
// controller has not moved the leadership yet): the tail is not committed until every ISR member's LEO is known.
// (Found by tests/chaos/partitions.py, seed 777: a consumer read such a tail, which the next leader did not have.)
TEST_F(PartitionReplicationTest, RestartedReplicaLeadingAtTheSameEpochCommitsNothingUnreplicated) {
  append(8);  // written before the restart; followers had only offsets below 5
  ASSERT_EQ(p_->high_watermark(), 8);  // as a single node's partition
  p_->start_as_cluster_replica();
  EXPECT_EQ(p_->high_watermark(), 0);
  EXPECT_EQ(p_->role(), replica_role::offline);
  p_->become_leader(1, 0, {1, 2, 3}, {1, 2, 3}, 4, 0);  // the state in ZooKeeper: leader 1, epoch 0, ISR [1,2,3]
  EXPECT_EQ(p_->high_watermark(), 0);
  p_->record_follower_fetch(2, 8, 10);
  EXPECT_EQ(p_->high_watermark(), 0);  // 3 still unknown
  p_->record_follower_fetch(3, 5, 10);
  EXPECT_EQ(p_->high_watermark(), 5);  // 5-7 are on 1 and 2 only
}

TEST_F(PartitionReplicationTest, LaggingFollowerIsProposedOutAndCaughtUpFollowerIn) {
  p_->become_leader(1, 1, {1, 2, 3}, {1, 2, 3}, 7, 0);
  append(4);
  p_->record_follower_fetch(2, 4, 1000);  // caught up at t=1000
  p_->record_follower_fetch(3, 1, 100);  // behind
  EXPECT_FALSE(p_->propose_isr_shrink(1000, 3000).has_value());
  auto shrink = p_->propose_isr_shrink(3200, 3000);  // 3 has not caught up since t=0
  ASSERT_TRUE(shrink.has_value());
  EXPECT_EQ(shrink->isr, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(shrink->version, 7);
  EXPECT_FALSE(p_->propose_isr_shrink(3300, 3000).has_value());  // one change pending at a time
  p_->apply_isr({1, {1, 2}, 8});
  EXPECT_EQ(p_->isr_size(), 2);
  EXPECT_EQ(p_->high_watermark(), 4);  // only 1 and 2 count now

  // Broker 3 catches up to the HW: proposed back in, based on the stored version.
  EXPECT_FALSE(p_->record_follower_fetch(3, 2, 3400).has_value());
  auto expand = p_->record_follower_fetch(3, 4, 3500);
  ASSERT_TRUE(expand.has_value());
  EXPECT_EQ(expand->isr, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(expand->version, 8);
  p_->clear_pending_isr();  // e.g. a version conflict: a new proposal may come
  EXPECT_TRUE(p_->record_follower_fetch(3, 4, 3600).has_value());
}

// KIP-392: the followers a consumer may be sent to are those in the ISR holding the fetch offset.
TEST_F(PartitionReplicationTest, ReadReplicaCandidatesAreInSyncFollowersHoldingTheOffset) {
  p_->become_leader(1, 1, {1, 2, 3, 4}, {1, 2, 3}, 0, 0);
  append(6);
  EXPECT_TRUE(p_->read_replica_candidates(0).empty());  // no follower has fetched in this epoch
  p_->record_follower_fetch(2, 6, 100);
  p_->record_follower_fetch(3, 4, 100);
  p_->record_follower_fetch(4, 6, 100);  // caught up but not (yet) in the ISR
  auto ids = [](const std::vector<follower_progress>& v) {
    std::vector<int32_t> out;
    for (const auto& f : v) out.push_back(f.broker_id);
    return out;
  };
  EXPECT_EQ(ids(p_->read_replica_candidates(4)), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(ids(p_->read_replica_candidates(5)), (std::vector<int32_t>{2}));  // 3 holds offsets below 4 only
  EXPECT_EQ(p_->read_replica_candidates(4)[0].log_end_offset, 6);
  p_->record_follower_fetch(2, 6, 200, /*log_start_offset=*/5);  // 2's log starts at 5 now (DeleteRecords)
  EXPECT_EQ(ids(p_->read_replica_candidates(4)), (std::vector<int32_t>{3}));
  EXPECT_EQ(ids(p_->read_replica_candidates(5)), (std::vector<int32_t>{2}));
  p_->become_follower(2, 2);
  EXPECT_TRUE(p_->read_replica_candidates(0).empty());  // only a leader names read replicas
}

// DeleteRecords (Kafka's DelayedDeleteRecords): answered once every in-sync follower's log start reached the
// new log start, so none of them still serves the deleted records.
TEST_F(PartitionReplicationTest, LowWatermarkWaitsForTheInSyncFollowersLogStarts) {
  p_->become_leader(1, 1, {1, 2, 3}, {1, 2}, 0, 0);
  append(5);
  p_->record_follower_fetch(2, 5, 10, 0);
  p_->record_follower_fetch(3, 5, 10, 0);  // not in the ISR: not waited for
  ASSERT_EQ(p_->high_watermark(), 5);
  ASSERT_TRUE(p_->delete_records_before(3).ok());
  EXPECT_EQ(p_->log_start_offset(), 3);
  EXPECT_EQ(p_->low_watermark(), 0);  // follower 2 still starts at 0
  auto start = [&](int64_t offset, int64_t timeout_ms) {
    auto out = std::make_shared<std::optional<low_watermark_wait>>();
    boost::asio::co_spawn(io_, [p = p_, out, offset, until = wait_deadline::after(clock_, timeout_ms)]()
                                   -> boost::asio::awaitable<void> {
      auto op = p->wait_for_low_watermark(offset, until);
      *out = co_await std::move(op);
    }, boost::asio::detached);
    drain();
    return out;
  };
  auto waited = start(3, 1000);
  EXPECT_FALSE(waited->has_value());
  p_->record_follower_fetch(2, 5, 20);  // a fetch without a log start changes nothing
  drain();
  EXPECT_FALSE(waited->has_value());
  p_->record_follower_fetch(2, 5, 30, 3);
  drain();
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ((*waited)->how, low_watermark_wait::outcome::reached);
  EXPECT_EQ((*waited)->low_watermark, 3);

  ASSERT_TRUE(p_->delete_records_before(4).ok());
  auto late = start(4, 100);
  clock_.advance_ms(99);
  drain();
  EXPECT_FALSE(late->has_value());
  clock_.advance_ms(1);
  drain();
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ((*late)->how, low_watermark_wait::outcome::timed_out);
  EXPECT_EQ((*late)->low_watermark, 3);

  p_->become_follower(2, 2);
  auto gone = start(4, 1000);
  ASSERT_TRUE(gone->has_value());
  EXPECT_EQ((*gone)->how, low_watermark_wait::outcome::not_leader);
}

TEST_F(PartitionReplicationTest, MinInsyncReplicasRefusesAcksAllOnly) {
  p_->become_leader(1, 1, {1, 2, 3}, {1}, 0, 0);
  auto bytes = batch(1);
  auto refused = p_->append(bytes, -1, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, partition_errc::not_enough_replicas);
  EXPECT_EQ(p_->log_end_offset(), 0);  // nothing written
  EXPECT_EQ(append(1, 1, 2), 0);        // acks=1 is not bound by min.insync.replicas
}

TEST_F(PartitionReplicationTest, FollowerRefusesProduceAndWakesParkedWaiters) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(2);
  auto waiter = std::make_shared<purgatory_waiter>(io_.get_executor());
  p_->park(waiter, 1);  // waits for the HW to pass offset 1
  EXPECT_FALSE(waiter->woken());
  p_->become_follower(2, 2);
  EXPECT_TRUE(waiter->woken());
  EXPECT_FALSE(p_->is_leader());
  EXPECT_EQ(p_->leader_id(), 2);
  auto bytes = batch(1);
  auto r = p_->append(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, partition_errc::not_leader);
}

TEST_F(PartitionReplicationTest, FollowerTakesTheLeadersHighWatermarkCappedByItsLogEnd) {
  // A leader's log to copy from.
  manual_clock clock;
  auto leader_dir = dir_ / "leader-0";
  auto leader = storage::log::open(leader_dir, storage::log_config{}, clock);
  ASSERT_TRUE(leader.ok());
  for (int i = 0; i < 3; ++i) {
    auto b = batch(1);
    ASSERT_TRUE((*leader)->append(b, 4).ok());
  }
  auto read = (*leader)->read(0, 1 << 20, 3, true);
  ASSERT_TRUE(read.ok());
  std::vector<uint8_t> copied(static_cast<size_t>(read->region.size));
  ASSERT_EQ(::pread(read->region.file->fd(), copied.data(), copied.size(), read->region.position),
            static_cast<ssize_t>(copied.size()));

  p_->become_follower(9, 4);
  EXPECT_FALSE(p_->append_as_follower(copied, 10, 0, 3).ok());  // an older epoch's fetch: refused
  auto r = p_->append_as_follower(copied, 10, 0, 4);  // the leader claims HW 10; we have 3
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(p_->log_end_offset(), 3);
  EXPECT_EQ(p_->high_watermark(), 3);
  ASSERT_TRUE(p_->truncate_to(1, 4).ok());
  EXPECT_EQ(p_->log_end_offset(), 1);
  EXPECT_EQ(p_->high_watermark(), 1);
  (*leader)->close();
}

// A breaker's packet: a 100-byte Records field whose first batch header claims batchLength 0x7fffffff. The
// walk looking for control batches once read past the buffer (SIGSEGV); now the log's validation answers.
TEST_F(PartitionReplicationTest, BatchLengthPastTheEndIsCorruptNotACrash) {
  auto bytes = batch(1);
  bytes.resize(100, 0);
  const uint32_t huge = 0x7fffffff;
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<uint8_t>(huge >> (24 - 8 * i));
  auto r = p_->append(bytes, 1, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, storage::errc::corrupt_message) << r.err().message;
  EXPECT_EQ(p_->log_end_offset(), 0);
  // Another length that lands past the end after one whole batch.
  auto two = batch(1);
  const size_t first = two.size();
  two.resize(first + 70, 0);
  const uint32_t len = 0x1105668c;
  for (int i = 0; i < 4; ++i) two[first + 8 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
  two[first + 16] = 2;  // magic
  auto r2 = p_->append(two, 1, 1);
  EXPECT_FALSE(r2.ok());
  EXPECT_EQ(p_->log_end_offset(), 0);
}

TEST_F(PartitionReplicationTest, HighWatermarkWaitEndsWhenTheFollowerCatchesUp) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(3);
  auto waited = start_wait(3, 2, 1000);
  EXPECT_FALSE(waited->has_value());
  p_->record_follower_fetch(2, 2, 0);  // HW 2: not there yet
  drain();
  EXPECT_FALSE(waited->has_value());
  clock_.advance_ms(999);
  drain();
  EXPECT_FALSE(waited->has_value());
  p_->record_follower_fetch(2, 3, 0);  // HW 3
  drain();
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ(**waited, hw_wait_result::reached);
}

TEST_F(PartitionReplicationTest, HighWatermarkWaitEndsWithNotLeaderWhenThePartitionCloses) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(1);
  auto waited = start_wait(1, 1, 500);
  EXPECT_FALSE(waited->has_value());
  p_->close();  // the topic deleted under the wait
  drain();
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ(**waited, hw_wait_result::not_leader);
}

TEST_F(PartitionReplicationTest, HighWatermarkWaitTimesOutWhenTheClockReachesTheDeadlineNotBefore) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(1);
  auto waited = start_wait(1, 1, 500);
  clock_.advance_ms(499);
  drain();
  EXPECT_FALSE(waited->has_value());
  clock_.advance_ms(1);
  drain();
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ(**waited, hw_wait_result::timed_out);
  // A deadline passed already: answered at once, without parking.
  auto late = start_wait(1, 1, 0);
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ(**late, hw_wait_result::timed_out);
}

TEST_F(PartitionReplicationTest, HighWatermarkWaitEndsWithNotLeaderWhenLeadershipMoves) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(1);
  auto waited = start_wait(1, 1, 1000);
  EXPECT_FALSE(waited->has_value());
  // A new leader epoch while still leading (an ISR change by the controller) does not end it.
  p_->become_leader(1, 2, {1, 2}, {1, 2}, 1, 0);
  drain();
  EXPECT_FALSE(waited->has_value());
  p_->become_follower(2, 3);
  drain();
  ASSERT_TRUE(waited->has_value());
  EXPECT_EQ(**waited, hw_wait_result::not_leader);
  // Leading again does not make an older append's wait good: its term is gone.
  std::optional<hw_wait_result> again;
  p_->become_leader(1, 4, {1}, {1}, 2, 0);
  p_->wait_for_high_watermark(0, p_->leadership_changes() - 1, 1, wait_deadline::after(clock_, 10),
                              [&](hw_wait_result r) { again = r; });
  EXPECT_EQ(again, hw_wait_result::not_leader);
}

TEST_F(PartitionReplicationTest, HighWatermarkWaitReachedWithTheIsrBelowTheMinimumIsNotEnoughReplicas) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  append(2);
  std::optional<hw_wait_result> waited;
  p_->wait_for_high_watermark(2, p_->leadership_changes(), 2, wait_deadline::after(clock_, 1000),
                              [&](hw_wait_result r) { waited = r; });  // the callback form, on the strand
  drain();
  EXPECT_FALSE(waited.has_value());
  p_->apply_isr({1, {1}, 1});  // broker 2 dropped: the HW moves to the LEO, the ISR is 1 < 2
  drain();
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(*waited, hw_wait_result::not_enough_replicas);
}

TEST_F(PartitionReplicationTest, ParkedFetchEndsAtMaxWaitOnTheClockOrEarlyOnAppend) {
  auto wait = [&](const std::shared_ptr<purgatory_waiter>& w, int64_t ms) {
    auto done = std::make_shared<bool>(false);
    boost::asio::co_spawn(io_, [w, done, until = wait_deadline::after(clock_, ms)]() -> boost::asio::awaitable<void> {
      auto op = w->wait(until);
      co_await std::move(op);
      *done = true;
    }, boost::asio::detached);
    drain();
    return done;
  };
  // Nothing appended: ends when the clock reaches max_wait, not a millisecond before.
  auto idle = std::make_shared<purgatory_waiter>(io_.get_executor());
  p_->park(idle, 0);
  auto idle_done = wait(idle, 100);
  clock_.advance_ms(99);
  drain();
  EXPECT_FALSE(*idle_done);
  clock_.advance_ms(1);
  drain();
  EXPECT_TRUE(*idle_done);
  EXPECT_FALSE(idle->woken());
  // An append (single replica: the HW follows) wakes it long before.
  auto fed = std::make_shared<purgatory_waiter>(io_.get_executor());
  p_->park(fed, 0);
  auto fed_done = wait(fed, 100);
  EXPECT_FALSE(*fed_done);
  append(1);
  drain();
  EXPECT_TRUE(*fed_done);
  EXPECT_TRUE(fed->woken());
}

}  // namespace
}  // namespace sluice::broker

namespace sluice::broker {
namespace {

std::vector<uint8_t> txn_batch(int64_t pid, int32_t seq, int records) {
  storage::record_batch_builder b;
  b.set_producer(pid, 0, seq).set_transactional();
  for (int i = 0; i < records; ++i) b.add("k", "txn-" + std::to_string(seq + i), 1000 + i);
  return b.build();
}

// KIP-98 on the leader: the last stable offset stops at the oldest open transaction and, with followers,
// at a decided one until the high watermark passes its marker; read_committed reads stop there and carry
// the aborted transactions.
TEST_F(PartitionReplicationTest, LastStableOffsetAndReadCommitted) {
  p_->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0);
  auto plain = batch(2);
  ASSERT_TRUE(p_->append(plain));             // 0..1
  auto t1 = txn_batch(7, 0, 3);
  ASSERT_TRUE(p_->append(t1));                // 2..4, producer 7 opens at 2
  p_->record_follower_fetch(2, 5, 0);         // HW 5
  EXPECT_EQ(p_->high_watermark(), 5);
  EXPECT_EQ(p_->last_stable_offset(), 2);
  std::vector<storage::aborted_txn> aborted;
  auto r = p_->read_committed(0, 1 << 20, true, aborted);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first_offset, 0);
  EXPECT_TRUE(aborted.empty());
  auto waiter = std::make_shared<purgatory_waiter>(io_.get_executor());
  p_->park_committed(waiter, 2);  // nothing stable at 2 yet: parked, not woken

  auto m = p_->append_marker(7, 0, {false, 3});  // abort at 5
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_EQ(m->offset, 5);
  EXPECT_EQ(p_->last_stable_offset(), 2) << "the marker is not replicated yet";
  p_->record_follower_fetch(2, 6, 0);
  EXPECT_EQ(p_->high_watermark(), 6);
  EXPECT_EQ(p_->last_stable_offset(), 6);
  r = p_->read_committed(2, 1 << 20, true, aborted);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first_offset, 2);
  ASSERT_EQ(aborted.size(), 1u);
  EXPECT_EQ(aborted[0].producer_id, 7);
  EXPECT_EQ(aborted[0].first_offset, 2);
  // A follower role refuses markers.
  p_->become_follower(2, 2);
  EXPECT_FALSE(p_->append_marker(7, 0, {true, 3}));
}

}  // namespace
}  // namespace sluice::broker

namespace sluice::broker {
namespace {

// A single node never goes through become_leader: its epoch 0 is known from the start and starts with the
// first append, so OffsetForLeaderEpoch answers as Kafka does ({0, 0} empty, {0, LEO} after appends; the
// differential tester's B3).
TEST_F(PartitionReplicationTest, SingleNodeEpochZeroEndsAtTheLogEnd) {
  auto e = p_->end_offset_for_epoch(0);
  EXPECT_EQ(e.epoch, 0);
  EXPECT_EQ(e.start_offset, 0);
  auto three = batch(3);
  ASSERT_TRUE(p_->append(three));
  e = p_->end_offset_for_epoch(0);
  EXPECT_EQ(e.epoch, 0);
  EXPECT_EQ(e.start_offset, 3);
  ASSERT_EQ(log_->leader_epochs().entries().size(), 1u);
  EXPECT_EQ(log_->leader_epochs().entries()[0].start_offset, 0) << "epoch 0 starts at the first append";
  EXPECT_EQ(p_->end_offset_for_epoch(4).epoch, -1) << "an epoch newer than any known";
}

}  // namespace
}  // namespace sluice::broker
