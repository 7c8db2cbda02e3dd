// Commands of issue #19 not written yet: they say so and exit 2.
#include "cli/commands.h"

namespace sluice::cli {

namespace {
[[noreturn]] void pending(const char* name) { usage_error(std::string(name) + " is not implemented yet"); }
}  // namespace

int consume_group(context&, const std::string&, const std::string&, const std::string&, int64_t, bool, const std::string&) {
  pending("consume --group");
}
int group_list(context&, const args_t&) { pending("group list"); }
int group_describe(context&, const args_t&) { pending("group describe"); }
int group_reset_offsets(context&, const args_t&) { pending("group reset-offsets"); }
int group_delete(context&, const args_t&) { pending("group delete"); }

}  // namespace sluice::cli
