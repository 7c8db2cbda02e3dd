#pragma once
// The Java client's default partitioner hash (Kafka's Utils.murmur2, MurmurHash2 with seed 0x9747b28c): the
// partition of a keyed record is `(murmur2(key) & 0x7fffffff) % partitions` (BuiltInPartitioner.partitionForKey).
// Header-only; used by the HTTP produce route and the CLI, which must pick the partitions the Java client picks.
#include <cstdint>
#include <string_view>

namespace sluice {

/// MurmurHash2 (32 bit) of `data` as Kafka computes it, returned as the Java int's bits.
inline int32_t murmur2(std::string_view data) {
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const uint32_t length = static_cast<uint32_t>(data.size());
  uint32_t h = 0x9747b28cu ^ length;
  const uint32_t blocks = length / 4;
  for (uint32_t i = 0; i < blocks; ++i) {
    const unsigned char* b = p + 4 * i;
    uint32_t k = uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const unsigned char* tail = p + 4 * blocks;
  switch (length % 4) {
    case 3:
      h ^= uint32_t{tail[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint32_t{tail[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint32_t{tail[0]};
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

/// The partition of a record with `key` among `partitions` (> 0), as the Java client's default partitioner.
inline int32_t partition_for_key(std::string_view key, int32_t partitions) {
  return static_cast<int32_t>((static_cast<uint32_t>(murmur2(key)) & 0x7fffffffu) % static_cast<uint32_t>(partitions));
}

}  // namespace sluice
