#pragma once
// The CLI's commands: each takes the context and the arguments after its name (its options and
// positionals) and returns the exit code, or throws failure (cli/failure.h).
#include <string>
#include <vector>

#include "cli/context.h"

namespace sluice::cli {

using args_t = std::vector<std::string>;

int cluster_info(context& ctx, const args_t& args);

int topic_create(context& ctx, const args_t& args);
int topic_list(context& ctx, const args_t& args);
int topic_describe(context& ctx, const args_t& args);
int topic_delete(context& ctx, const args_t& args);
int topic_alter_config(context& ctx, const args_t& args);
int topic_add_partitions(context& ctx, const args_t& args);

int produce(context& ctx, const args_t& args);
int consume(context& ctx, const args_t& args);

int group_list(context& ctx, const args_t& args);
int group_describe(context& ctx, const args_t& args);
int group_reset_offsets(context& ctx, const args_t& args);
int group_delete(context& ctx, const args_t& args);

}  // namespace sluice::cli
