#include "storage/errc.h"

namespace sluice::storage {

namespace {

class storage_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "storage"; }
  std::string message(int value) const override { return to_string(static_cast<errc>(value)); }
};

}  // namespace

const std::error_category& storage_category() noexcept {
  static const storage_error_category instance;
  return instance;
}

}  // namespace sluice::storage
