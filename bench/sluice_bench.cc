// sluice_bench: produce / consume / end-to-end latency benchmark on librdkafka's C API, in the spirit
// of Kafka's kafka-producer-perf-test / EndToEndLatency and librdkafka's rdkafka_performance.
//
// Targets: a running broker (--bootstrap HOST:PORT) or librdkafka's own in-process mock cluster
// (--mock, rd_kafka_mock_cluster_new from rdkafka_mock.h) so both can be measured side by side with
// the same client code and settings.
//
// Modes (--mode):
//   produce   N records of S bytes to a fresh topic of P partitions (record i -> partition i % P);
//             time from the first produce call to the last delivery report.
//   consume   produce (unmeasured unless --mode produce,consume) then read all N back with the
//             legacy (group-less) consumer from the beginning of every partition. With --topic and
//             without produce: no fill, read the first N records of that existing topic (P partitions).
//   latency   a consumer tails a fresh topic while a producer sends R records/s for D seconds; each
//             value starts with the send time (steady clock, ns); latency = receive - send.
//   create    only create --topic with --partitions partitions (setup for other probes).
//   Modes combine: --mode produce,consume.
//
// Output: one human line per mode and, with --json, one JSON object per mode on stdout (the bench
// script parses those). Exit status 0 when every record was delivered / received, 1 otherwise,
// 2 on bad arguments.
//
// The pieces (bench.h): bench_options.cc, bench_clients.cc, bench_report.cc, bench_workloads.cc.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "bench.h"

using namespace sluice::bench;

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  try {
    target t(o);
    bool ok = true;
    bool has_produce = std::find(o.modes.begin(), o.modes.end(), "produce") != o.modes.end();
    std::string data_topic;  // the produce topic, reused by consume
    for (auto& m : o.modes) {
      if (m == "create") {  // just the topic (--topic, --partitions): e.g. for an idle-RSS probe
        if (o.topic.empty()) usage(2);
        t.create_topic(o, o.topic);
        std::printf("mode=create topic=%s partitions=%d\n", o.topic.c_str(), o.partitions);
      } else if (m == "produce") {
        data_topic = fresh_topic(o, "data");
        t.create_topic(o, data_topic);
        ok = run_produce(o, t, data_topic) && ok;
      } else if (m == "consume") {
        if (!has_produce && !o.topic.empty()) {
          data_topic = o.topic;  // an existing topic: read it as it is
        } else if (!has_produce) {
          // Unmeasured fill, then the measured read.
          data_topic = fresh_topic(o, "data");
          t.create_topic(o, data_topic);
          options quiet = o;
          quiet.json = false;
          quiet.label += "(fill)";
          ok = run_produce(quiet, t, data_topic) && ok;
        }
        ok = run_consume(o, t, data_topic) && ok;
      } else if (m == "latency") {
        std::string lt = fresh_topic(o, "latency");
        t.create_topic(o, lt);
        ok = run_latency(o, t, lt) && ok;
      }
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_bench: %s\n", e.what());
    return 1;
  }
}
