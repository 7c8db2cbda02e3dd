#include "cli/cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/commands.h"

namespace sluice::cli {

namespace {

using handler = std::function<int(context&, const args_t&)>;

struct verb {
  const char* name;
  const char* summary;
  handler run;
};

struct command {
  const char* name;
  const char* summary;
  std::vector<verb> verbs;  // empty: the command itself is a leaf
  handler run;              // leaves only
};

const std::vector<command>& commands() {
  static const std::vector<command> all = {
      {"cluster", "what the cluster is: id, controller, brokers", {{"info", "cluster id, controller and brokers", cluster_info}}, {}},
      {"topic",
       "create, list, describe, delete topics; alter their configs; add partitions",
       {{"create", "create topics", topic_create},
        {"list", "list topics with partition and replica counts", topic_list},
        {"describe", "a topic's partitions (leader, replicas, ISR, offsets) and configs", topic_describe},
        {"delete", "delete topics", topic_delete},
        {"alter-config", "set, delete, append to or subtract from topic configs", topic_alter_config},
        {"add-partitions", "add partitions to topics", topic_add_partitions}},
       {}},
      {"produce", "send one record per line of stdin", {}, produce},
      {"health", "ask a broker's HTTP readiness probe (/readyz); exit 0 when ready", {}, health},
      {"consume", "print records of a topic (partitions or a consumer group)", {}, consume},
      {"group",
       "list, describe, reset offsets of, delete consumer groups",
       {{"list", "list consumer groups", group_list},
        {"describe", "a group's state, members, committed offsets and lag", group_describe},
        {"reset-offsets", "set a group's committed offsets (the group must be empty)", group_reset_offsets},
        {"delete", "delete consumer groups", group_delete}},
       {}},
      {"acl",
       "list, create, delete ACLs (the authorizer's rules)",
       {{"list", "the ACLs that match a filter (every ACL without one)", acl_list},
        {"create", "allow or deny principals operations on resources", acl_create},
        {"delete", "remove the ACLs that match a filter", acl_delete}},
       {}},
      {"user",
       "list, create, delete SCRAM users",
       {{"list", "users with their SCRAM mechanisms and iterations", user_list},
        {"create", "create or update a user's SCRAM credential", user_create},
        {"delete", "delete a user's SCRAM credentials", user_delete}},
       {}},
  };
  return all;
}

const char* global_help =
    "Global options (anywhere on the line):\n"
    "  -b, --brokers H:P[,H:P...]  brokers to bootstrap from (default $SLUICE_BROKERS, then 127.0.0.1:9092)\n"
    "  --json                      machine-readable output: one JSON document (consume: one per record)\n"
    "  --timeout-ms MS             connect and request timeout (default 10000)\n"
    "  -X key=value                a client property: security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),\n"
    "                              sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), sasl.username, sasl.password,\n"
    "                              ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password,\n"
    "                              enable.ssl.certificate.verification, ssl.endpoint.identification.algorithm\n"
    "  --command-config FILE       the same properties from a key=value file (as Kafka's tools take)\n"
    "  -h, --help                  help of the command it follows\n"
    "  --version                   print the version and exit\n"
    "Exit codes: 0 ok, 1 Kafka error (named in the message), 2 usage error, 3 cannot connect or timed out.\n";

void top_help(std::ostream& out) {
  out << "Usage: sluice [global options] <command> [<subcommand>] [options]\n"
         "       sluice [server.properties] [--config FILE] [--override key=value]...   (the broker)\n\n"
         "Commands:\n";
  for (const auto& c : commands()) out << fmt::format("  {:<10} {}\n", c.name, c.summary);
  out << "\nRun 'sluice <command> --help' for a command's subcommands and options.\n\n" << global_help;
}

void command_help(std::ostream& out, const command& c) {
  out << fmt::format("Usage: sluice [global options] {} <subcommand> [options]\n\n{}\n\nSubcommands:\n", c.name, c.summary);
  for (const auto& v : c.verbs) out << fmt::format("  {:<15} {}\n", v.name, v.summary);
  out << fmt::format("\nRun 'sluice {} <subcommand> --help' for its options.\n\n", c.name) << global_help;
}

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

}  // namespace

bool is_cli_invocation(int argc, char** argv) {
  if (argc < 2) return false;
  std::string_view a = argv[1];
  if (a == "--brokers" || a.starts_with("--brokers=") || a == "-b" || a == "--json" || a.starts_with("--timeout-ms") ||
      a.starts_with("-X") || a.starts_with("--command-config"))
    return true;
  for (const auto& c : commands())
    if (a == c.name) return true;
  return false;
}

cluster& context::kafka() {
  if (!cluster_)
    cluster_ = std::make_unique<cluster>(parse_endpoints(options_.brokers), options_.timeout, "sluice-cli",
                                         std::make_shared<const client_security>(options_.security));
  return *cluster_;
}

int run_cli(int argc, char** argv, std::string_view version_line) {
  global_options g;
  if (const char* env = std::getenv("SLUICE_BROKERS"); env && *env) g.brokers = env;
  bool version = false;
  bool brokers_given = false;
  args_t rest;
  try {
    // Global options are taken from anywhere before a "--"; everything else keeps its order.
    bool after_dashes = false;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const std::string& name) -> std::string {
        if (a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
        if (i + 1 >= argc) usage_error(name + " needs a value");
        return argv[++i];
      };
      if (after_dashes) {
        rest.push_back(a);
      } else if (a == "--") {
        after_dashes = true;
        rest.push_back(a);
      } else if (a == "--brokers" || a.starts_with("--brokers=")) {
        g.brokers = value("--brokers");
        brokers_given = true;
      } else if (a == "-b") {
        g.brokers = value("-b");
        brokers_given = true;
      } else if (a == "--json") {
        g.json = true;
      } else if (a == "--timeout-ms" || a.starts_with("--timeout-ms=")) {
        std::string v = value("--timeout-ms");
        char* end = nullptr;
        long ms = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || ms <= 0) usage_error("--timeout-ms takes a positive number of milliseconds, got '" + v + "'");
        g.timeout = std::chrono::milliseconds(ms);
      } else if (a.starts_with("-X")) {
        const auto [key, val] = split_key_value(a == "-X" ? value("-X") : a.substr(2), "-X");
        g.security.set(key, val);
      } else if (a == "--command-config" || a.starts_with("--command-config=")) {
        const std::string path = value("--command-config");
        std::ifstream in(path);
        if (!in) usage_error("--command-config: cannot read " + path);
        std::string line;
        while (std::getline(in, line)) {
          while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
          size_t b = line.find_first_not_of(" \t");
          if (b == std::string::npos || line[b] == '#' || line[b] == '!') continue;
          const auto eq = line.find('=', b);
          if (eq == std::string::npos) usage_error("--command-config " + path + ": a line must be key=value: '" + line + "'");
          auto key = line.substr(b, eq - b);
          while (!key.empty() && key.back() == ' ') key.pop_back();
          auto val = line.substr(eq + 1);
          val.erase(0, std::min(val.find_first_not_of(' '), val.size()));
          if (key == "bootstrap.servers") {
            if (!brokers_given) g.brokers = val;  // --brokers, where given, wins
          } else if (!g.security.set_java(key, val)) {
            std::cerr << "sluice: --command-config " << path << ": " << key << " is not used by this CLI, ignored\n";
          }
        }
      } else if (a == "--version") {
        version = true;
      } else {
        rest.push_back(a);
      }
    }
  } catch (const failure& f) {
    std::cerr << "sluice: " << f.what() << "\n";
    return static_cast<int>(f.code());
  }
  if (version) {
    std::cout << version_line << "\n";
    return 0;
  }
  context ctx(g, std::cout, std::cerr);
  try {
    if (rest.empty() || is_help(rest[0])) {
      top_help(rest.empty() ? std::cerr : std::cout);
      return rest.empty() ? static_cast<int>(exit_code::usage) : 0;
    }
    const command* c = nullptr;
    for (const auto& x : commands())
      if (rest[0] == x.name) c = &x;
    if (!c) usage_error(fmt::format("unknown command '{}' (see 'sluice --brokers H:P --help')", rest[0]));
    if (c->verbs.empty()) return c->run(ctx, args_t(rest.begin() + 1, rest.end()));
    if (rest.size() < 2 || is_help(rest[1])) {
      command_help(rest.size() < 2 ? std::cerr : std::cout, *c);
      return rest.size() < 2 ? static_cast<int>(exit_code::usage) : 0;
    }
    for (const auto& v : c->verbs)
      if (rest[1] == v.name) return v.run(ctx, args_t(rest.begin() + 2, rest.end()));
    usage_error(fmt::format("unknown subcommand '{} {}' (see 'sluice {} --help')", c->name, rest[1], c->name));
  } catch (const failure& f) {
    std::cout.flush();
    std::cerr << "sluice: " << f.what() << "\n";
    return static_cast<int>(f.code());
  }
}

// ---- context.h helpers ------------------------------------------------------------------------------------------

bool parse_args(context& ctx, const std::vector<std::string>& args, const std::string& path, const std::string& usage,
                const std::string& summary, po::options_description& options, const char* names, po::variables_map& vm) {
  po::options_description hidden;
  hidden.add_options()(names, po::value<std::vector<std::string>>(), "names");
  po::positional_options_description positional;
  positional.add(names, -1);
  return parse_args(ctx, args, path, usage, summary, options, hidden, positional, vm);
}

bool parse_args(context& ctx, const std::vector<std::string>& args, const std::string& path, const std::string& usage,
                const std::string& summary, po::options_description& options, const po::options_description& hidden,
                const po::positional_options_description& positional, po::variables_map& vm) {
  options.add_options()("help,h", "print this help");
  po::options_description all;
  all.add(options).add(hidden);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      ctx.out << "Usage: sluice [global options] " << usage << "\n\n" << summary << "\n\n" << options << "\n" << global_help;
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(fmt::format("{}: {} (see 'sluice {} --help')", path, e.what(), path));
  }
  return true;
}

std::pair<std::string, std::string> split_key_value(const std::string& kv, const std::string& option) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) usage_error(fmt::format("{} takes key=value, got '{}'", option, kv));
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

void table::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

void print_json(std::ostream& out, const boost::json::value& v) { out << boost::json::serialize(v) << "\n"; }

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

boost::json::array json_ids(const std::vector<int32_t>& ids) {
  boost::json::array a;
  for (int32_t id : ids) a.push_back(id);
  return a;
}

}  // namespace sluice::cli
