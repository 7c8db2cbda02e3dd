// sluice_diff: sends the same request sequences to Apache Kafka and to Sluice over Sluice's generated
// codec, normalises what legitimately differs and prints every field that differs (README.md).
//
//   sluice_diff --kafka HOST:PORT --sluice HOST:PORT [--scenarios DIR | --scenario FILE]... [--filter S]
//               [--known FILE] [--verbose] [--random --seed S --seeds K --count N --time-limit SEC]
//
// Last line: "diff: N scenarios, N unexplained differences". Exit 0 when there is no unexplained
// difference, 1 otherwise, 2 on a usage error or when a broker cannot be reached.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "compat/diff/random_mode.h"
#include "compat/diff/scenario.h"
#include "protocol/api_key.h"

using namespace sluice::diff;

namespace {

int usage() {
  std::cerr << "usage: sluice_diff --kafka HOST:PORT --sluice HOST:PORT [--scenarios DIR] [--scenario FILE]\n"
               "                   [--filter TEXT] [--known FILE] [--verbose] [--timeout-ms N]\n"
               "                   [--random --seed S --seeds K --count N --time-limit SEC [--stop-on-first]] [--trace]\n";
  return 2;
}

/// Waits (bounded) until the coordinators answer on both brokers: Kafka creates __consumer_offsets on first
/// use and answers COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR while its 50 partitions load, and
/// COORDINATOR_LOAD_IN_PROGRESS to InitProducerId at first. 64 group ids cover every partition.
void warm_up_coordinators(runner& run) {
  boost::json::array keys;
  for (int i = 0; i < 64; ++i) keys.push_back(boost::json::string("sluice-diff-warmup-" + std::to_string(i)));
  for (broker_client* b : {&run.kafka(), &run.sluice()}) {
    bool ready = false;
    for (int i = 0; i < 240 && !ready; ++i) {
      build_context ctx;
      exchange_result r = b->call(static_cast<int16_t>(sluice::protocol::api_key::find_coordinator), 4,
                                  boost::json::object{{"key_type", 0}, {"coordinator_keys", keys}}, ctx, 5000);
      ready = r.how == outcome::response && r.decode_error.empty();
      if (ready)
        for (const auto& c : r.body.at("coordinators").as_array()) ready = ready && c.at("error_code") == "NONE";
      if (ready) {
        exchange_result d = b->call(static_cast<int16_t>(sluice::protocol::api_key::describe_groups), 5,
                                    boost::json::object{{"groups", keys}}, ctx, 5000);
        ready = d.how == outcome::response && d.decode_error.empty();
        if (ready)
          for (const auto& g : d.body.at("groups").as_array()) ready = ready && g.at("error_code") == "NONE";
      }
      if (ready) {
        exchange_result p = b->call(static_cast<int16_t>(sluice::protocol::api_key::init_producer_id), 4,
                                    boost::json::object{{"transactional_id", nullptr}, {"transaction_timeout_ms", 60000},
                                                        {"producer_id", -1}, {"producer_epoch", -1}}, ctx, 5000);
        ready = p.how == outcome::response && p.decode_error.empty() && p.body.at("error_code") == "NONE";
      }
      if (ready) {
        // Transaction coordinators: __transaction_state created and every partition loaded (an unknown id then
        // answers TRANSACTIONAL_ID_NOT_FOUND rather than NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS).
        exchange_result f = b->call(static_cast<int16_t>(sluice::protocol::api_key::find_coordinator), 4,
                                    boost::json::object{{"key_type", 1}, {"coordinator_keys", keys}}, ctx, 5000);
        ready = f.how == outcome::response && f.decode_error.empty();
        if (ready)
          for (const auto& c : f.body.at("coordinators").as_array()) ready = ready && c.at("error_code") == "NONE";
      }
      if (ready) {
        exchange_result d = b->call(static_cast<int16_t>(sluice::protocol::api_key::describe_transactions), 0,
                                    boost::json::object{{"transactional_ids", keys}}, ctx, 5000);
        ready = d.how == outcome::response && d.decode_error.empty();
        if (ready)
          for (const auto& t : d.body.at("transaction_states").as_array())
            ready = ready && t.at("error_code") == "TRANSACTIONAL_ID_NOT_FOUND";
      }
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (!ready) std::cout << "warning: " << b->name() << ": coordinators not ready after 60 s\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string kafka_addr, sluice_addr, known_file, filter;
  std::vector<std::string> scenario_files;
  bool random = false, verbose = false;
  random_options ropt;
  int timeout_ms = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--kafka") kafka_addr = next();
      else if (a == "--sluice") sluice_addr = next();
      else if (a == "--known") known_file = next();
      else if (a == "--filter") filter = next();
      else if (a == "--scenario") scenario_files.push_back(next());
      else if (a == "--scenarios") {
        const std::string dir = next();
        std::vector<std::string> found;
        for (const auto& e : std::filesystem::directory_iterator(dir))
          if (e.path().extension() == ".json") found.push_back(e.path().string());
        std::sort(found.begin(), found.end());
        scenario_files.insert(scenario_files.end(), found.begin(), found.end());
      } else if (a == "--verbose") verbose = true;
      else if (a == "--timeout-ms") timeout_ms = std::stoi(next());
      else if (a == "--random") random = true;
      else if (a == "--seed") ropt.seed = std::stoull(next());
      else if (a == "--seeds") ropt.seeds = std::stoll(next());
      else if (a == "--count") ropt.count = std::stoll(next());
      else if (a == "--time-limit") ropt.time_limit_s = std::stod(next());
      else if (a == "--stop-on-first") ropt.stop_on_first = true;
      else if (a == "--trace") ropt.trace = true;
      else if (a == "--max-replays") ropt.max_replays = std::stoi(next());
      else return usage();
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return usage();
    }
  }
  if (kafka_addr.empty() || sluice_addr.empty() || (scenario_files.empty() && !random)) return usage();
  broker_client kafka("kafka", kafka_addr), sluice("sluice", sluice_addr);
  std::string error;
  if (!kafka.discover(error) || !sluice.discover(error)) {
    std::cerr << "sluice_diff: ApiVersions failed: " << error << "\n";
    return 2;
  }
  const int64_t base_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
  runner run(kafka, sluice, known_file.empty() ? std::vector<known_difference>{} : load_known(known_file), base_ms);
  run.compute_common();
  std::cout << "apis both serve:";
  for (const auto& [k, r] : run.common())
    std::cout << " " << sluice::protocol::api_name(k) << " " << r.first << "-" << r.second;
  std::cout << "\nsluice advertises, kafka does not:";
  for (const auto& [k, r] : sluice.advertised())
    if (!kafka.advertised().contains(k)) std::cout << " " << sluice::protocol::api_name(k);
  std::cout << "\n";
  warm_up_coordinators(run);

  scenario_totals totals;
  scenario_options sopt{filter, verbose, ropt.trace, timeout_ms};
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : scenario_files) run_scenario_file(run, f, sopt, totals);
  if (!scenario_files.empty())
    std::cout << "scenarios: " << totals.runs << " runs, " << totals.requests << " compared requests, " << totals.known
              << " known differences, " << totals.errors << " errors, "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  int64_t unexplained = totals.unexplained;
  int64_t runs = totals.runs;
  if (random) {
    ropt.verbose = verbose;
    ropt.timeout_ms = std::min(timeout_ms, 3000);
    random_totals rt;
    const auto r0 = std::chrono::steady_clock::now();
    const bool alive = run_random(run, ropt, rt);
    std::cout << "random: seeds " << ropt.seed << ".." << (rt.seeds_done ? rt.last_seed : ropt.seed) << " ("
              << rt.seeds_done << " complete), " << rt.requests << " requests, " << rt.differing
              << " differing responses, " << rt.timing << " not reproduced on replay (timing), " << rt.sluice_lost
              << " lost by Sluice only, "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count() << " s"
              << (alive ? "" : ", SLUICE STOPPED ANSWERING") << "\n";
    unexplained += rt.unexplained;
    runs += rt.requests;
  }
  std::cout << "diff: " << runs << " scenarios, " << unexplained << " unexplained differences" << std::endl;
  return unexplained == 0 && totals.errors == 0 ? 0 : 1;
}
