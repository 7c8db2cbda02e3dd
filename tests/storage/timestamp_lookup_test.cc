// ListOffsets by timestamp (KIP-79) and MAX_TIMESTAMP (KIP-734) over the records INSIDE a batch, for an
// uncompressed batch and for each codec: Kafka's FileRecords.searchForTimestamp reads (decompresses) the
// records of the batch and answers the first record, in offset order, whose timestamp >= the target.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/byte_order.h"
#include "storage/compression.h"
#include "storage/log.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

// One batch holding a record per timestamp of `timestamps` (CreateTime), compressed with `codec` by our
// compress() (its output is read by the codec libraries: compression_test). Values are long and alike so
// that every codec really compresses.
std::vector<uint8_t> batch_with_timestamps(compression_codec codec, const std::vector<int64_t>& timestamps) {
  record_batch_builder b;
  for (size_t i = 0; i < timestamps.size(); ++i) {
    b.add("key-" + std::to_string(i), "value-" + std::to_string(i) + std::string(60, 'v'), timestamps[i]);
  }
  auto plain = b.build();
  if (codec == compression_codec::none) return plain;
  const auto records = std::span<const uint8_t>(plain).subspan(record_batch_header_size);
  auto payload = compress(codec, records);
  EXPECT_TRUE(payload.ok());
  EXPECT_LT(payload->size(), records.size()) << codec_name(codec);
  std::vector<uint8_t> out(plain.begin(), plain.begin() + record_batch_header_size);
  out.insert(out.end(), payload->begin(), payload->end());
  detail::store_be<int32_t>(out.data() + batch_field::batch_length, static_cast<int32_t>(out.size() - log_overhead));
  const auto attrs = detail::load_be<int16_t>(out.data() + batch_field::attributes);
  detail::store_be<int16_t>(out.data() + batch_field::attributes,
                            static_cast<int16_t>(attrs | static_cast<int16_t>(codec)));
  recompute_crc(out);
  return out;
}

class TimestampLookupTest : public ::testing::TestWithParam<compression_codec> {
 protected:
  std::unique_ptr<log> open_log(log_config cfg = {}) {
    auto l = log::open(tmp_.path() / "t-0", cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  void append(log& l, std::vector<uint8_t> bytes) {
    auto r = l.append(bytes, 0);
    ASSERT_TRUE(r.ok()) << r.err().message;
  }
  temp_dir tmp_;
  manual_clock clock_;
};

// 3 uncompressed records at 5000..5002 (offsets 0..2), then one batch of 50 records (offsets 3..52) with
// timestamps 10000, 10010, ..., 10490 in the codec under test.
TEST_P(TimestampLookupTest, FirstRecordAtOrAfterTheTargetInsideTheBatch) {
  auto l = open_log();
  append(*l, make_batch(3, 5000));
  std::vector<int64_t> ts;
  for (int i = 0; i < 50; ++i) ts.push_back(10000 + 10 * i);
  append(*l, batch_with_timestamps(GetParam(), ts));
  ASSERT_EQ(l->log_end_offset(), 53);

  auto at = [&](int64_t target) {
    int64_t found_ts = -2;
    auto r = l->offset_for_timestamp(target, &found_ts);
    EXPECT_TRUE(r.ok()) << r.err().message;
    return std::make_pair(r.value(), r.value() >= 0 ? found_ts : -1);
  };
  using p = std::pair<int64_t, int64_t>;
  EXPECT_EQ(at(5001), p(1, 5001));     // the uncompressed batch before
  EXPECT_EQ(at(5003), p(3, 10000));    // between the batches: the first record of the next
  EXPECT_EQ(at(10000), p(3, 10000));   // the first record's timestamp
  EXPECT_EQ(at(10250), p(28, 10250));  // a middle record
  EXPECT_EQ(at(10255), p(29, 10260));  // between two records: the later one
  EXPECT_EQ(at(10490), p(52, 10490));  // the last record
  EXPECT_EQ(at(10491).first, -1);      // above every timestamp

  // MAX_TIMESTAMP: the last record of the batch carries the max.
  auto m = l->max_timestamp_and_offset();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->timestamp, 10490);
  EXPECT_EQ(m->offset, 52);

  // With the log start offset inside the batch (DeleteRecords), offsets below it are never answered.
  ASSERT_TRUE(l->delete_records_before(20).ok());
  EXPECT_EQ(at(10000), p(20, 10170));
  EXPECT_EQ(at(10300), p(33, 10300));
}

// Timestamps that go backwards inside the batch: the first record in OFFSET order whose timestamp >= the
// target, not the record with the smallest such timestamp.
TEST_P(TimestampLookupTest, TimestampsGoingBackwardsInsideTheBatch) {
  auto l = open_log();
  append(*l, make_batch(2, 50));  // offsets 0..1 at 50, 51
  append(*l, batch_with_timestamps(GetParam(), {100, 300, 200, 400}));  // offsets 2..5
  auto at = [&](int64_t target) { return l->offset_for_timestamp(target).value(); };
  EXPECT_EQ(at(100), 2);
  EXPECT_EQ(at(150), 3);  // 300 is the first >= 150
  EXPECT_EQ(at(250), 3);  // 300 comes before 400 in offset order (200 < 250)
  EXPECT_EQ(at(300), 3);
  EXPECT_EQ(at(350), 5);
  EXPECT_EQ(at(400), 5);
  EXPECT_EQ(at(401), -1);
}

// KIP-734 as Kafka 3.7.1+/4.x: the first record carrying the max timestamp, read inside the batch.
TEST_P(TimestampLookupTest, MaxTimestampIsTheFirstRecordCarryingIt) {
  auto l = open_log();
  append(*l, make_batch(4, 100));                                             // offsets 0..3
  append(*l, batch_with_timestamps(GetParam(), {500, 900, 700, 900, 800}));  // offsets 4..8, max 900 at 5
  append(*l, make_batch(2, 600));                                             // offsets 9..10
  auto m = l->max_timestamp_and_offset();
  ASSERT_TRUE(m.ok()) << m.err().message;
  EXPECT_EQ(m->timestamp, 900);
  EXPECT_EQ(m->offset, 5);
  int64_t found_ts = -2;
  EXPECT_EQ(l->offset_for_timestamp(900, &found_ts).value(), 5);
  EXPECT_EQ(found_ts, 900);
}

// Kafka's UnifiedLog answers MAX_TIMESTAMP from the segment's batches without bounding it by the log start offset:
// a record DeleteRecords put below the log start (still in its segment) stays the answer.
TEST_P(TimestampLookupTest, MaxTimestampBelowTheLogStartOffsetStaysTheAnswer) {
  auto l = open_log();
  append(*l, batch_with_timestamps(GetParam(), {100, 900, 200}));  // offsets 0..2, max 900 at 1
  append(*l, make_batch(3, 300));                                   // offsets 3..5
  ASSERT_TRUE(l->delete_records_before(4).ok());
  ASSERT_EQ(l->log_start_offset(), 4);
  auto m = l->max_timestamp_and_offset();
  ASSERT_TRUE(m.ok()) << m.err().message;
  EXPECT_EQ(m->timestamp, 900);
  EXPECT_EQ(m->offset, 1);
}

// The same answers after a restart: the time index is read back and the batch decompressed again.
TEST_P(TimestampLookupTest, SameAnswersAfterReopen) {
  log_config cfg;
  cfg.index_interval_bytes = 64;
  {
    auto l = open_log(cfg);
    for (int b = 0; b < 4; ++b) {
      std::vector<int64_t> ts;
      for (int i = 0; i < 20; ++i) ts.push_back(1000 * (b + 1) + i);
      append(*l, batch_with_timestamps(GetParam(), ts));
    }
    l->close();
  }
  auto l = open_log(cfg);
  EXPECT_EQ(l->offset_for_timestamp(3007).value(), 47);
  EXPECT_EQ(l->offset_for_timestamp(3500).value(), 60);
  EXPECT_EQ(l->offset_for_timestamp(4019).value(), 79);
  EXPECT_EQ(l->offset_for_timestamp(4020).value(), -1);
}

// LogAppendTime: every record of the batch reads as the batch's max timestamp (Kafka), so the batch's
// first record answers any target up to it.
TEST_P(TimestampLookupTest, LogAppendTimeBatchAnswersItsFirstRecord) {
  log_config cfg;
  cfg.message_timestamp_type = timestamp_type::log_append_time;
  auto l = open_log(cfg);
  const int64_t now = clock_.now_ms();
  append(*l, make_batch(2, 1));
  clock_.advance_ms(100);
  append(*l, batch_with_timestamps(GetParam(), {1, 2, 3}));  // offsets 2..4, all at now + 100
  int64_t found_ts = -2;
  EXPECT_EQ(l->offset_for_timestamp(now + 1, &found_ts).value(), 2);
  EXPECT_EQ(found_ts, now + 100);
  EXPECT_EQ(l->offset_for_timestamp(now + 101).value(), -1);
  auto m = l->max_timestamp_and_offset();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->timestamp, now + 100);
  EXPECT_EQ(m->offset, 2);
}

INSTANTIATE_TEST_SUITE_P(Codecs, TimestampLookupTest,
                         ::testing::Values(compression_codec::none, compression_codec::gzip, compression_codec::snappy,
                                           compression_codec::lz4, compression_codec::zstd),
                         [](const ::testing::TestParamInfo<compression_codec>& info) {
                           return std::string(codec_name(info.param));
                         });

}  // namespace
}  // namespace sluice::storage
