// Part B of the storage engine: time index, roll by age, checkpoints, retention, DeleteRecords, flush policy.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/log.h"
#include "storage/log_manager.h"
#include "storage/offset_checkpoint.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::batches_in;
using testing::make_batch;
using testing::read_region;
using testing::temp_dir;

class StorageEngineTest : public ::testing::Test {
 protected:
  std::unique_ptr<log> open_log(log_config cfg, log_recovery_state state = {}) {
    auto l = log::open(tmp_.path() / "t-0", cfg, clock_, state);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  append_result append(log& l, std::vector<uint8_t> bytes) {
    auto r = l.append(bytes, 0);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : append_result{};
  }
  temp_dir tmp_;
  manual_clock clock_;
};

log_config small(int64_t segment_bytes = 600) {
  log_config c;
  c.segment_bytes = segment_bytes;
  c.index_interval_bytes = 64;
  return c;
}

TEST_F(StorageEngineTest, OffsetForTimestamp) {
  auto l = open_log(small());
  // 40 batches of 3 records; batch i has timestamps 10000 + 10*i + {0,1,2}.
  for (int i = 0; i < 40; ++i) append(*l, make_batch(3, 10000 + 10 * i));
  ASSERT_GT(l->segment_count(), 3u);
  auto at = [&](int64_t ts) { return l->offset_for_timestamp(ts).value(); };
  EXPECT_EQ(at(0), 0);
  EXPECT_EQ(at(10000), 0);
  EXPECT_EQ(at(10001), 1);
  EXPECT_EQ(at(10003), 3);   // between batches: the next batch's first record
  EXPECT_EQ(at(10052), 17);  // batch 5, third record
  EXPECT_EQ(at(10392), 119);
  EXPECT_EQ(at(10393), -1);  // past the end
  // Same answers after a reopen (time indexes read back from .timeindex files).
  l.reset();
  l = open_log(small());
  EXPECT_EQ(at(10052), 17);
  EXPECT_EQ(at(10250), 75);
  EXPECT_EQ(at(99999), -1);
}

TEST_F(StorageEngineTest, MaxTimestampKip734) {
  auto l = open_log(small());
  EXPECT_EQ(l->max_timestamp_and_offset()->offset, -1);
  append(*l, make_batch(2, 500));
  record_batch_builder b;
  b.add(std::nullopt, std::string_view("a"), 700).add(std::nullopt, std::string_view("b"), 900).add(
      std::nullopt, std::string_view("c"), 800);
  append(*l, b.build());  // offsets 2..4, max 900 at offset 3
  append(*l, make_batch(2, 600));
  auto m = l->max_timestamp_and_offset();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->timestamp, 900);
  EXPECT_EQ(m->offset, 3);
}

TEST_F(StorageEngineTest, RollBySegmentMs) {
  log_config c;
  c.segment_ms = 1000;
  auto l = open_log(c);
  const int64_t t = clock_.now_ms();
  append(*l, make_batch(1, t));
  append(*l, make_batch(1, t + 900));
  EXPECT_EQ(l->segment_count(), 1u);
  append(*l, make_batch(1, t + 1001));  // record time has moved past segment.ms since the first batch
  EXPECT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
  // An empty active segment never rolls; once it has data, its age counts from the first batch.
  clock_.advance_ms(5000);
  append(*l, make_batch(1, t + 1002));
  EXPECT_EQ(l->segment_count(), 2u);
}

TEST_F(StorageEngineTest, CleanShutdownSkipsRescanButCrashRecovers) {
  const std::filesystem::path dir = tmp_.path() / "logs";
  log_config c;
  c.index_interval_bytes = 100;
  int64_t leo = 0;
  {
    log_manager m({dir}, c, clock_);
    ASSERT_TRUE(m.load().ok());
    log* l = *m.create("t", 0, c);
    for (int i = 0; i < 30; ++i) append(*l, make_batch(2, 1000 + i));
    leo = l->log_end_offset();
  }  // close_all: flush + checkpoints
  std::ifstream in(dir / recovery_point_checkpoint_file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "0\n1\nt 0 " + std::to_string(leo) + "\n");

  // Damage a record early in the (only, active) segment: below the recovery point, so not rescanned.
  const auto seg = dir / "t-0" / detail::segment_file_name(0, ".log");
  {
    FILE* f = std::fopen(seg.c_str(), "r+b");
    std::fseek(f, 70, SEEK_SET);
    std::fputc(0x5a, f);
    std::fclose(f);
  }
  {
    log_manager m({dir}, c, clock_);
    ASSERT_TRUE(m.load().ok());
    EXPECT_EQ(m.get("t", 0)->log_end_offset(), leo);  // trusted: no full scan after a clean shutdown
  }
  // Without the checkpoint (a crash before any was written) the active segment is scanned in full.
  std::filesystem::remove(dir / recovery_point_checkpoint_file);
  log_manager m({dir}, c, clock_);
  ASSERT_TRUE(m.load().ok());
  EXPECT_EQ(m.get("t", 0)->log_end_offset(), 0);
}

TEST_F(StorageEngineTest, RecoveryPointScansOnlyTheTail) {
  log_config c;
  c.index_interval_bytes = 100;
  int64_t flushed = 0;
  int64_t flushed_size = 0;
  {
    auto l = open_log(c);
    for (int i = 0; i < 20; ++i) append(*l, make_batch(2));
    ASSERT_TRUE(l->flush().ok());
    flushed = l->recovery_point();
    flushed_size = l->size_bytes();
    EXPECT_EQ(flushed, 40);
    for (int i = 0; i < 5; ++i) append(*l, make_batch(2));
  }
  // Tear the unflushed tail.
  std::filesystem::resize_file(tmp_.path() / "t-0" / detail::segment_file_name(0, ".log"),
                               static_cast<uintmax_t>(flushed_size + 150));
  auto l = open_log(c, log_recovery_state{flushed, -1});
  EXPECT_EQ(l->log_end_offset(), 40 + 2 * (150 / static_cast<int64_t>(make_batch(2).size())));
  const int64_t leo = l->log_end_offset();
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, leo);
}

TEST_F(StorageEngineTest, RetentionByTimeAndBytes) {
  auto l = open_log(small());
  const int64_t now = clock_.now_ms();
  for (int i = 0; i < 30; ++i) append(*l, make_batch(2, now - 100000 + i * 1000));  // ages 100 s .. 71 s
  const auto bases = l->segment_base_offsets();
  ASSERT_GT(bases.size(), 4u);
  EXPECT_EQ(*l->delete_old_segments(-1, -1), 0);
  EXPECT_EQ(*l->delete_old_segments(90000, -1, bases[1]), 1);  // the HW keeps the rest
  EXPECT_EQ(l->log_start_offset(), bases[1]);
  // Time: segments whose newest record is older than 80 s go; the active segment stays.
  auto n = l->delete_old_segments(80000, -1);
  ASSERT_TRUE(n.ok());
  EXPECT_GT(*n, 0);
  EXPECT_EQ(l->log_start_offset(), l->segment_base_offsets().front());
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "t-0" / detail::segment_file_name(0, ".log")));
  EXPECT_EQ(l->read(0, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
  auto r = l->read(l->log_start_offset(), 1000, INT64_MAX, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_offset, l->log_start_offset());
  // Bytes: keep at most 700 bytes (whole segments only).
  ASSERT_TRUE(l->delete_old_segments(-1, 700).ok());
  EXPECT_LE(l->size_bytes(), 700 + 600);
  EXPECT_EQ(l->log_start_offset(), l->segment_base_offsets().front());
  // retention.bytes never deletes the active segment.
  ASSERT_TRUE(l->delete_old_segments(-1, 0).ok());
  EXPECT_EQ(l->segment_count(), 1u);
  EXPECT_GT(l->size_bytes(), 0);
  EXPECT_LT(l->log_start_offset(), 60);
  // Everything is old now: the breached active segment goes too (idle partition), after a roll to an
  // empty segment at the LEO (Kafka's deleteSegments), unless it is not wholly below the high watermark.
  clock_.advance_ms(10'000'000);
  EXPECT_EQ(*l->delete_old_segments(1, -1, 59), 0);
  EXPECT_EQ(l->segment_count(), 1u);
  EXPECT_EQ(*l->delete_old_segments(1, -1, 60), 1);
  EXPECT_EQ(l->segment_count(), 1u);
  EXPECT_EQ(l->segment_base_offsets().front(), 60);
  EXPECT_EQ(l->log_end_offset(), 60);
  EXPECT_EQ(l->log_start_offset(), 60);
  EXPECT_EQ(l->size_bytes(), 0);
  EXPECT_TRUE(l->read(60, 1000, INT64_MAX, true)->region.size == 0);
  EXPECT_EQ(l->read(59, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
  // An empty active segment is never deleted or rolled again.
  EXPECT_EQ(*l->delete_old_segments(1, -1), 0);
  EXPECT_EQ(l->segment_count(), 1u);
  // Appends continue at the LEO, and the state survives a reopen with the checkpointed log start offset.
  EXPECT_EQ(append(*l, make_batch(2, clock_.now_ms())).base_offset, 60);
  l.reset();
  l = open_log(small(), log_recovery_state{-1, 60});
  EXPECT_EQ(l->log_start_offset(), 60);
  EXPECT_EQ(l->log_end_offset(), 62);
}

TEST_F(StorageEngineTest, DeleteRecordsBefore) {
  auto l = open_log(small());
  for (int i = 0; i < 30; ++i) append(*l, make_batch(2, 1000 + i));
  const auto bases = l->segment_base_offsets();
  ASSERT_GT(bases.size(), 3u);
  const int64_t target = bases[2] + 1;  // inside the third segment
  auto r = l->delete_records_before(target);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, target);
  EXPECT_EQ(l->log_start_offset(), target);
  EXPECT_EQ(l->segment_base_offsets().front(), bases[2]);
  EXPECT_EQ(l->read(target - 1, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
  auto rd = l->read(target, 1000, INT64_MAX, true);
  ASSERT_TRUE(rd.ok());
  EXPECT_EQ(rd->first_offset, target - 1);  // the batch containing the log start offset, whole
  EXPECT_EQ(*l->offset_for_timestamp(0), target);
  EXPECT_EQ(*l->delete_records_before(3), target);  // never moves back
  EXPECT_EQ(l->delete_records_before(61).err().code, errc::offset_out_of_range);
  // The new log start offset survives a restart through the checkpoint.
  l.reset();
  l = open_log(small(), log_recovery_state{-1, target});
  EXPECT_EQ(l->log_start_offset(), target);
}

TEST_F(StorageEngineTest, FlushPolicy) {
  log_config c;
  c.flush_messages = 5;
  c.flush_ms = 1000;
  auto l = open_log(c);
  EXPECT_FALSE(*l->flush_if_needed());
  append(*l, make_batch(3));
  EXPECT_FALSE(*l->flush_if_needed());
  EXPECT_EQ(l->recovery_point(), 0);
  append(*l, make_batch(2));
  EXPECT_TRUE(*l->flush_if_needed());  // 5 records since the last flush: one fsync for both appends
  EXPECT_EQ(l->recovery_point(), 5);
  append(*l, make_batch(1));
  EXPECT_FALSE(*l->flush_if_needed());
  clock_.advance_ms(1000);
  EXPECT_TRUE(*l->flush_if_needed());
  EXPECT_EQ(l->recovery_point(), 6);
  EXPECT_FALSE(*l->flush_if_needed());
}

TEST_F(StorageEngineTest, TruncateTo) {
  auto l = open_log(small());
  for (int i = 0; i < 30; ++i) append(*l, make_batch(2, 1000 + i));
  const auto bases = l->segment_base_offsets();
  const int64_t target = bases[1] + 4;  // a batch boundary inside the second segment
  ASSERT_TRUE(l->truncate_to(target).ok());
  EXPECT_EQ(l->log_end_offset(), target);
  EXPECT_EQ(l->segment_count(), 2u);
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, target);
  l.reset();
  l = open_log(small());
  EXPECT_EQ(l->log_end_offset(), target + 1);
  auto r = l->read(target, 1000, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(batches_in(read_region(r->region)).size(), 1u);
}

TEST(OffsetCheckpoint, RoundTripAndErrors) {
  temp_dir tmp;
  const auto f = tmp.path() / "cp";
  EXPECT_TRUE(read_offset_checkpoint(f)->empty());  // missing file
  offset_checkpoint in{{{"a-b", 0}, 5}, {{"a-b", 1}, 0}, {{"__consumer_offsets", 49}, 123456789012}};
  ASSERT_TRUE(write_offset_checkpoint(f, in).ok());
  auto out = read_offset_checkpoint(f);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, in);
  std::ofstream(f) << "1\n0\n";
  EXPECT_EQ(read_offset_checkpoint(f).err().code, errc::corrupt_message);
  std::ofstream(f) << "0\n2\nt 0 5\n";
  EXPECT_EQ(read_offset_checkpoint(f).err().code, errc::corrupt_message);
}

}  // namespace
}  // namespace sluice::storage
