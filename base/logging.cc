#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace sluice::log {

void init(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("sluice");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %^%l%$ %v");
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
}

}  // namespace sluice::log
