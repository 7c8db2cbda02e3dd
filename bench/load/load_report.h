#pragma once
// load_report: the figures of one sluice_load run and their two renderings (human-readable lines, one JSON object).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/load/load_options.h"
#include "bench/load/load_run.h"

namespace sluice::bench {

struct load_result {
  const load_options* opts = nullptr;
  std::string topic;
  int32_t partitions = 0;       // partitions loaded
  int connections = 0;          // connections planned (after one per leader broker)
  int brokers = 0;              // leader brokers loaded
  int threads = 0;
  int api_version = -1;         // Produce or Fetch version negotiated
  int64_t batch_bytes = 0;      // produce: size of the pre-encoded batch
  double seconds = 0;           // measured window: end of warm-up to the last counted completion
  load_counters counters;       // merged over threads
  int failed_connections = 0;
  int idle_ready = 0;           // --idle-connections connected and negotiated before the run
  int idle_failed = 0;          // --idle-connections that could not connect or negotiate
  int idle_alive = 0;           // --idle-connections that answered ApiVersions after the run
  double setup_s = 0;           // connecting and negotiating every connection, idle ones included
  std::vector<std::string> connection_errors;
  double client_cpu_s = 0;                // this process over the measured window
  std::optional<double> broker_cpu_s;     // --broker-pid processes over the same window
};

/// Human-readable lines on stdout: settings, throughput (records/s, MB/s where MB = 10^6 bytes), requests, latency
/// percentiles in milliseconds, errors by Kafka name, CPU seconds per million records of both sides and their share
/// of one core.
void print_report(const load_result& r);

/// One JSON object on stdout (Boost.JSON): the same figures, latencies in microseconds, CPU in seconds; keys are
/// described in bench/README.md ("Load generator").
void print_json(const load_result& r);

}  // namespace sluice::bench
