#pragma once
// The CLI's commands: each takes the context and the arguments after its name (its options and
// positionals) and returns the exit code, or throws failure (cli/failure.h).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/context.h"

namespace sluice::cli {

using args_t = std::vector<std::string>;

int cluster_info(context& ctx, const args_t& args);
/// health_command.cc: one GET of a broker's HTTP /readyz (container health checks).
int health(context& ctx, const args_t& args);

int topic_create(context& ctx, const args_t& args);
int topic_list(context& ctx, const args_t& args);
int topic_describe(context& ctx, const args_t& args);
int topic_delete(context& ctx, const args_t& args);
int topic_alter_config(context& ctx, const args_t& args);
int topic_add_partitions(context& ctx, const args_t& args);

int produce(context& ctx, const args_t& args);
int consume(context& ctx, const args_t& args);
/// consume --group (group_consumer.cc): `from` is where partitions without a committed offset start.
int consume_group(context& ctx, const std::string& topic, const std::string& group, const std::string& from,
                  int64_t num, bool exit_at_end, const std::string& format);
/// The offset of each partition for a --from value (beginning, end, OFFSET, @TIMESTAMP_MS), consume_command.cc.
std::map<int32_t, int64_t> resolve_start(cluster& kafka, const topic_info& topic, const std::vector<int32_t>& partitions,
                                         const std::string& from);
struct consumed_record;
/// Prints one record as --json or --format says.
void print_record(context& ctx, const consumed_record& r, const std::string& format);

int group_list(context& ctx, const args_t& args);
int group_describe(context& ctx, const args_t& args);
int group_reset_offsets(context& ctx, const args_t& args);
int group_delete(context& ctx, const args_t& args);

/// security_commands.cc: ACLs (KIP-140) and SCRAM users (KIP-554).
int acl_list(context& ctx, const args_t& args);
int acl_create(context& ctx, const args_t& args);
int acl_delete(context& ctx, const args_t& args);
int user_list(context& ctx, const args_t& args);
int user_create(context& ctx, const args_t& args);
int user_delete(context& ctx, const args_t& args);

}  // namespace sluice::cli
