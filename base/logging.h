#pragma once
// Logging through spdlog. One process-wide logger; components prefix their messages with their name.
#include <spdlog/spdlog.h>

namespace sluice::log {

/// Sets up the process logger on stderr with timestamps. `level` is one of trace, debug, info, warn,
/// error (Kafka's log4j levels, lower-cased); unknown names fall back to info.
void init(const std::string& level);

using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::trace;
using spdlog::warn;

}  // namespace sluice::log
