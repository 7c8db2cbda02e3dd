#pragma once
// Small helpers shared by the parts of zk_cluster (zk_session_manager, cluster_follower, zk_controller,
// zk_store, zk_cluster itself). Internal: not for use outside coordination/zk.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "coordination/cluster_view.h"

namespace sluice::coordination::zk::detail {

/// Wall-clock milliseconds since the Unix epoch: the "timestamp" fields Kafka writes into znodes.
inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A cluster_view error with its message.
inline error view_fail(view_errc e, const std::string& what) { return error{e, what}; }

/// Parses a whole decimal integer (no sign other than '-', no spaces); false for empty or trailing text.
inline bool parse_int(std::string_view text, int64_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

}  // namespace sluice::coordination::zk::detail
