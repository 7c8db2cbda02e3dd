#include "storage/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "storage/byte_order.h"
#include "storage/compression.h"
#include "storage/errc.h"
#include "storage/index_file.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::batches_in;
using testing::concat;
using testing::make_batch;
using testing::read_region;
using testing::temp_dir;

class LogTest : public ::testing::Test {
 protected:
  std::unique_ptr<log> open_log(log_config cfg) {
    auto l = log::open(tmp_.path() / "topic-0", cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  append_result append(log& l, std::vector<uint8_t> bytes, int32_t epoch = 3) {
    auto r = l.append(bytes, epoch);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? *r : append_result{};
  }
  /// A log whose segments hold `batches` one-record batches of make_batch(1), rolls handing their fsyncs to
  /// `flusher`.
  std::unique_ptr<log> open_log_rolling_every(int batches, background_flusher& flusher) {
    log_config c;
    c.segment_bytes = static_cast<int64_t>(make_batch(1).size()) * batches;
    auto l = open_log(c);
    if (l) l->set_background_flusher(&flusher);
    return l;
  }
  std::filesystem::path seg_file(int64_t base, const char* suffix) {
    return tmp_.path() / "topic-0" / detail::segment_file_name(base, suffix);
  }

  temp_dir tmp_;
  manual_clock clock_;
};

// The batch `plain` with its records gzip-compressed (header kept, codec bits set, CRC recomputed).
std::vector<uint8_t> gzipped(const std::vector<uint8_t>& plain) {
  auto payload = compress(compression_codec::gzip, std::span<const uint8_t>(plain).subspan(record_batch_header_size), {});
  EXPECT_TRUE(payload.ok());
  std::vector<uint8_t> out(plain.begin(), plain.begin() + record_batch_header_size);
  out.insert(out.end(), payload->begin(), payload->end());
  detail::store_be<int32_t>(out.data() + batch_field::batch_length, static_cast<int32_t>(out.size() - log_overhead));
  const int16_t attrs = detail::load_be<int16_t>(out.data() + batch_field::attributes);
  detail::store_be<int16_t>(out.data() + batch_field::attributes,
                            static_cast<int16_t>((attrs & ~batch_attribute::compression_mask) |
                                                 static_cast<int16_t>(compression_codec::gzip)));
  recompute_crc(out);
  return out;
}

log_config small_segments() {
  log_config c;
  c.segment_bytes = 1024;
  c.index_interval_bytes = 100;
  return c;
}

TEST_F(LogTest, EmptyLog) {
  auto l = open_log({});
  EXPECT_EQ(l->log_start_offset(), 0);
  EXPECT_EQ(l->log_end_offset(), 0);
  EXPECT_EQ(l->size_bytes(), 0);
  EXPECT_TRUE(std::filesystem::exists(seg_file(0, ".log")));
  auto r = l->read(0, 1000, INT64_MAX, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->region.size, 0);
  EXPECT_EQ(r->first_offset, -1);
  EXPECT_EQ(l->read(1, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
}

TEST_F(LogTest, AppendAssignsOffsetsAndEpochInPlace) {
  auto l = open_log({});
  auto bytes = concat({make_batch(3), make_batch(2)});
  auto r = l->append(bytes, 9);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base_offset, 0);
  EXPECT_EQ(r->last_offset, 4);
  EXPECT_EQ(r->record_count, 5);
  EXPECT_EQ(r->max_timestamp, 1002);
  EXPECT_EQ(r->log_append_time, -1);
  auto hs = batches_in(bytes);  // rewritten in the caller's buffer, CRC still valid
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_EQ(hs[1].base_offset, 3);
  EXPECT_EQ(hs[1].partition_leader_epoch, 9);
  auto r2 = append(*l, make_batch(1));
  EXPECT_EQ(r2.base_offset, 5);
  EXPECT_EQ(l->log_end_offset(), 6);
}

TEST_F(LogTest, AppendAndReadAcrossManySegments) {
  auto l = open_log(small_segments());
  std::vector<std::pair<int64_t, int64_t>> ranges;  // base, last of each batch
  for (int i = 0; i < 200; ++i) {
    auto r = append(*l, make_batch(1 + i % 4, 1000 + i, 20, "b" + std::to_string(i)));
    ranges.emplace_back(r.base_offset, r.last_offset);
  }
  EXPECT_GT(l->segment_count(), 10u);
  const int64_t leo = l->log_end_offset();
  EXPECT_EQ(leo, ranges.back().second + 1);
  // Every offset returns the batch containing it, first in the region.
  for (const auto& [base, last] : ranges) {
    for (int64_t o = base; o <= last; ++o) {
      auto r = l->read(o, 1 << 20, INT64_MAX, false);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->first_offset, base);
      auto hs = batches_in(read_region(r->region));
      ASSERT_FALSE(hs.empty());
      EXPECT_EQ(hs.front().base_offset, base);
      EXPECT_EQ(hs.front().last_offset(), last);
    }
  }
  // Reading forward returns every batch exactly once, in order, never crossing a segment.
  int64_t next = 0;
  size_t seen = 0;
  while (next < leo) {
    auto r = l->read(next, 300, INT64_MAX, true);
    ASSERT_TRUE(r.ok());
    auto hs = batches_in(read_region(r->region));
    ASSERT_FALSE(hs.empty());
    for (const auto& h : hs) {
      ASSERT_EQ(h.base_offset, ranges[seen].first);
      ++seen;
    }
    next = hs.back().last_offset() + 1;
  }
  EXPECT_EQ(seen, ranges.size());
}

TEST_F(LogTest, ReadMidBatchReturnsContainingBatch) {
  auto l = open_log({});
  append(*l, make_batch(5));
  append(*l, make_batch(5));
  auto r = l->read(7, 1 << 20, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_offset, 5);
  auto hs = batches_in(read_region(r->region));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].base_offset, 5);
}

TEST_F(LogTest, MaxBytesMaxOffsetAndMinOneBatch) {
  auto l = open_log({});
  const auto one = make_batch(2);
  const int32_t size = static_cast<int32_t>(one.size());
  for (int i = 0; i < 10; ++i) append(*l, make_batch(2));  // offsets 0..19, batches at 0,2,4,...
  // max_bytes: 2.5 batches -> 2 whole batches.
  auto r = l->read(0, size * 2 + size / 2, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->region.size, 2 * size);
  // Exactly fitting.
  r = l->read(4, size * 3, INT64_MAX, false);
  EXPECT_EQ(r->region.size, 3 * size);
  EXPECT_EQ(r->first_offset, 4);
  // Too small: empty without min_one_batch, one whole batch with it (KIP-74).
  r = l->read(4, size - 1, INT64_MAX, false);
  EXPECT_EQ(r->region.size, 0);
  EXPECT_EQ(r->first_offset, -1);
  r = l->read(4, 1, INT64_MAX, true);
  EXPECT_EQ(r->region.size, size);
  EXPECT_EQ(r->first_offset, 4);
  // max_offset (high watermark): batches with base offset >= 9 excluded; the batch 8..9 is included.
  r = l->read(0, 1 << 20, 9, false);
  auto hs = batches_in(read_region(r->region));
  ASSERT_EQ(hs.size(), 5u);
  EXPECT_EQ(hs.back().base_offset, 8);
  r = l->read(0, 1 << 20, 10, false);
  EXPECT_EQ(batches_in(read_region(r->region)).size(), 5u);
  // min_one_batch never passes the high watermark.
  r = l->read(10, 1, 10, true);
  EXPECT_EQ(r->region.size, 0);
  // Reading at the LEO is empty, beyond it out of range.
  r = l->read(20, 1000, INT64_MAX, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->region.size, 0);
  EXPECT_EQ(l->read(21, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
  EXPECT_EQ(l->read(-1, 1000, INT64_MAX, true).err().code, errc::offset_out_of_range);
}

TEST_F(LogTest, SparseIndexIsUsedAndReadsStayWhole) {
  log_config c;
  c.index_interval_bytes = 256;
  auto l = open_log(c);
  for (int i = 0; i < 500; ++i) append(*l, make_batch(1 + i % 3, 1000 + i, 30));
  // Many entries, one per ~256 bytes.
  // Read with assorted limits: always whole batches, within limits.
  for (int64_t o = 0; o < l->log_end_offset(); o += 37) {
    for (int32_t max_bytes : {1, 100, 257, 1000, 5000}) {
      auto r = l->read(o, max_bytes, o + 200, false);
      ASSERT_TRUE(r.ok());
      EXPECT_LE(r->region.size, max_bytes);
      auto hs = batches_in(read_region(r->region));
      for (const auto& h : hs) EXPECT_LT(h.base_offset, o + 200);
      if (!hs.empty()) {
        EXPECT_LE(hs.front().base_offset, o);
        EXPECT_GE(hs.front().last_offset(), o);
      }
    }
  }
}

TEST_F(LogTest, InvalidBatchesRejectedAndNothingWritten) {
  log_config c;
  c.max_message_bytes = 500;
  auto l = open_log(c);
  append(*l, make_batch(1));
  const int64_t size_before = l->size_bytes();

  auto corrupt = make_batch(2);
  corrupt[corrupt.size() - 3] ^= 0x40;
  auto buf = concat({make_batch(1), corrupt});
  EXPECT_EQ(l->append(buf, 0).err().code, errc::corrupt_message);

  auto bad_magic = make_batch(1);
  bad_magic[batch_field::magic] = 1;
  buf = concat({make_batch(1), bad_magic});
  EXPECT_EQ(l->append(buf, 0).err().code, errc::unsupported_magic);

  buf = concat({make_batch(1), make_batch(2)});
  buf.resize(buf.size() - 5);  // truncated second batch
  EXPECT_EQ(l->append(buf, 0).err().code, errc::corrupt_message);
  std::vector<uint8_t> tiny(7, 0);
  EXPECT_EQ(l->append(tiny, 0).err().code, errc::corrupt_message);

  buf = concat({make_batch(1), make_batch(1, 1000, 600)});
  EXPECT_EQ(l->append(buf, 0).err().code, errc::record_too_large);

  record_batch_builder empty;
  buf = concat({make_batch(1), empty.build()});
  EXPECT_EQ(l->append(buf, 0).err().code, errc::invalid_record);
  std::vector<uint8_t> none;
  EXPECT_EQ(l->append(none, 0).err().code, errc::invalid_record);

  EXPECT_EQ(l->log_end_offset(), 1);
  EXPECT_EQ(l->size_bytes(), size_before);
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(seg_file(0, ".log"))), size_before);
}

TEST_F(LogTest, ReopenKeepsOffsets) {
  {
    auto l = open_log(small_segments());
    for (int i = 0; i < 50; ++i) append(*l, make_batch(3));
    EXPECT_EQ(l->log_end_offset(), 150);
  }
  auto l = open_log(small_segments());
  EXPECT_EQ(l->log_end_offset(), 150);
  EXPECT_EQ(l->log_start_offset(), 0);
  EXPECT_GT(l->segment_count(), 1u);
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, 150);
  auto r = l->read(77, 1 << 20, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_offset, 75);
}

TEST_F(LogTest, RecoveryTruncatesTornTail) {
  int64_t good_size = 0;
  {
    auto l = open_log({});
    for (int i = 0; i < 10; ++i) append(*l, make_batch(2));
    good_size = l->size_bytes();
    append(*l, make_batch(4, 1000, 50));
  }
  // A kill -9 in the middle of write(2): the last batch is cut short.
  std::filesystem::resize_file(seg_file(0, ".log"), static_cast<uintmax_t>(good_size + 30));
  auto l = open_log({});
  EXPECT_EQ(l->log_end_offset(), 20);
  EXPECT_EQ(l->size_bytes(), good_size);
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(seg_file(0, ".log"))), good_size);
  auto r = l->read(19, 1 << 20, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_offset, 18);
  EXPECT_EQ(batches_in(read_region(r->region)).size(), 1u);
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, 20);
  auto all = l->read(0, 1 << 20, INT64_MAX, false);
  EXPECT_EQ(batches_in(read_region(all->region)).size(), 11u);
}

TEST_F(LogTest, RecoveryTruncatesCorruptTail) {
  int64_t good_size = 0;
  {
    auto l = open_log({});
    for (int i = 0; i < 5; ++i) append(*l, make_batch(2));
    good_size = l->size_bytes();
    for (int i = 0; i < 3; ++i) append(*l, make_batch(2));
  }
  // Flip a byte inside the 6th batch's records: CRC mismatch, cut there (later whole batches go too).
  {
    FILE* f = std::fopen(seg_file(0, ".log").c_str(), "r+b");
    std::fseek(f, good_size + 70, SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, good_size + 70, SEEK_SET);
    std::fputc(c ^ 0xff, f);
    std::fclose(f);
  }
  auto l = open_log({});
  EXPECT_EQ(l->log_end_offset(), 10);
  EXPECT_EQ(l->size_bytes(), good_size);
}

TEST_F(LogTest, RecoveryOfGarbageAfterEnd) {
  {
    auto l = open_log({});
    append(*l, make_batch(2));
  }
  {
    FILE* f = std::fopen(seg_file(0, ".log").c_str(), "ab");
    for (int i = 0; i < 100; ++i) std::fputc(0, f);  // preallocated zeros after a crash
    std::fclose(f);
  }
  auto l = open_log({});
  EXPECT_EQ(l->log_end_offset(), 2);
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, 2);
}

TEST_F(LogTest, IndexRebuiltAfterDeletion) {
  std::vector<int64_t> bases;
  uintmax_t index_size = 0;
  {
    auto l = open_log(small_segments());
    for (int i = 0; i < 60; ++i) append(*l, make_batch(2));
    bases = l->segment_base_offsets();
    index_size = std::filesystem::file_size(seg_file(bases[0], ".index"));
  }
  ASSERT_GT(bases.size(), 2u);
  ASSERT_GT(index_size, 0u);
  std::filesystem::remove(seg_file(bases[0], ".index"));           // an older segment
  std::filesystem::remove(seg_file(bases[1], ".timeindex"));
  std::filesystem::remove(seg_file(bases.back(), ".index"));       // the active one
  std::filesystem::resize_file(seg_file(bases[2], ".index"), 5);  // a short (partial entry) index
  auto l = open_log(small_segments());
  EXPECT_EQ(std::filesystem::file_size(seg_file(bases[0], ".index")), index_size);
  EXPECT_TRUE(std::filesystem::exists(seg_file(bases[1], ".timeindex")));
  EXPECT_EQ(std::filesystem::file_size(seg_file(bases[2], ".index")) % 8, 0u);
  EXPECT_EQ(l->log_end_offset(), 120);
  for (int64_t o = 0; o < 120; o += 7) {
    auto r = l->read(o, 1 << 20, INT64_MAX, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->first_offset, o - o % 2);
  }
}

// Issue #23 (10,000 partitions): a segment holds one descriptor, its .log; the index files are written at flush
// time, and a crash before a flush loses nothing but index entries that the next open rebuilds from the log.
TEST_F(LogTest, IndexFilesAreWrittenAtFlushAndHoldNoDescriptor) {
  auto open_fds = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  log_config c;
  c.index_interval_bytes = 100;
  const size_t fds_before = open_fds();
  auto l = open_log(c);
  for (int i = 0; i < 30; ++i) append(*l, make_batch(2));
  EXPECT_EQ(open_fds(), fds_before + 1);  // the .log only
  EXPECT_EQ(std::filesystem::file_size(seg_file(0, ".index")), 0u);
  EXPECT_EQ(std::filesystem::file_size(seg_file(0, ".timeindex")), 0u);
  ASSERT_TRUE(l->flush().ok());
  const auto index_size = std::filesystem::file_size(seg_file(0, ".index"));
  EXPECT_GE(index_size, 8u * 10);  // an entry every ~100 bytes of batches
  EXPECT_EQ(index_size % 8, 0u);
  EXPECT_GT(std::filesystem::file_size(seg_file(0, ".timeindex")), 0u);

  // More appends, then the files as a kill -9 would leave them (copied while the log is open): the .log has 60
  // batches, the index files only what the flush wrote.
  for (int i = 0; i < 30; ++i) append(*l, make_batch(2));
  EXPECT_EQ(std::filesystem::file_size(seg_file(0, ".index")), index_size);
  const auto crashed = tmp_.path() / "crashed-0";
  std::filesystem::copy(tmp_.path() / "topic-0", crashed);
  auto r = log::open(crashed, c, clock_);
  ASSERT_TRUE(r.ok()) << r.err().message;
  auto& copy = *r.value();
  EXPECT_EQ(copy.log_end_offset(), 120);
  for (int64_t o = 0; o < 120; o += 5) {
    auto got = copy.read(o, 1 << 20, INT64_MAX, false);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->first_offset, o - o % 2) << "offset " << o;
  }
  // The recovery rebuilt the entries past the flushed ones and wrote them.
  EXPECT_GT(std::filesystem::file_size(crashed / detail::segment_file_name(0, ".index")), index_size);
}

TEST_F(LogTest, RollsWhenSegmentWouldOverflow) {
  log_config c;
  const auto b = make_batch(1);
  c.segment_bytes = static_cast<int64_t>(b.size()) * 3;
  auto l = open_log(c);
  for (int i = 0; i < 7; ++i) append(*l, make_batch(1));
  EXPECT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 3, 6}));
  // A single append larger than segment.bytes goes into an empty segment whole.
  auto big = concat({make_batch(1), make_batch(1), make_batch(1), make_batch(1)});
  auto r = l->append(big, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base_offset, 7);
  EXPECT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 3, 6, 7}));
  EXPECT_EQ(l->size_bytes(), static_cast<int64_t>(b.size()) * 11);
}

// A roll hands the fsync of the segment it ends to the background flusher: the recovery point (what a restart
// trusts) stays put until that job has run, then moves to the new segment's base at the next call on the strand.
TEST_F(LogTest, RollLeavesTheSegmentFsyncToTheBackgroundFlusher) {
  background_flusher flusher(/*threaded=*/false);
  auto l = open_log_rolling_every(3, flusher);
  for (int i = 0; i < 4; ++i) append(*l, make_batch(1));
  ASSERT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(flusher.pending(), 1u);
  EXPECT_EQ(l->recovery_point(), 0);
  EXPECT_EQ(l->checkpoint_state().recovery_point, 0);
  EXPECT_EQ(flusher.run_pending(), 1u);
  EXPECT_EQ(l->recovery_point(), 0);  // taken on the strand, not by the job
  ASSERT_TRUE(l->flush_if_needed().ok());
  EXPECT_EQ(l->recovery_point(), 3);
  EXPECT_EQ(l->checkpoint_state().recovery_point, 3);
  // The job wrote nothing itself: the rolled segment's index files were written on the strand before it ran.
  EXPECT_GT(std::filesystem::file_size(seg_file(0, ".timeindex")), 0u);
}

// A truncation below a rolled segment whose flush is still queued: when the job finishes later it synced bytes that
// are gone, so it must not move the recovery point over the bytes appended since at the same offsets.
TEST_F(LogTest, TruncationMakesQueuedRollFlushesStale) {
  background_flusher flusher(/*threaded=*/false);
  auto l = open_log_rolling_every(3, flusher);
  for (int i = 0; i < 4; ++i) append(*l, make_batch(1));
  ASSERT_EQ(flusher.pending(), 1u);  // the flush of [0, 3)
  ASSERT_TRUE(l->truncate_to(1).ok());
  for (int i = 0; i < 4; ++i) append(*l, make_batch(1));  // offsets 1..4 again: [0, 3) rolls, a new job for [0, 3)
  ASSERT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 3}));
  ASSERT_EQ(flusher.pending(), 2u);
  EXPECT_EQ(flusher.run_pending(), 2u);  // in order: the stale job is ignored, the new one counts
  ASSERT_TRUE(l->flush_if_needed().ok());
  EXPECT_EQ(l->recovery_point(), 3);

  // Now the other order: a job queued, then a truncation, then the job runs.
  for (int i = 0; i < 3; ++i) append(*l, make_batch(1));  // 5, 6 fill [3, 6); 6 rolls
  ASSERT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 3, 6}));
  ASSERT_EQ(flusher.pending(), 1u);  // the flush of [3, 6)
  ASSERT_TRUE(l->truncate_to(4).ok());
  EXPECT_EQ(flusher.run_pending(), 1u);
  ASSERT_TRUE(l->flush_if_needed().ok());
  EXPECT_EQ(l->recovery_point(), 3);  // not 6: offsets 4.. were cut, and the job's bytes are gone
  for (int i = 0; i < 2; ++i) append(*l, make_batch(1));
  ASSERT_TRUE(l->flush_if_needed().ok());
  EXPECT_EQ(l->recovery_point(), 3);
}

// flush() (and so a durable close) syncs the rolled segments whose background flush has not run yet.
TEST_F(LogTest, FlushSyncsRolledSegmentsStillQueued) {
  background_flusher flusher(/*threaded=*/false);
  auto l = open_log_rolling_every(2, flusher);
  for (int i = 0; i < 5; ++i) append(*l, make_batch(1));
  ASSERT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 2, 4}));
  ASSERT_EQ(flusher.pending(), 2u);
  ASSERT_TRUE(l->flush().ok());
  EXPECT_EQ(l->recovery_point(), 5);
  flusher.run_pending();  // late completions cannot move it back
  ASSERT_TRUE(l->flush_if_needed().ok());
  EXPECT_EQ(l->recovery_point(), 5);
}

// With no checkpointed recovery point, a rolled segment is recovered like the active one: a torn tail there (a
// power loss before its background flush) is cut, and the segments after it, written later, are deleted.
TEST_F(LogTest, RecoveryWithoutCheckpointCutsATornRolledSegmentAndWhatFollows) {
  const int64_t batch = static_cast<int64_t>(make_batch(2).size());
  {
    log_config c;
    c.segment_bytes = batch * 3;
    auto l = open_log(c);
    for (int i = 0; i < 7; ++i) append(*l, make_batch(2));
    ASSERT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 6, 12}));
  }
  std::filesystem::resize_file(seg_file(6, ".log"), static_cast<uintmax_t>(batch + 10));  // batch 4 whole, 5 torn
  auto l = open_log({});
  EXPECT_EQ(l->segment_base_offsets(), (std::vector<int64_t>{0, 6}));
  EXPECT_EQ(l->log_end_offset(), 8);
  EXPECT_FALSE(std::filesystem::exists(seg_file(12, ".log")));
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(seg_file(6, ".log"))), batch);
  EXPECT_EQ(append(*l, make_batch(1)).base_offset, 8);
}

TEST_F(LogTest, LogAppendTimeConfig) {
  log_config c;
  c.message_timestamp_type = timestamp_type::log_append_time;
  auto l = open_log(c);
  auto bytes = make_batch(2, 5);
  auto r = l->append(bytes, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->log_append_time, clock_.now_ms());
  EXPECT_EQ(r->max_timestamp, clock_.now_ms());
  auto read = l->read(0, 1 << 20, INT64_MAX, false);
  auto hs = batches_in(read_region(read->region));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].ts_type(), timestamp_type::log_append_time);
  EXPECT_EQ(hs[0].max_timestamp, clock_.now_ms());
}

// Kafka's LogValidator.validateRecord: a compacted topic refuses records without a key; the whole batch is
// refused (nothing written) and every refused record is named by its index in the batch.
TEST_F(LogTest, CompactedTopicRefusesRecordsWithoutKey) {
  log_config c;
  c.compacted = true;
  auto l = open_log(c);
  for (bool compressed : {false, true}) {
    SCOPED_TRACE(compressed ? "gzip" : "uncompressed");
    record_batch_builder b;
    for (int i = 0; i < 10; ++i) {
      if (i % 4 == 1) b.add(std::nullopt, "v", 1000 + i);
      else b.add("k" + std::to_string(i), "v", 1000 + i);
    }
    auto bytes = compressed ? gzipped(b.build()) : b.build();
    std::vector<record_error> rejected;
    auto r = l->append(bytes, 0, append_origin::client, &rejected);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::invalid_record);
    ASSERT_EQ(rejected.size(), 3u);
    EXPECT_EQ(rejected[0].batch_index, 1);
    EXPECT_EQ(rejected[1].batch_index, 5);
    EXPECT_EQ(rejected[2].batch_index, 9);
    EXPECT_FALSE(rejected[0].timestamp);
    EXPECT_EQ(l->log_end_offset(), 0);
  }
  // The broker's own writes (a coordinator's) are not checked; keyed records are taken.
  auto keyed = make_batch(2);
  EXPECT_TRUE(l->append(keyed, 0).ok());
  record_batch_builder b;
  b.add(std::nullopt, "tombstone-less", 1000);
  auto own = b.build();
  EXPECT_TRUE(l->append(own, 0, append_origin::coordinator).ok());
  EXPECT_EQ(l->log_end_offset(), 3);
}

// message.timestamp.before.max.ms / after.max.ms: each CreateTime record is checked, not only the batch's
// max timestamp; the error is INVALID_TIMESTAMP (errc::invalid_timestamp) with the refused records.
TEST_F(LogTest, TimestampsOutsideTheAllowedRangeAreRefusedPerRecord) {
  log_config c;
  c.timestamp_before_max_ms = 3'600'000;
  c.timestamp_after_max_ms = 3'600'000;
  auto l = open_log(c);
  const int64_t now = clock_.now_ms();
  for (bool compressed : {false, true}) {
    SCOPED_TRACE(compressed ? "gzip" : "uncompressed");
    record_batch_builder b;
    b.add("a", "v", now);
    b.add("b", "v", now - 86'400'000);  // a day old: refused
    b.add("c", "v", now + 3'600'000);   // exactly the limit: taken
    b.add("d", "v", now + 3'600'001);   // refused
    auto bytes = compressed ? gzipped(b.build()) : b.build();
    std::vector<record_error> rejected;
    auto r = l->append(bytes, 0, append_origin::client, &rejected);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::invalid_timestamp);
    ASSERT_EQ(rejected.size(), 2u);
    EXPECT_EQ(rejected[0].batch_index, 1);
    EXPECT_EQ(rejected[1].batch_index, 3);
    EXPECT_TRUE(rejected[0].timestamp);
    EXPECT_NE(rejected[0].message.find(std::to_string(now - 86'400'000)), std::string::npos);
  }
  EXPECT_EQ(l->log_end_offset(), 0);
  auto ok = make_batch(3, now - 1000);
  EXPECT_TRUE(l->append(ok, 0).ok());
  // LogAppendTime topics stamp their own time: no client timestamp is refused.
  c.message_timestamp_type = timestamp_type::log_append_time;
  l->update_config(c);
  auto old = make_batch(1, now - 86'400'000);
  EXPECT_TRUE(l->append(old, 0).ok());
}

// Kafka's validateBatch: a batch with a producer id carries a sequence (base sequence -1 is INVALID_RECORD).
TEST_F(LogTest, ProducerBatchWithoutSequenceIsRefused) {
  auto l = open_log({});
  record_batch_builder b;
  b.set_producer(7, 0, -1);
  b.add("k", "v", 1000);
  auto bytes = b.build();
  auto r = l->append(bytes, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_record);
  EXPECT_EQ(l->log_end_offset(), 0);
}

TEST_F(LogTest, RegionOutlivesClose) {
  auto l = open_log({});
  append(*l, make_batch(2));
  auto r = l->read(0, 1 << 20, INT64_MAX, false);
  ASSERT_TRUE(r.ok());
  l->close();
  l.reset();
  EXPECT_EQ(batches_in(read_region(r->region)).size(), 1u);
}

}  // namespace
}  // namespace sluice::storage
