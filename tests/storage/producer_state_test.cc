// Idempotent producer state (KIP-98): duplicates, gaps, epochs, expiry, snapshots and recovery.
#include "storage/producer_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/log.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::temp_dir;

constexpr int64_t kPid = 1000;

class ProducerStateTest : public ::testing::Test {
 protected:
  std::filesystem::path dir() const { return tmp_.path() / "topic-0"; }

  std::unique_ptr<log> open_log(log_config cfg = {}) {
    auto l = log::open(dir(), cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }

  // One batch of `records` records of producer `pid`/`epoch` starting at sequence `seq`, timestamped now.
  std::vector<uint8_t> batch(int64_t pid, int16_t epoch, int32_t seq, int records = 1) {
    record_batch_builder b;
    b.set_producer(pid, epoch, seq);
    for (int i = 0; i < records; ++i) b.add("k", "value-" + std::to_string(seq + i), clock_.now_ms());
    return b.build();
  }

  sluice::result<append_result> append(log& l, std::vector<uint8_t> bytes) { return l.append(bytes, 0); }

  append_result append_ok(log& l, std::vector<uint8_t> bytes) {
    auto r = l.append(bytes, 0);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : append_result{};
  }

  std::vector<int64_t> snapshot_files() const {
    std::vector<int64_t> out;
    for (const auto& e : std::filesystem::directory_iterator(dir())) {
      const auto name = e.path().filename().string();
      if (name.ends_with(".snapshot")) out.push_back(std::stoll(name.substr(0, 20)));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // A crash: copies the partition directory of a log that is still open (no close, no final snapshot).
  std::filesystem::path crash_copy(const std::string& name) {
    auto to = tmp_.path() / name;
    std::filesystem::copy(dir(), to, std::filesystem::copy_options::recursive);
    return to;
  }

  temp_dir tmp_;
  manual_clock clock_;
};

TEST_F(ProducerStateTest, LastSequenceWrapsPastInt32Max) {
  EXPECT_EQ(batch_last_sequence(0, 4), 4);
  EXPECT_EQ(batch_last_sequence(INT32_MAX, 0), INT32_MAX);
  EXPECT_EQ(batch_last_sequence(INT32_MAX, 1), 0);
  EXPECT_EQ(batch_last_sequence(INT32_MAX - 1, 3), 1);
}

TEST_F(ProducerStateTest, DuplicateReturnsOriginalOffsetsAndIsNotWritten) {
  auto l = open_log();
  append_ok(*l, batch(7, 0, 0, 1));  // another producer first, so offsets differ from sequences
  auto first = append_ok(*l, batch(kPid, 0, 0, 3));
  auto second = append_ok(*l, batch(kPid, 0, 3, 2));
  EXPECT_EQ(first.base_offset, 1);
  EXPECT_EQ(second.base_offset, 4);
  const int64_t leo = l->log_end_offset();
  const int64_t size = l->size_bytes();

  auto retry = append_ok(*l, batch(kPid, 0, 0, 3));
  EXPECT_TRUE(retry.duplicate);
  EXPECT_EQ(retry.base_offset, 1);
  EXPECT_EQ(retry.last_offset, 3);
  auto retry2 = append_ok(*l, batch(kPid, 0, 3, 2));
  EXPECT_TRUE(retry2.duplicate);
  EXPECT_EQ(retry2.base_offset, 4);
  EXPECT_EQ(l->log_end_offset(), leo);
  EXPECT_EQ(l->size_bytes(), size);

  // The next batch still follows.
  auto next = append_ok(*l, batch(kPid, 0, 5, 1));
  EXPECT_FALSE(next.duplicate);
  EXPECT_EQ(next.base_offset, leo);
}

TEST_F(ProducerStateTest, OnlyTheLastFiveBatchesAreRemembered) {
  auto l = open_log();
  std::vector<append_result> r;
  for (int i = 0; i < 6; ++i) r.push_back(append_ok(*l, batch(kPid, 0, i * 2, 2)));
  ASSERT_EQ(l->producer_state().find(kPid)->batches.size(), producer_batch_window);
  // Batch 0 fell out of the window: its retry is out of order (Kafka answers the same).
  auto old = append(*l, batch(kPid, 0, 0, 2));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.err().code, errc::out_of_order_sequence);
  for (int i = 1; i < 6; ++i) {
    auto d = append_ok(*l, batch(kPid, 0, i * 2, 2));
    EXPECT_TRUE(d.duplicate);
    EXPECT_EQ(d.base_offset, r[static_cast<size_t>(i)].base_offset);
  }
  // A partial overlap with a cached batch is not a duplicate: out of order.
  auto partial = append(*l, batch(kPid, 0, 10, 1));
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.err().code, errc::out_of_order_sequence);
}

TEST_F(ProducerStateTest, GapIsRejectedAndNothingWritten) {
  auto l = open_log();
  append_ok(*l, batch(kPid, 0, 0, 2));
  const int64_t leo = l->log_end_offset();
  auto gap = append(*l, batch(kPid, 0, 5, 1));
  ASSERT_FALSE(gap.ok());
  EXPECT_EQ(gap.err().code, errc::out_of_order_sequence);
  EXPECT_EQ(l->log_end_offset(), leo);
  // Two batches in one append: the second has a gap, so neither is written.
  auto both = append(*l, testing::concat({batch(kPid, 0, 2, 1), batch(kPid, 0, 9, 1)}));
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(l->log_end_offset(), leo);
  EXPECT_EQ(l->producer_state().find(kPid)->last_seq(), 1);
  // In sequence across two batches of one append: fine.
  auto two = append_ok(*l, testing::concat({batch(kPid, 0, 2, 1), batch(kPid, 0, 3, 2)}));
  EXPECT_EQ(two.base_offset, leo);
  EXPECT_EQ(l->producer_state().find(kPid)->last_seq(), 4);
}

TEST_F(ProducerStateTest, EpochRules) {
  auto l = open_log();
  append_ok(*l, batch(kPid, 0, 0, 3));
  // A new epoch must start at 0.
  auto bad = append(*l, batch(kPid, 1, 3, 1));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().code, errc::out_of_order_sequence);
  append_ok(*l, batch(kPid, 1, 0, 1));
  EXPECT_EQ(l->producer_state().find(kPid)->producer_epoch, 1);
  EXPECT_EQ(l->producer_state().find(kPid)->batches.size(), 1u);  // the old epoch's batches are gone
  // An older epoch is fenced.
  auto fenced = append(*l, batch(kPid, 0, 3, 1));
  ASSERT_FALSE(fenced.ok());
  EXPECT_EQ(fenced.err().code, errc::invalid_producer_epoch);
  // The old epoch's batch is no duplicate any more, it is fenced too.
  auto old_retry = append(*l, batch(kPid, 0, 0, 3));
  ASSERT_FALSE(old_retry.ok());
  EXPECT_EQ(old_retry.err().code, errc::invalid_producer_epoch);
}

TEST_F(ProducerStateTest, UnknownProducerIsAcceptedAtAnySequence) {
  // KIP-360 (Kafka 2.5+): no UNKNOWN_PRODUCER_ID; a producer without state starts where it says.
  auto l = open_log();
  auto r = append_ok(*l, batch(kPid, 4, 57, 2));
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(l->producer_state().find(kPid)->last_seq(), 58);
  auto next = append(*l, batch(kPid, 4, 60, 1));
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.err().code, errc::out_of_order_sequence);
  append_ok(*l, batch(kPid, 4, 59, 1));
}

TEST_F(ProducerStateTest, IdleProducersExpire) {
  log_config cfg;
  cfg.producer_id_expiration_ms = 60'000;
  cfg.producer_id_expiration_check_interval_ms = 10'000;
  auto l = open_log(cfg);
  append_ok(*l, batch(kPid, 0, 0, 5));
  clock_.advance_ms(30'000);
  append_ok(*l, batch(2, 0, 0, 1));  // a check runs: kPid is 30 s idle, kept
  ASSERT_NE(l->producer_state().find(kPid), nullptr);
  clock_.advance_ms(31'000);
  append_ok(*l, batch(2, 0, 1, 1));  // kPid idle 61 s >= 60 s: expired; producer 2 is fresh
  EXPECT_EQ(l->producer_state().find(kPid), nullptr);
  EXPECT_NE(l->producer_state().find(2), nullptr);
  // Its state is gone: any sequence is accepted again (and a retry would no longer be deduplicated).
  append_ok(*l, batch(kPid, 0, 40, 1));
  // Expiry also applies to a loaded snapshot.
  l->close();
  clock_.advance_ms(120'000);
  auto reopened = open_log(cfg);
  EXPECT_TRUE(reopened->producer_state().producers().empty());
}

TEST_F(ProducerStateTest, CleanCloseWritesSnapshotAndReopenDeduplicates) {
  auto l = open_log();
  std::vector<append_result> r;
  for (int i = 0; i < 5; ++i) r.push_back(append_ok(*l, batch(kPid, 0, i, 1)));
  const int64_t leo = l->log_end_offset();
  const auto state = l->producer_state().producers();
  l->close();
  l.reset();
  EXPECT_EQ(snapshot_files(), std::vector<int64_t>{leo});
  auto l2 = open_log();
  EXPECT_EQ(l2->producer_state().producers(), state);
  // All 5 cached batches survive (our snapshot keeps the whole window, Kafka's only the last batch).
  for (int i = 0; i < 5; ++i) {
    auto d = append_ok(*l2, batch(kPid, 0, i, 1));
    EXPECT_TRUE(d.duplicate);
    EXPECT_EQ(d.base_offset, r[static_cast<size_t>(i)].base_offset);
  }
  EXPECT_EQ(l2->log_end_offset(), leo);
}

TEST_F(ProducerStateTest, RecoveryFromSnapshotPlusLogTailAfterCrash) {
  log_config cfg;
  cfg.segment_bytes = 600;  // a roll every few batches: snapshots at each roll
  cfg.index_interval_bytes = 100;
  auto l = open_log(cfg);
  std::map<int64_t, int32_t> seq;
  for (int i = 0; i < 40; ++i) {
    const int64_t pid = 1 + i % 3;
    append_ok(*l, batch(pid, 0, seq[pid], 2));
    seq[pid] += 2;
  }
  ASSERT_GT(l->segment_count(), 3u);
  ASSERT_FALSE(snapshot_files().empty());
  const auto state = l->producer_state().producers();
  const int64_t leo = l->log_end_offset();
  // The newest snapshot is older than the log end: the tail must be replayed from the log.
  ASSERT_LT(snapshot_files().back(), leo);

  const auto crashed = crash_copy("crashed-0");
  auto r = log::open(crashed, cfg, clock_);
  ASSERT_TRUE(r.ok()) << r.err().message;
  auto& l2 = *r.value();
  EXPECT_EQ(l2.log_end_offset(), leo);
  EXPECT_EQ(l2.producer_state().producers(), state);
  // A retry of the last batch of producer 1 written before the "crash" is deduplicated.
  auto retry = batch(1, 0, seq[1] - 2, 2);
  auto d = l2.append(retry, 0);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->duplicate);
  EXPECT_EQ(l2.log_end_offset(), leo);
}

TEST_F(ProducerStateTest, CorruptSnapshotIsIgnoredAndStateRebuiltFromLog) {
  auto l = open_log();
  for (int i = 0; i < 3; ++i) append_ok(*l, batch(kPid, 0, i, 1));
  const auto state = l->producer_state().producers();
  l->close();
  l.reset();
  auto files = snapshot_files();
  ASSERT_EQ(files.size(), 1u);
  const auto path = dir() / detail::segment_file_name(files[0], ".snapshot");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('\x7f');
  }
  auto l2 = open_log();
  EXPECT_EQ(l2->producer_state().producers(), state);  // rebuilt by scanning the whole log
  EXPECT_TRUE(append_ok(*l2, batch(kPid, 0, 2, 1)).duplicate);
}

TEST_F(ProducerStateTest, SnapshotOfATruncatedLog) {
  log_config cfg;
  cfg.segment_bytes = 500;
  cfg.index_interval_bytes = 100;
  auto l = open_log(cfg);
  std::vector<append_result> r;
  for (int i = 0; i < 20; ++i) r.push_back(append_ok(*l, batch(kPid, 0, i, 1)));
  auto snaps = snapshot_files();
  ASSERT_GE(snaps.size(), 2u);
  // Truncate below the newest snapshots: they must go, and the state must match the shorter log.
  const int64_t cut = snaps[snaps.size() / 2] - 1;
  ASSERT_TRUE(l->truncate_to(cut).ok());
  EXPECT_EQ(l->log_end_offset(), cut);
  for (int64_t s : snapshot_files()) EXPECT_LE(s, cut);
  const auto* e = l->producer_state().find(kPid);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->last_seq(), static_cast<int32_t>(cut - 1));  // one record per batch, offsets == sequences
  EXPECT_EQ(e->batches.back().last_offset, cut - 1);
  // The truncated batch is new again: written, not reported as a duplicate.
  auto again = append_ok(*l, batch(kPid, 0, static_cast<int32_t>(cut), 1));
  EXPECT_FALSE(again.duplicate);
  EXPECT_EQ(again.base_offset, cut);
  // And the state after reopening matches.
  const auto state = l->producer_state().producers();
  l->close();
  l.reset();
  auto l2 = open_log(cfg);
  EXPECT_EQ(l2->producer_state().producers(), state);
}

TEST_F(ProducerStateTest, SnapshotAboveTheLogEndIsDeletedAtOpen) {
  auto l = open_log();
  for (int i = 0; i < 4; ++i) append_ok(*l, batch(kPid, 0, i, 1));
  l->close();
  l.reset();
  // A snapshot from "the future" (the log tail was lost): must not be trusted.
  producer_state_manager fake(dir(), 86400000);
  fake.set_map_end_offset(100);
  ASSERT_TRUE(fake.take_snapshot().ok());
  auto l2 = open_log();
  EXPECT_EQ(l2->log_end_offset(), 4);
  for (int64_t s : snapshot_files()) EXPECT_LE(s, 4);
  EXPECT_EQ(l2->producer_state().find(kPid)->last_seq(), 3);
}

TEST_F(ProducerStateTest, RetentionAndDeleteRecordsRemoveOlderSnapshotsButKeepTheNewest) {
  log_config cfg;
  cfg.segment_bytes = 500;
  cfg.index_interval_bytes = 100;
  auto l = open_log(cfg);
  for (int i = 0; i < 30; ++i) append_ok(*l, batch(kPid, 0, i, 1));
  const auto before = snapshot_files();
  ASSERT_GE(before.size(), 3u);
  auto start = l->delete_records_before(l->log_end_offset());
  ASSERT_TRUE(start.ok());
  const auto after = snapshot_files();
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back(), before.back());
  for (int64_t s : after) EXPECT_TRUE(s >= l->segment_base_offsets().front() || s == after.back());
  EXPECT_LT(after.size(), before.size());
  // KIP-360: the producer's state outlives its deleted data; it continues its sequence.
  append_ok(*l, batch(kPid, 0, 30, 1));
}

TEST_F(ProducerStateTest, SnapshotFormatRoundTripAndCrc) {
  producer_state_manager m(dir(), 1000);
  producer_state_manager::pending_append p;
  record_batch_header h;
  h.producer_id = 5;
  h.producer_epoch = 2;
  h.base_sequence = 10;
  h.last_offset_delta = 3;
  h.base_offset = 100;
  h.max_timestamp = 1234;
  ASSERT_TRUE(m.check_and_stage(p, h).ok());
  m.commit(std::move(p));
  auto bytes = m.encode_snapshot();
  auto decoded = producer_state_manager::decode_snapshot(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, m.producers());
  bytes[bytes.size() - 1] ^= 1;
  EXPECT_FALSE(producer_state_manager::decode_snapshot(bytes).ok());
}

TEST_F(ProducerStateTest, NonIdempotentBatchesAreNotTracked) {
  auto l = open_log();
  append_ok(*l, testing::make_batch(3));
  append_ok(*l, testing::make_batch(3));  // same bytes again: no producer id, written twice
  EXPECT_EQ(l->log_end_offset(), 6);
  EXPECT_TRUE(l->producer_state().producers().empty());
}

}  // namespace
}  // namespace sluice::storage
