// sluice: a Kafka-protocol broker. Usage: sluice [server.properties] [--config FILE] [--override key=value]...
//         sluice --version | --help
//         sluice [--brokers H:P] <topic|produce|consume|group|cluster> ...   (the CLI, cli/README.md)
#include <boost/program_options.hpp>
#include <csignal>
#include <sys/resource.h>
#include <unistd.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/logging.h"
#include "broker/broker.h"
#include "broker/build_version.h"
#include "broker/config.h"
#include "cli/cli.h"

namespace po = boost::program_options;
using namespace sluice;

int main(int argc, char** argv) {
  // A CLI command (or a CLI global option) first: the command-line client, not the broker.
  if (cli::is_cli_invocation(argc, argv))
    return cli::run_cli(argc, argv,
                        "sluice " + std::string(broker::build_version()) + " (revision " + std::string(broker::build_revision()) + ")");
  po::options_description options("Options");
  options.add_options()
      ("help,h", "print this help")
      ("version", "print the version and git revision, then exit")
      ("config,c", po::value<std::string>(), "server.properties file with Kafka's broker keys")
      ("config-env", "also read keys from KAFKA_CFG_* / SLUICE_CFG_* environment variables (KAFKA_CFG_LOG_DIRS -> "
                     "log.dirs), over the file and under --override")
      ("override", po::value<std::vector<std::string>>()->composing(), "key=value, overrides the file (repeatable)");
  po::positional_options_description positional;
  positional.add("config", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "sluice: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "Usage: sluice [server.properties] [--config FILE] [--override key=value]...\n" << options
              << "\nThe command-line client: sluice [--brokers H:P] <topic|produce|consume|group|cluster> ... "
                 "(sluice topic --help, ...)\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "sluice " << broker::build_version() << " (revision " << broker::build_revision() << ")\n";
    return 0;
  }

  std::map<std::string, std::string> file_values;
  if (vm.count("config")) {
    const auto path = vm["config"].as<std::string>();
    std::ifstream in(path);
    if (!in) {
      std::cerr << "sluice: cannot read config file " << path << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = broker::parse_properties(text.str());
    if (!parsed) {
      std::cerr << "sluice: " << path << ": " << parsed.err().message << "\n";
      return 1;
    }
    file_values = std::move(*parsed);
  }
  if (vm.count("config-env"))
    for (auto& [k, v] : broker::config_from_environment(environ)) file_values[k] = std::move(v);
  std::vector<std::pair<std::string, std::string>> overrides;
  if (vm.count("override")) {
    for (const auto& kv : vm["override"].as<std::vector<std::string>>()) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "sluice: --override takes key=value, got '" << kv << "'\n";
        return 1;
      }
      overrides.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  auto config = broker::make_config(file_values, overrides);
  if (!config) {
    std::cerr << "sluice: invalid configuration: " << config.err().message << "\n";
    return 1;
  }
  // sendfile(2) to a socket the client closed raises SIGPIPE; the error is handled where it is returned.
  std::signal(SIGPIPE, SIG_IGN);
  log::init(config->log_level);
  log::info("sluice {} (revision {})", broker::build_version(), broker::build_revision());
  // Each partition holds a file open per segment (its .log), each connection a socket: raise the soft limit on
  // open files to the hard one, as the JVM does for Kafka, so the limit is what the administrator set, not a login default.
  if (struct rlimit rl; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    const rlim_t before = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0)
      log::info("open files limit raised from {} to {}", static_cast<uint64_t>(before), static_cast<uint64_t>(rl.rlim_cur));
  }
  for (const auto& key : config->unknown_keys) log::warn("unknown config key '{}' ignored", key);

  // Never deleted: see broker's class comment.
  auto* b = new broker::broker(std::move(*config));
  if (auto r = b->start(); !r) {
    log::error("start failed: {}", r.err().message);
    log::shutdown();
    return 1;
  }
  b->wait();
  b->close();
  log::info("stopped");
  log::shutdown();
  return 0;
}
