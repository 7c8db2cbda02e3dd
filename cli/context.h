#pragma once
// What every CLI command gets: the global options, the cluster (connected on first use), the output
// streams, and small helpers for option parsing (boost::program_options), tables and JSON output.
#include <boost/json.hpp>
#include <boost/program_options.hpp>
#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/cluster.h"

namespace sluice::cli {

namespace po = boost::program_options;

struct global_options {
  std::string brokers = "127.0.0.1:9092";  // --brokers, else $SLUICE_BROKERS, else this
  bool json = false;                       // --json: machine-readable output
  std::chrono::milliseconds timeout{10000};  // --timeout-ms: connect and request timeout
  client_security security;                  // -X key=value, --command-config FILE
};

class context {
 public:
  context(global_options options, std::ostream& out, std::ostream& err)
      : out(out), err(err), options_(std::move(options)) {}
  const global_options& options() const { return options_; }
  bool json() const { return options_.json; }
  /// The cluster of --brokers; the first call parses the list (usage error when malformed) and connects lazily.
  cluster& kafka();

  std::ostream& out;
  std::ostream& err;

 private:
  global_options options_;
  std::unique_ptr<cluster> cluster_;
};

/// One command's parsed arguments. `options` are listed by --help, `hidden` (the positionals) are not. It adds --help itself; when --help is given it prints
/// "Usage: sluice <usage>" and the options to `out` and returns false (the command then returns 0).
/// Unknown options, missing or malformed values are usage errors naming `sluice <path> --help`.
bool parse_args(context& ctx, const std::vector<std::string>& args, const std::string& path, const std::string& usage,
                const std::string& summary, po::options_description& options, const po::options_description& hidden,
                const po::positional_options_description& positional, po::variables_map& vm);
/// The same for a command whose positional arguments are names (NAME...): they land in vm[`names`] as a
/// std::vector<std::string>.
bool parse_args(context& ctx, const std::vector<std::string>& args, const std::string& path, const std::string& usage,
                const std::string& summary, po::options_description& options, const char* names, po::variables_map& vm);

/// Splits "k=v" (the first '='); a missing '=' or empty key is a usage error naming `option`.
std::pair<std::string, std::string> split_key_value(const std::string& kv, const std::string& option);

/// An aligned text table: columns separated by two spaces, a header line in capitals.
class table {
 public:
  explicit table(std::vector<std::string> headers) : rows_{std::move(headers)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// Writes `v` as one line of JSON.
void print_json(std::ostream& out, const boost::json::value& v);

/// "1,2,3" of a list of broker ids.
std::string join_ids(const std::vector<int32_t>& ids);
boost::json::array json_ids(const std::vector<int32_t>& ids);

}  // namespace sluice::cli
