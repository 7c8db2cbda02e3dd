#include "broker/partition_errc.h"

#include <string>

namespace sluice::broker {

namespace {

class partition_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "partition"; }
  std::string message(int value) const override {
    switch (static_cast<partition_errc>(value)) {
      case partition_errc::not_leader: return "not_leader";
      case partition_errc::not_enough_replicas: return "not_enough_replicas";
      case partition_errc::unknown_leader_epoch: return "unknown_leader_epoch";
    }
    return "unknown";
  }
};

}  // namespace

const std::error_category& partition_category() noexcept {
  static const partition_error_category instance;
  return instance;
}

}  // namespace sluice::broker
