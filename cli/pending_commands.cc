// Commands of issue #19 not written yet: they say so and exit 2.
#include "cli/commands.h"

namespace sluice::cli {

namespace {
[[noreturn]] void pending(const char* name) { usage_error(std::string(name) + " is not implemented yet"); }
}  // namespace

int consume_group(context&, const std::string&, const std::string&, const std::string&, int64_t, bool, const std::string&) {
  pending("consume --group");
}

}  // namespace sluice::cli
