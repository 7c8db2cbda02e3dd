#pragma once
// latency_histogram: a log-linear histogram of non-negative integer values (the load generator records
// microseconds), in the shape of HdrHistogram: values below 2^precision_bits are counted exactly; above, each
// power-of-two range [2^m, 2^(m+1)) is split into 2^precision_bits equal sub-buckets, so a reported value is
// at most 1/2^precision_bits (0.78% with the 7 bits used here) above the recorded one. Memory is fixed:
// (max_shift + 2) * 128 counters of 8 bytes (35 KiB), whatever is recorded.
//
// Not thread-safe: one histogram per thread, merged at the end (merge()).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::bench {

class latency_histogram {
 public:
  /// 7 bits: 128 sub-buckets per power of two (relative error < 0.79%).
  static constexpr int precision_bits = 7;
  static constexpr uint64_t sub_bucket_count = uint64_t{1} << precision_bits;
  /// Values up to 2^(precision_bits + max_shift + 1) - 1 = 2^40 - 1 (12.7 days in microseconds) keep their
  /// precision; larger ones are counted in the last bucket (max() stays exact).
  static constexpr int max_shift = 32;

  latency_histogram();

  /// Counts `value` `count` times.
  void record(uint64_t value, uint64_t count = 1);
  /// Adds every count of `other` (same layout by construction).
  void merge(const latency_histogram& other);
  void clear();

  uint64_t count() const { return total_; }
  /// Exact smallest and largest recorded values; 0 when empty.
  uint64_t min() const { return total_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  /// Mean of the recorded values (exact: the sum is kept); 0 when empty.
  double mean() const { return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0.0; }

  /// The value at `percentile` (0..100): the highest value equivalent to the bucket holding the recorded value
  /// of rank ceil(percentile / 100 * count) (rank 1 for percentile 0), clamped to max(). Values below
  /// 2^precision_bits come back exactly. 0 when empty. percentile > 100 is treated as 100.
  uint64_t value_at_percentile(double percentile) const;

  /// Bucket index of `value`, and the lowest / highest values sharing that bucket (for tests).
  static size_t index_of(uint64_t value);
  static uint64_t lowest_equivalent(size_t index);
  static uint64_t highest_equivalent(size_t index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  // Sum of values for the mean; wraps only beyond 1.8e19 (5.8e5 years of microseconds), ignored.
  uint64_t sum_ = 0;
};

}  // namespace sluice::bench
