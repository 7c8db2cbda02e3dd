#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>

namespace sluice::log {
namespace {

std::atomic<int> current_level{static_cast<int>(level::info)};

spdlog::level::level_enum to_spdlog(level l) {
  switch (l) {
    case level::trace: return spdlog::level::trace;
    case level::debug: return spdlog::level::debug;
    case level::info: return spdlog::level::info;
    case level::warn: return spdlog::level::warn;
    case level::error: return spdlog::level::err;
    case level::off: return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

void init(const std::string& name) {
  auto logger = spdlog::stderr_color_mt("sluice");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %^%l%$ %v");
  level l = level::info;
  if (name == "trace") l = level::trace;
  else if (name == "debug") l = level::debug;
  else if (name == "warn" || name == "warning") l = level::warn;
  else if (name == "error" || name == "err") l = level::error;
  else if (name == "off") l = level::off;
  logger->set_level(to_spdlog(l));
  spdlog::set_default_logger(logger);
  current_level.store(static_cast<int>(l), std::memory_order_relaxed);
}

void shutdown() { spdlog::shutdown(); }

bool enabled(level l) noexcept { return static_cast<int>(l) >= current_level.load(std::memory_order_relaxed); }

void write(level l, std::string_view message) {
  spdlog::default_logger_raw()->log(to_spdlog(l), spdlog::string_view_t(message.data(), message.size()));
}

}  // namespace sluice::log
