#pragma once
// The Java client's default partitioning (KIP-794, BuiltInPartitioner): a keyed record goes to
// (murmur2(key) & 0x7fffffff) % partitions (base/murmur2.h); keyless records stick to one partition, picked at
// random, until `batch_bytes` (the producer's batch.size, 16384 by default) of records went there, then to
// another one (a different one when there are several), so each batch fills a single partition.
#include <cstdint>
#include <random>
#include <string_view>

#include "base/murmur2.h"

namespace sluice::cli {

class sticky_partitioner {
 public:
  sticky_partitioner(int32_t partitions, int64_t batch_bytes, uint64_t seed)
      : partitions_(partitions), batch_bytes_(batch_bytes), rng_(seed) {}

  /// The partition of a keyed record (stateless).
  int32_t for_key(std::string_view key) const { return sluice::partition_for_key(key, partitions_); }

  /// The partition of the next keyless record: the sticky one, switched once batch_bytes went to it.
  int32_t next_keyless() {
    if (current_ < 0 || produced_ >= batch_bytes_) switch_partition();
    return current_;
  }
  /// After next_keyless(): the record took `record_bytes` in its batch (BuiltInPartitioner.updatePartitionInfo).
  void account_keyless(int64_t record_bytes) { produced_ += record_bytes; }

 private:
  void switch_partition() {
    if (partitions_ <= 1) {
      current_ = 0;
    } else if (current_ < 0) {
      current_ = std::uniform_int_distribution<int32_t>(0, partitions_ - 1)(rng_);
    } else {  // any other partition, uniformly
      int32_t r = std::uniform_int_distribution<int32_t>(0, partitions_ - 2)(rng_);
      current_ = r >= current_ ? r + 1 : r;
    }
    produced_ = 0;
  }

  int32_t partitions_;
  int64_t batch_bytes_;
  std::mt19937_64 rng_;
  int32_t current_ = -1;
  int64_t produced_ = 0;
};

}  // namespace sluice::cli
