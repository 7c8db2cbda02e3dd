// latency_histogram (bench/load): bucket layout and percentiles on known inputs.
#include "bench/load/latency_histogram.h"

#include <gtest/gtest.h>

namespace sluice::bench {
namespace {

TEST(LoadHistogram, EmptyReportsZero) {
  latency_histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.value_at_percentile(50), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LoadHistogram, SmallValuesAreExact) {
  latency_histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.value_at_percentile(0), 1u);
  EXPECT_EQ(h.value_at_percentile(50), 50u);
  EXPECT_EQ(h.value_at_percentile(99), 99u);
  EXPECT_EQ(h.value_at_percentile(99.9), 100u);
  EXPECT_EQ(h.value_at_percentile(100), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(LoadHistogram, LargerValuesReportTheirBucketsTop) {
  latency_histogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.record(v);
  // Rank 500 is 500, in bucket [500, 501] (shift 1); rank 990 is 990 in [988, 991] (shift 2); rank 999 (p99.9 of
  // 1000 values, not 1000: the rank is ceil(0.999 * 1000)) is 999 in [996, 999].
  EXPECT_EQ(h.value_at_percentile(50), 501u);
  EXPECT_EQ(h.value_at_percentile(99), 991u);
  EXPECT_EQ(h.value_at_percentile(99.9), 999u);
  EXPECT_EQ(h.value_at_percentile(100), 1000u);
  EXPECT_EQ(h.max(), 1000u);
  EXPECT_EQ(h.min(), 1u);
}

TEST(LoadHistogram, BucketsCoverTheirValuesWithinThePrecision) {
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 129ull, 255ull, 256ull, 1000ull, 12345ull, 999999ull, 1ull << 39,
                     (1ull << 40) - 1}) {
    const size_t i = latency_histogram::index_of(v);
    const uint64_t lo = latency_histogram::lowest_equivalent(i);
    const uint64_t hi = latency_histogram::highest_equivalent(i);
    EXPECT_LE(lo, v) << v;
    EXPECT_GE(hi, v) << v;
    EXPECT_LE(hi - lo, v / latency_histogram::sub_bucket_count) << v;  // width <= 1/128 of the value
    if (i > 0) EXPECT_EQ(latency_histogram::highest_equivalent(i - 1) + 1, lo) << v;  // buckets are contiguous
  }
}

TEST(LoadHistogram, ValuesBeyondTheRangeKeepAnExactMax) {
  latency_histogram h;
  h.record(10);
  h.record(uint64_t{1} << 50);
  EXPECT_EQ(h.value_at_percentile(50), 10u);
  EXPECT_EQ(h.value_at_percentile(100), uint64_t{1} << 50);
  EXPECT_EQ(h.max(), uint64_t{1} << 50);
}

TEST(LoadHistogram, MergeEqualsRecordingEverythingInOne) {
  latency_histogram a, b, all;
  for (uint64_t v = 0; v < 5000; v += 7) {
    (v % 2 ? a : b).record(v, 3);
    all.record(v, 3);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double p : {0.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) EXPECT_EQ(a.value_at_percentile(p), all.value_at_percentile(p));
}

TEST(LoadHistogram, WeightedCountsShiftThePercentiles) {
  latency_histogram h;
  h.record(5, 990);   // 99% of the counts
  h.record(100, 9);
  h.record(120, 1);   // the last 0.1%
  EXPECT_EQ(h.value_at_percentile(99), 5u);
  EXPECT_EQ(h.value_at_percentile(99.5), 100u);
  EXPECT_EQ(h.value_at_percentile(99.9), 100u);
  EXPECT_EQ(h.value_at_percentile(99.95), 120u);
}

}  // namespace
}  // namespace sluice::bench
