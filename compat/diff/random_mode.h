#pragma once
// random_mode: seeded random request sequences built from the generated field lists (valid-ish values
// from small pools: existing and unknown topic names, partitions -1..3, offsets, groups, member ids),
// sent to both brokers and compared like scenario steps. README.md "Randomized mode".
#include <cstdint>

#include "compat/diff/runner.h"

namespace sluice::diff {

struct random_options {
  uint64_t seed = 1;
  int64_t seeds = 1;         // seeds seed .. seed+seeds-1, each with its own topics and groups
  int64_t count = 1000;      // requests per seed
  double time_limit_s = 60;  // for the whole run
  bool stop_on_first = false;
  bool verbose = false;
  bool trace = false;  // print every request and both raw responses
  int timeout_ms = 3000;
  /// Differing responses replayed to tell a deadline race from a bug (run_random): at most this many per run.
  int max_replays = 20;
};

struct random_totals {
  int64_t requests = 0;
  int64_t differing = 0;     // requests whose normalised responses differ (not only known differences)
  int64_t unexplained = 0;   // differing fields
  int64_t sluice_lost = 0;   // Sluice closed the connection or did not answer while Kafka answered
  int64_t timing = 0;        // differing responses that a replay of their seed on fresh names did not give again
  int64_t seeds_done = 0;
  uint64_t last_seed = 0;
};

/// Runs the random mode; prints each new difference signature (api, version, path) once with the seed,
/// the request number to replay it and the request. Returns false when Sluice stopped answering at all.
bool run_random(runner& run, const random_options& opt, random_totals& totals);

}  // namespace sluice::diff
