#include "bench/load/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sluice::bench {
namespace {
constexpr size_t bucket_total = (latency_histogram::max_shift + 2) * latency_histogram::sub_bucket_count;
}

latency_histogram::latency_histogram() : counts_(bucket_total, 0) {}

// Index layout: [0, 128) holds values 0..127 exactly. A value v >= 128 with highest set bit m has
// shift = m - 7 and sub = (v >> shift) - 128 in [0, 128); its index is (shift + 1) * 128 + sub, so that
// index / 128 - 1 gives the shift back and the bucket covers [(128 + sub) << shift, ((129 + sub) << shift) - 1].
size_t latency_histogram::index_of(uint64_t value) {
  if (value < sub_bucket_count) return static_cast<size_t>(value);
  const int m = std::bit_width(value) - 1;
  int shift = m - precision_bits;
  if (shift > max_shift) return bucket_total - 1;
  const uint64_t sub = (value >> shift) - sub_bucket_count;
  return static_cast<size_t>((static_cast<uint64_t>(shift) + 1) * sub_bucket_count + sub);
}

uint64_t latency_histogram::lowest_equivalent(size_t index) {
  if (index < sub_bucket_count) return index;
  const uint64_t shift = index / sub_bucket_count - 1;
  const uint64_t sub = index % sub_bucket_count;
  return (sub_bucket_count + sub) << shift;
}

uint64_t latency_histogram::highest_equivalent(size_t index) {
  if (index < sub_bucket_count) return index;
  const uint64_t shift = index / sub_bucket_count - 1;
  return lowest_equivalent(index) + (uint64_t{1} << shift) - 1;
}

void latency_histogram::record(uint64_t value, uint64_t count) {
  if (count == 0) return;
  counts_[index_of(value)] += count;
  total_ += count;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  sum_ += value * count;
}

void latency_histogram::merge(const latency_histogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

void latency_histogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

uint64_t latency_histogram::value_at_percentile(double percentile) const {
  if (total_ == 0) return 0;
  // Rank of the wanted value, 1-based: the smallest rank r with r / count >= percentile / 100. The relative
  // slack absorbs binary rounding (99.9 * 1000 / 100 is 999.0000000000001 in doubles, which must be rank 999).
  const double exact = std::clamp(percentile, 0.0, 100.0) * static_cast<double>(total_) / 100.0;
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact - exact * 1e-12));
  rank = std::clamp<uint64_t>(rank, 1, total_);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    // The last bucket also holds the values beyond the tracked range: its only honest answer is max().
    if (seen >= rank) return i + 1 == counts_.size() ? max_ : std::min(highest_equivalent(i), max_);
  }
  return max_;
}

}  // namespace sluice::bench
