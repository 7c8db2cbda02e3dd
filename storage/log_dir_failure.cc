#include "storage/log_dir_failure.h"

#include <memory>
#include <mutex>

namespace sluice::storage {
namespace {
std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const log_dir_failure_handler>& handler_slot() {
  static std::shared_ptr<const log_dir_failure_handler> h;
  return h;
}
}  // namespace

void set_log_dir_failure_handler(log_dir_failure_handler handler) {
  auto h = handler ? std::make_shared<const log_dir_failure_handler>(std::move(handler)) : nullptr;
  std::lock_guard lock(handler_mutex());
  handler_slot() = std::move(h);
}

void report_log_dir_failure(const std::filesystem::path& file, const std::string& reason) {
  std::shared_ptr<const log_dir_failure_handler> h;
  {
    std::lock_guard lock(handler_mutex());
    h = handler_slot();
  }
  if (h) (*h)(file, reason);
}

}  // namespace sluice::storage
