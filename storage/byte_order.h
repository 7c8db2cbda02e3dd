#pragma once
// Big-endian (network order) loads and stores, as Kafka writes every fixed-width field on disk and wire.
#include <cstdint>
#include <cstring>

namespace sluice::storage::detail {

template <typename T>
inline T load_be(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<U>((v << 8) | p[i]);
  return static_cast<T>(v);
}

template <typename T>
inline void store_be(uint8_t* p, T value) {
  using U = std::make_unsigned_t<T>;
  U v = static_cast<U>(value);
  for (size_t i = sizeof(T); i-- > 0;) {
    p[i] = static_cast<uint8_t>(v & 0xff);
    v = static_cast<U>(v >> 8);
  }
}

}  // namespace sluice::storage::detail
