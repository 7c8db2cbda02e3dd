#pragma once
// scenario: runs the scenario files of compat/diff/scenarios/ (format: README.md "Scenario format")
// against both brokers through a runner, printing the differing fields of each step.
#include <cstdint>
#include <string>

#include "compat/diff/runner.h"

namespace sluice::diff {

struct scenario_totals {
  int64_t runs = 0;         // (scenario, version) pairs run
  int64_t unexplained = 0;  // differing fields not in known.txt
  int64_t known = 0;
  int64_t requests = 0;     // requests sent to each broker
  int64_t errors = 0;       // scenarios that could not run (bad spec, setup failed)
};

struct scenario_options {
  std::string filter;  // run only scenarios whose "<file api>/<name>" contains this
  bool verbose = false;  // print known differences and both responses of differing steps
  bool trace = false;    // print both raw responses of every step, differing or not
  int timeout_ms = 10000;
};

/// Runs every scenario of `file` (a JSON file), adding to `totals`.
void run_scenario_file(runner& run, const std::string& file, const scenario_options& opt, scenario_totals& totals);

/// Creates `topic` with `partitions` on both brokers (CreateTopics v7) and waits (bounded) until both
/// Metadata answers show a leader for every partition. false with `error` when it did not happen.
bool create_topic_both(runner& run, const std::string& topic, int partitions, const boost::json::object& configs,
                       std::string& error);

}  // namespace sluice::diff
