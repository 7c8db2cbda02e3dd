#pragma once
// protocol::uuid: Kafka's 128-bit UUID (topic ids, directory ids). All-zero is Kafka's "ZERO_UUID",
// used as the null / unset value.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::protocol {

struct uuid {
  std::array<uint8_t, 16> bytes{};

  bool is_zero() const {
    for (uint8_t b : bytes)
      if (b != 0) return false;
    return true;
  }
  friend bool operator==(const uuid&, const uuid&) = default;
  friend auto operator<=>(const uuid&, const uuid&) = default;  // byte order, for ordered containers

  /// Kafka's text form: URL-safe base64 of the 16 bytes without padding (22 characters).
  std::string to_string() const;
  /// Parses the 22-character form of to_string(); nullopt on malformed input.
  static std::optional<uuid> from_string(std::string_view text);
};

}  // namespace sluice::protocol
