#pragma once
// The `sluice` command-line client (cli/README.md): `sluice [--brokers H:P,...] [--json] <command> ...`.
// broker/main.cc hands argv here when is_cli_invocation() says the first argument is a CLI command or a CLI
// global option; everything else stays the broker's.
#include <string_view>

namespace sluice::cli {

/// True when argv[1] is a CLI command (topic, produce, consume, group, cluster) or --brokers/-b/--json.
bool is_cli_invocation(int argc, char** argv);

/// Runs the CLI; returns the process exit code (cli/failure.h: 0 ok, 1 Kafka error, 2 usage, 3 cannot connect).
/// `version_line` is what --version prints (the broker's "sluice <version> (revision <rev>)").
int run_cli(int argc, char** argv, std::string_view version_line);

}  // namespace sluice::cli
