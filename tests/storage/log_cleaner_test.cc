// Log compaction (storage/log_cleaner.h): the offset map, one cleaning pass through plan / clean / install,
// tombstones and their delete horizon (KIP-534), aborted transactions, emptied batches of live producers, a
// map too small for the dirty part, compressed batches, and a swap interrupted by a crash at each step.
#include "storage/log_cleaner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "storage/byte_order.h"
#include "storage/compression.h"
#include "storage/control_record.h"
#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/log.h"
#include "storage/segment.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::temp_dir;

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(OffsetMapTest, KeepsTheLatestOffsetPerKeyWithinItsMemory) {
  offset_map m(24 * 100, 0.5);  // 100 slots, full at 50 keys
  EXPECT_EQ(m.slots(), 100u);
  EXPECT_EQ(m.get(bytes("a")), -1);
  m.put(bytes("a"), 5);
  m.put(bytes("b"), 6);
  m.put(bytes("a"), 9);
  EXPECT_EQ(m.get(bytes("a")), 9);
  EXPECT_EQ(m.get(bytes("b")), 6);
  EXPECT_EQ(m.get(bytes("c")), -1);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.latest_offset(), 9);
  for (int i = 0; i < 48; ++i) m.put(bytes("key-" + std::to_string(i)), 100 + i);
  EXPECT_TRUE(m.full());
  EXPECT_EQ(m.get(bytes("key-47")), 147);
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.get(bytes("a")), -1);
  EXPECT_FALSE(m.full());
}

struct rec {
  int64_t offset;
  std::string key;
  std::optional<std::string> value;
  int64_t timestamp;
};

class LogCleanerTest : public ::testing::Test {
 protected:
  LogCleanerTest() {
    cfg.segment_bytes = 2048;
    cfg.compacted = true;
  }
  std::filesystem::path dir() const { return tmp_.path() / "compacted-0"; }
  std::unique_ptr<log> open_log() {
    auto l = log::open(dir(), cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  // One batch of (key, value) records; a null value is a tombstone.
  std::vector<uint8_t> batch(const std::vector<std::pair<std::string, std::optional<std::string>>>& kvs,
                             int64_t pid = -1, int32_t seq = -1, bool txn = false) {
    record_batch_builder b;
    if (pid >= 0) b.set_producer(pid, 0, seq);
    if (txn) b.set_transactional();
    for (const auto& [k, v] : kvs) {
      if (v) b.add(k, *v, clock_.now_ms());
      else b.add(k, std::nullopt, clock_.now_ms());
    }
    return b.build();
  }
  void append(log& l, std::vector<uint8_t> b) {
    auto r = l.append(b, 0);
    ASSERT_TRUE(r.ok()) << r.err().message;
  }
  // Every record from the log start to the LEO, decompressing where needed; `batches` counts batches and
  // `empty_batches` the ones with no record.
  std::vector<rec> read_all(log& l, int* batches = nullptr, int* empty_batches = nullptr,
                            std::vector<int64_t>* markers = nullptr) {
    std::vector<rec> out;
    int64_t offset = l.log_start_offset();
    int n = 0, empty = 0;
    while (offset < l.log_end_offset()) {
      auto r = l.read(offset, 1 << 20, l.log_end_offset(), true);
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
      if (!r.ok() || r->region.size == 0) break;
      auto data = testing::read_region(r->region);
      for (size_t pos = 0; pos < data.size();) {
        auto h = validate_record_batch(std::span<const uint8_t>(data).subspan(pos));
        EXPECT_TRUE(h.ok());
        if (!h.ok()) return out;
        ++n;
        if (h->records_count == 0) ++empty;
        std::span<const uint8_t> one(data.data() + pos, static_cast<size_t>(h->size_bytes()));
        std::vector<uint8_t> plain;
        std::span<const uint8_t> records = one.subspan(record_batch_header_size);
        if (h->compression() != compression_codec::none) {
          auto d = decompress(h->compression(), records);
          EXPECT_TRUE(d.ok());
          plain = std::move(*d);
          records = plain;
        }
        if (h->is_control() && markers) markers->push_back(h->base_offset);
        if (!h->is_control()) {
          auto it = record_iterator::over_records(*h, records);
          record_view v;
          while (it.next(v)) {
            out.push_back({v.offset, std::string(v.key.value_or("")),
                           v.value ? std::optional<std::string>(std::string(*v.value)) : std::nullopt, v.timestamp});
          }
          EXPECT_FALSE(it.error());
        }
        offset = h->last_offset() + 1;
        pos += static_cast<size_t>(h->size_bytes());
      }
    }
    if (batches) *batches = n;
    if (empty_batches) *empty_batches = empty;
    return out;
  }
  // Steps 1 and 2 of a pass (HW = LEO): the plan and the cleaned files, not installed yet.
  std::pair<cleaning_plan, cleaning_result> plan_and_clean(log& l, size_t map_bytes = 1 << 20, int64_t first_dirty = 0) {
    cleaning_limits limits;
    limits.high_watermark = l.log_end_offset();
    limits.first_dirty_offset = first_dirty;
    limits.now_ms = clock_.now_ms();
    auto plan = l.plan_cleaning(limits);
    EXPECT_TRUE(plan.has_value());
    if (!plan) return {};
    offset_map map(map_bytes);
    cleaning_options o;
    o.now_ms = clock_.now_ms();
    o.delete_retention_ms = delete_retention_ms;
    auto r = clean_log(*plan, o, map);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return {*plan, r.ok() ? std::move(*r) : cleaning_result{}};
  }
  // One whole pass: plan, clean, install. Returns the result (end offset, stats).
  cleaning_result clean(log& l, size_t map_bytes = 1 << 20, int64_t first_dirty = 0) {
    auto [plan, r] = plan_and_clean(l, map_bytes, first_dirty);
    auto installed = l.install_cleaned(r);
    EXPECT_TRUE(installed.ok()) << (installed.ok() ? "" : installed.err().message);
    return r;
  }
  // The latest value per key, as compaction should leave it.
  static std::map<std::string, std::pair<int64_t, std::optional<std::string>>> latest(const std::vector<rec>& rs) {
    std::map<std::string, std::pair<int64_t, std::optional<std::string>>> m;
    for (const auto& r : rs) m[r.key] = {r.offset, r.value};
    return m;
  }
  // Whether no key appears twice among the records below `offset` (what a pass up to there leaves).
  static bool one_per_key_below(const std::vector<rec>& rs, int64_t offset) {
    std::map<std::string, int> seen;
    for (const auto& r : rs)
      if (r.offset < offset && ++seen[r.key] > 1) return false;
    return !seen.empty();
  }
  std::vector<std::string> files_ending(const std::string& suffix) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir())) {
      const auto n = e.path().filename().string();
      if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(n);
    }
    return out;
  }
  // 20 keys, each written `rounds` times (one batch of 5 records per append), then one more append so the
  // last data segment is inactive.
  void fill(log& l, int rounds) {
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 20; k += 5) {
        std::vector<std::pair<std::string, std::optional<std::string>>> kvs;
        for (int j = k; j < k + 5; ++j) kvs.push_back({"key" + std::to_string(j), "round" + std::to_string(r)});
        append(l, batch(kvs));
      }
    }
  }

  log_config cfg;
  int64_t delete_retention_ms = 60000;
  temp_dir tmp_;
  manual_clock clock_;
};

TEST_F(LogCleanerTest, KeepsTheLatestValueOfEveryKeyAtItsOffset) {
  auto l = open_log();
  fill(*l, 30);  // 600 records over several 2 KiB segments
  append(*l, batch({{"tail", "t"}}));
  const auto before = read_all(*l);
  ASSERT_EQ(before.size(), 601u);
  const size_t segments_before = l->segment_count();
  ASSERT_GT(segments_before, 4u);
  const int64_t size_before = l->size_bytes();
  const auto want = latest(before);

  const auto r = clean(*l);
  EXPECT_EQ(r.stats.keys_mapped, 20u) << "the tail is in the active segment: never cleaned";
  EXPECT_EQ(r.end_offset, l->segment_base_offsets().back()) << "all the dirty part fit: up to the active segment";
  const auto after = read_all(*l);
  EXPECT_EQ(latest(after), want) << "the last value of each key, at its original offset";
  EXPECT_LT(after.size(), 60u) << "superseded records are gone";
  for (size_t i = 1; i < after.size(); ++i) EXPECT_LT(after[i - 1].offset, after[i].offset);
  EXPECT_LT(l->size_bytes(), size_before / 4);
  EXPECT_EQ(l->segment_count(), segments_before) << "groups are made by the sizes before cleaning (Kafka's rule)";
  // A second pass with nothing dirty merges the now small segments into one group.
  const auto again = clean(*l, 1 << 20, r.end_offset);
  EXPECT_EQ(l->segment_count(), 2u) << "one cleaned segment and the active one";
  EXPECT_EQ(latest(read_all(*l)), want);
  EXPECT_EQ(l->log_end_offset(), 601);
  EXPECT_TRUE(files_ending(".cleaned").empty());
  EXPECT_TRUE(files_ending(".swap").empty());

  // Appends go on at the LEO; a reopened log reads the same.
  append(*l, batch({{"key1", "later"}}));
  l->close();
  l = open_log();
  auto reopened = read_all(*l);
  ASSERT_FALSE(reopened.empty());
  EXPECT_EQ(reopened.back().offset, 601);
  EXPECT_EQ(reopened.back().value, "later");
  reopened.pop_back();
  EXPECT_EQ(latest(reopened), want);
}

TEST_F(LogCleanerTest, ASecondPassOnlyMapsTheNewDirtyPart) {
  auto l = open_log();
  fill(*l, 10);
  append(*l, batch({{"tail", "t"}}));
  const auto first = clean(*l);
  fill(*l, 10);
  append(*l, batch({{"tail", "t2"}}));
  const auto want = latest(read_all(*l));
  const auto second = clean(*l, 1 << 20, first.end_offset);
  EXPECT_EQ(second.stats.keys_mapped, 21u) << "20 keys and the first tail, no longer in the active segment";
  EXPECT_GT(second.end_offset, first.end_offset);
  EXPECT_EQ(latest(read_all(*l)), want);
  EXPECT_TRUE(one_per_key_below(read_all(*l), second.end_offset));
}

TEST_F(LogCleanerTest, TombstonesStayUntilTheirDeleteHorizonThenGo) {
  auto l = open_log();
  fill(*l, 10);
  append(*l, batch({{"key3", std::nullopt}, {"key4", std::nullopt}}));  // deletes key3 and key4
  append(*l, batch({{"key4", "back"}}));                                 // key4 comes back
  for (int i = 0; i < 60; ++i) append(*l, batch({{"filler" + std::to_string(i % 3), "f"}}));
  append(*l, batch({{"tail", "t"}}));
  const auto r1 = clean(*l);
  auto after = latest(read_all(*l));
  ASSERT_TRUE(after.count("key3"));
  EXPECT_EQ(after["key3"].second, std::nullopt) << "the tombstone is kept for delete.retention.ms";
  EXPECT_EQ(after["key4"].second, "back");
  EXPECT_EQ(r1.stats.tombstones_removed, 0);
  EXPECT_EQ(r1.latest_delete_horizon, clock_.now_ms() + delete_retention_ms) << "KIP-534: now + delete.retention.ms";

  // Later passes with no new dirty data: the tombstone goes once its horizon has passed.
  clock_.advance_ms(delete_retention_ms - 1);
  const auto r2 = clean(*l, 1 << 20, r1.end_offset);
  EXPECT_EQ(r2.stats.tombstones_removed, 0) << "horizon not reached";
  EXPECT_TRUE(latest(read_all(*l)).count("key3"));
  clock_.advance_ms(2);
  const auto r3 = clean(*l, 1 << 20, r2.end_offset);
  EXPECT_EQ(r3.stats.tombstones_removed, 1);
  after = latest(read_all(*l));
  EXPECT_FALSE(after.count("key3")) << "gone after delete.retention.ms";
  EXPECT_EQ(after["key4"].second, "back");
  EXPECT_EQ(after.size(), 20u - 1u + 3u + 1u) << "19 keys, 3 fillers, tail";
}

TEST_F(LogCleanerTest, AMapTooSmallCleansInSeveralPasses) {
  auto l = open_log();
  fill(*l, 20);
  append(*l, batch({{"tail", "t"}}));
  const auto want = latest(read_all(*l));
  offset_map small(24 * 12, 0.9);  // 10 keys: half the keys per pass
  int64_t first_dirty = 0;
  int passes = 0;
  for (; passes < 100; ++passes) {
    cleaning_limits limits;
    limits.high_watermark = l->log_end_offset();
    limits.first_dirty_offset = first_dirty;
    limits.now_ms = clock_.now_ms();
    auto plan = l->plan_cleaning(limits);
    ASSERT_TRUE(plan);
    if (first_dirty >= plan->first_uncleanable_offset) break;
    cleaning_options o;
    o.now_ms = clock_.now_ms();
    auto r = clean_log(*plan, o, small);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_LE(r->stats.keys_mapped, 10u);
    ASSERT_TRUE(l->install_cleaned(*r).ok());
    EXPECT_GT(r->end_offset, first_dirty) << "every pass makes progress";
    first_dirty = r->end_offset;
    EXPECT_EQ(latest(read_all(*l)), want) << "pass " << passes;
  }
  EXPECT_GE(passes, 2);
  EXPECT_LT(passes, 100);
  EXPECT_TRUE(one_per_key_below(read_all(*l), first_dirty));
}

TEST_F(LogCleanerTest, CompressedBatchesStayCompressed) {
  auto l = open_log();
  for (int r = 0; r < 40; ++r) {
    record_batch_builder b;
    for (int k = 0; k < 10; ++k) b.add("key" + std::to_string(k), "value-" + std::to_string(r), clock_.now_ms());
    auto plain = b.build();
    auto payload = compress(compression_codec::zstd, std::span<const uint8_t>(plain).subspan(record_batch_header_size));
    ASSERT_TRUE(payload.ok());
    std::vector<uint8_t> z(plain.begin(), plain.begin() + record_batch_header_size);
    z.insert(z.end(), payload->begin(), payload->end());
    detail::store_be<int32_t>(z.data() + batch_field::batch_length, static_cast<int32_t>(z.size() - log_overhead));
    detail::store_be<int16_t>(z.data() + batch_field::attributes, static_cast<int16_t>(compression_codec::zstd));
    recompute_crc(z);
    append(*l, z);
  }
  append(*l, batch({{"tail", "t"}}));
  cfg.segment_bytes = 1 << 20;
  const auto want = latest(read_all(*l));
  clean(*l);
  const auto after = read_all(*l);
  EXPECT_EQ(latest(after), want);
  EXPECT_LE(after.size(), 11u + 10u);
  auto first = l->read(l->log_start_offset(), 1 << 20, l->log_end_offset(), true);
  ASSERT_TRUE(first.ok());
  auto data = testing::read_region(first->region);
  auto h = validate_record_batch(data);
  ASSERT_TRUE(h.ok()) << "a valid CRC after the rebuild";
  if (h->records_count > 0) EXPECT_EQ(h->compression(), compression_codec::zstd);
}

TEST_F(LogCleanerTest, AbortedDataGoesMarkersAndALiveProducersLastBatchStay) {
  auto l = open_log();
  append(*l, batch({{"a", "1"}, {"b", "1"}}, 7, 0, true));  // producer 7, transactional: aborted below
  ASSERT_TRUE(l->append_marker(7, 0, {false, 1}, 0).ok());
  append(*l, batch({{"a", "2"}}, 8, 0));  // idempotent producer 8: its only (so last) batch
  append(*l, batch({{"a", "3"}}));        // supersedes producer 8's record
  fill(*l, 8);
  append(*l, batch({{"a", "4"}}));
  append(*l, batch({{"tail", "t"}}));
  l->on_high_watermark_updated(l->log_end_offset());
  int batches = 0, empty = 0;
  const auto r = clean(*l);
  EXPECT_EQ(r.stats.aborted_records_removed, 2);
  const auto after = read_all(*l, &batches, &empty);
  auto m = latest(after);
  EXPECT_EQ(m["a"].second, "4");
  EXPECT_FALSE(m.count("b")) << "b was only written by the aborted transaction";
  EXPECT_GE(r.stats.empty_batches_retained, 1) << "producer 8's emptied batch keeps its header";
  EXPECT_GE(empty, 1);
  // The abort stays indexed for read_committed readers, and the producer's state survives a reopen.
  EXPECT_EQ(l->collect_aborted(0, l->log_end_offset()).size(), 1u);
  l->close();
  l = open_log();
  ASSERT_TRUE(l->producer_state().producers().count(8));
  EXPECT_EQ(l->producer_state().producers().at(8).last_seq(), 0);
}

TEST_F(LogCleanerTest, MarkersOfTransactionsWithNothingLeftGoAfterTheirHorizon) {
  auto l = open_log();
  append(*l, batch({{"a", "1"}}, 7, 0, true));  // producer 7 commits a=1 (0), marker at 1
  ASSERT_TRUE(l->append_marker(7, 0, {true, 1}, 0).ok());
  append(*l, batch({{"b", "1"}}, 9, 0, true));  // producer 9 aborts b=1 (2), marker at 3
  ASSERT_TRUE(l->append_marker(9, 0, {false, 1}, 0).ok());
  append(*l, batch({{"c", "1"}}, 11, 0, true));  // producer 11 commits c=1 (4), marker at 5: c stays
  ASSERT_TRUE(l->append_marker(11, 0, {true, 1}, 0).ok());
  append(*l, batch({{"a", "2"}}));  // a=1 is superseded: producer 7's transaction has nothing left
  fill(*l, 8);
  append(*l, batch({{"tail", "t"}}));
  l->on_high_watermark_updated(l->log_end_offset());

  std::vector<int64_t> markers;
  const auto r1 = clean(*l);
  read_all(*l, nullptr, nullptr, &markers);
  EXPECT_EQ(markers, (std::vector<int64_t>{1, 3, 5})) << "within delete.retention.ms every marker stays";
  EXPECT_EQ(r1.stats.markers_removed, 0);
  EXPECT_EQ(r1.latest_delete_horizon, clock_.now_ms() + delete_retention_ms);
  EXPECT_EQ(l->collect_aborted(0, l->log_end_offset()).size(), 1u) << "producer 9's abort, with its marker";

  clock_.advance_ms(delete_retention_ms + 1);
  const auto r2 = clean(*l, 1 << 20, r1.end_offset);
  EXPECT_EQ(r2.stats.markers_removed, 2);
  markers.clear();
  auto m = latest(read_all(*l, nullptr, nullptr, &markers));
  EXPECT_EQ(markers, (std::vector<int64_t>{5})) << "only the marker of the transaction with a record left";
  // An aborted-transaction entry without its marker would make read_committed readers skip producer 9's later
  // batches for good: the entry goes with the marker.
  EXPECT_TRUE(l->collect_aborted(0, l->log_end_offset()).empty());
  EXPECT_EQ(m["a"].second, "2");
  EXPECT_EQ(m["c"].second, "1");
  EXPECT_FALSE(m.count("b"));
  EXPECT_EQ(r2.latest_delete_horizon, -1) << "nothing left waiting for a horizon";
}

// The crash points of install_cleaned, replayed by hand on copies of the directory.
TEST_F(LogCleanerTest, ACrashAtAnyStepOfTheSwapLosesNothing) {
  auto l = open_log();
  fill(*l, 20);
  append(*l, batch({{"tail", "t"}}));
  const auto want = latest(read_all(*l));
  const int64_t leo = l->log_end_offset();
  const auto [plan, r] = plan_and_clean(*l);
  ASSERT_FALSE(r.groups.empty());
  l->flush();
  l->close();
  const auto& g = r.groups.front();

  auto reopen_and_check = [&](const std::string& step) {
    auto re = open_log();
    ASSERT_TRUE(re) << step;
    EXPECT_EQ(re->log_end_offset(), leo) << step;
    EXPECT_EQ(latest(read_all(*re)), want) << step;
    EXPECT_TRUE(files_ending(".cleaned").empty()) << step;
    EXPECT_TRUE(files_ending(".swap").empty()) << step;
    re->close();
  };
  const auto pristine = tmp_.path() / "pristine";
  std::filesystem::copy(dir(), pristine, std::filesystem::copy_options::recursive);
  auto restore = [&] {
    std::filesystem::remove_all(dir());
    std::filesystem::copy(pristine, dir(), std::filesystem::copy_options::recursive);
  };

  // 1. Crash before the swap: the .cleaned files are dropped, the old segments serve.
  reopen_and_check("cleaned files only");
  EXPECT_EQ(read_all(*open_log()).size(), 401u);

  // 2. Crash right after the rename to .swap: the swap is finished at open.
  restore();
  ASSERT_TRUE(segment::rename_files(dir(), g.base_offset, segment_suffix::cleaned, segment_suffix::swap));
  reopen_and_check("swap, old segments present");

  // 3. Crash after some of the replaced segments were removed.
  restore();
  ASSERT_TRUE(segment::rename_files(dir(), g.base_offset, segment_suffix::cleaned, segment_suffix::swap));
  for (const char* suffix : {".log", ".index", ".timeindex"})
    std::filesystem::remove(dir() / detail::segment_file_name(g.sources.front().base_offset, suffix));
  reopen_and_check("swap, first replaced segment removed");

  // 4. Crash after the index swap files took their names but before the .log did.
  restore();
  ASSERT_TRUE(segment::rename_files(dir(), g.base_offset, segment_suffix::cleaned, segment_suffix::swap));
  for (const auto& s : g.sources)
    for (const char* suffix : {".log", ".index", ".timeindex"})
      std::filesystem::remove(dir() / detail::segment_file_name(s.base_offset, suffix));
  std::filesystem::rename(dir() / (detail::segment_file_name(g.base_offset, ".index") + ".swap"),
                          dir() / detail::segment_file_name(g.base_offset, ".index"));
  reopen_and_check("swap, index renamed");
}

// A second pass merges small cleaned segments into one group whose last records are superseded: the cleaned
// segment still ends where its sources did, so a crash right after its swap commits leaves no stale source behind.
TEST_F(LogCleanerTest, AMergingSwapCutShortLeavesNoStaleSegment) {
  auto l = open_log();
  fill(*l, 20);
  append(*l, batch({{"tail", "t"}}));
  const auto first = clean(*l);
  fill(*l, 12);  // every key again, over several segments: the cleaned segments keep nothing
  append(*l, batch({{"tail2", "t"}}));
  const auto [plan, r] = plan_and_clean(*l, 1 << 20, first.end_offset);
  ASSERT_FALSE(r.groups.empty());
  const auto& g = r.groups.front();
  ASSERT_GT(g.sources.size(), 1u) << "the small segments merge";
  ASSERT_TRUE(l->flush());
  const auto copy = tmp_.path() / "copy";  // the directory as a crash would leave it, .cleaned files included
  std::filesystem::copy(dir(), copy, std::filesystem::copy_options::recursive);
  // Reference: the whole install.
  ASSERT_TRUE(l->install_cleaned(r).ok());
  const auto want = read_all(*l);
  l->close();
  // Crash right after the commit point of every group, on the copy.
  std::filesystem::remove_all(dir());
  std::filesystem::copy(copy, dir(), std::filesystem::copy_options::recursive);
  for (const auto& each : r.groups)
    ASSERT_TRUE(segment::rename_files(dir(), each.base_offset, segment_suffix::cleaned, segment_suffix::swap));
  l = open_log();
  const auto got = read_all(*l);
  ASSERT_EQ(got.size(), want.size()) << "no source segment survived the finished swap";
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].offset, want[i].offset);
  for (const auto& s : g.sources) {
    if (s.base_offset != g.base_offset)
      EXPECT_FALSE(std::filesystem::exists(dir() / detail::segment_file_name(s.base_offset, ".log"))) << s.base_offset;
  }
}

TEST_F(LogCleanerTest, ASegmentRemovedWhileCleaningDropsThePass) {
  auto l = open_log();
  fill(*l, 20);
  append(*l, batch({{"tail", "t"}}));
  const auto [plan, r] = plan_and_clean(*l);
  ASSERT_GE(plan.segments.size(), 2u);
  // Meanwhile DeleteRecords removed the first segment.
  ASSERT_TRUE(l->delete_records_before(plan.segments[1].base_offset).ok());
  auto installed = l->install_cleaned(r);
  ASSERT_FALSE(installed.ok());
  EXPECT_EQ(installed.err().code, errc::not_found);
  EXPECT_TRUE(files_ending(".cleaned").empty());
  EXPECT_EQ(read_all(*l).front().offset, plan.segments[1].base_offset) << "the log is as DeleteRecords left it";
}

TEST_F(LogCleanerTest, MinCompactionLagKeepsYoungSegmentsDirty) {
  auto l = open_log();
  fill(*l, 10);
  clock_.advance_ms(10000);
  fill(*l, 10);
  append(*l, batch({{"tail", "t"}}));
  cleaning_limits limits;
  limits.high_watermark = l->log_end_offset();
  limits.now_ms = clock_.now_ms();
  limits.min_compaction_lag_ms = 5000;
  auto plan = l->plan_cleaning(limits);
  ASSERT_TRUE(plan);
  EXPECT_LE(plan->first_uncleanable_offset, 200) << "the second fill is younger than the lag";
  limits.min_compaction_lag_ms = 0;
  limits.high_watermark = 150;
  plan = l->plan_cleaning(limits);
  ASSERT_TRUE(plan);
  EXPECT_LE(plan->first_uncleanable_offset, 150) << "never past the high watermark";
  for (const auto& s : plan->segments) {
    EXPECT_LE(s.next_offset, 150);
  }
}

}  // namespace
}  // namespace sluice::storage
