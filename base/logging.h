#pragma once
// Logging: one process-wide logger on stderr with timestamps. spdlog writes the lines, but only
// logging.cc includes it; callers format with fmt (header-only), so no shared library is loaded for
// either at start-up (README: start-up time) and the rest of the code compiles against fmt alone.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace sluice::log {

/// Severity, in Kafka's log4j order.
enum class level : int { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 };

/// Sets up the process logger on stderr with timestamps. `level` is one of trace, debug, info, warn,
/// error, off (Kafka's log4j levels, lower-cased); unknown names fall back to info. Before `init`,
/// messages of level info and above go to stderr without colours.
void init(const std::string& level);

/// Flushes and releases the logger (end of main).
void shutdown();

/// True when messages of `l` are written (one relaxed atomic load).
bool enabled(level l) noexcept;

/// Writes one already formatted message.
void write(level l, std::string_view message);

namespace detail {
template <class... Args>
void emit(level l, fmt::format_string<Args...> format, Args&&... args) {
  if (!enabled(l)) return;
  write(l, fmt::vformat(format, fmt::make_format_args(args...)));
}
}  // namespace detail

template <class... Args>
void trace(fmt::format_string<Args...> format, Args&&... args) {
  detail::emit(level::trace, format, std::forward<Args>(args)...);
}
template <class... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  detail::emit(level::debug, format, std::forward<Args>(args)...);
}
template <class... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  detail::emit(level::info, format, std::forward<Args>(args)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  detail::emit(level::warn, format, std::forward<Args>(args)...);
}
template <class... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  detail::emit(level::error, format, std::forward<Args>(args)...);
}

}  // namespace sluice::log
