#pragma once
// Strong types for ids and offsets: an int64 offset cannot be passed where a partition index is expected.
#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace sluice {

/// A value of type T tagged so that two different tags do not convert into each other.
/// Construction is explicit; `.value()` gives the raw number back at the edges (codec, files).
template <typename T, typename Tag>
class strong_id {
 public:
  using value_type = T;
  constexpr strong_id() = default;
  constexpr explicit strong_id(T v) : value_(v) {}
  constexpr T value() const { return value_; }
  constexpr auto operator<=>(const strong_id&) const = default;

 private:
  T value_{};
};

template <typename T, typename Tag>
std::ostream& operator<<(std::ostream& os, strong_id<T, Tag> id) { return os << id.value(); }

/// Broker id (`broker.id`), -1 for none.
using broker_id = strong_id<int32_t, struct broker_id_tag>;
/// Partition index within a topic, 0-based.
using partition_index = strong_id<int32_t, struct partition_index_tag>;
/// Leader epoch of a partition (KIP-101), -1 for unknown.
using leader_epoch = strong_id<int32_t, struct leader_epoch_tag>;
/// Producer id (KIP-98), -1 for none.
using producer_id = strong_id<int64_t, struct producer_id_tag>;

}  // namespace sluice

template <typename T, typename Tag>
struct std::hash<sluice::strong_id<T, Tag>> {
  size_t operator()(sluice::strong_id<T, Tag> id) const noexcept { return std::hash<T>{}(id.value()); }
};
