// sluice_load: a Kafka load generator on Sluice's own codec (issue #23; bench/README.md, "Load generator").
//
//   sluice_load --bootstrap 127.0.0.1:9092 --topic t --partitions 4 --connections 4 --acks 1 --duration 5
//   sluice_load --rate 200000 --acks -1 --broker-pid 1234 --json
//   sluice_load --mode fetch --topic t --consumers 4
//
// Flow: discover the topic (Metadata; CreateTopics when missing), plan connections by partition leader, build one
// record batch, start --threads io_context threads with their connections, wait until every connection has
// connected and negotiated, open the gate, sample CPU at the end of the warm-up and after the threads end, print.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <memory>
#include <numeric>
#include <thread>

#include "bench/load/cpu_usage.h"
#include "bench/load/kafka_connection.h"
#include "bench/load/load_options.h"
#include "bench/load/load_report.h"
#include "bench/load/load_run.h"
#include "bench/load/topic_layout.h"

using namespace sluice::bench;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const load_options opts = parse_load_options(argc, argv);
  const bool produce = opts.mode == load_mode::produce;
  try {
    const topic_layout layout = discover_topic(opts, 30000);
    int32_t count = static_cast<int32_t>(layout.leaders.size());
    if (opts.partitions > 0) count = std::min(count, opts.partitions);
    std::vector<int32_t> partitions(static_cast<size_t>(count));
    std::iota(partitions.begin(), partitions.end(), 0);
    const auto plans =
        plan_connections(layout, partitions, produce ? opts.connections : opts.consumers, /*share_partitions=*/produce);
    std::vector<uint8_t> batch;
    if (produce) batch = build_load_batch(opts);

    shared_run run(opts);
    const int nthreads = std::max(1, std::min<int>(opts.threads, static_cast<int>(plans.size())));
    std::vector<std::unique_ptr<load_thread>> threads;
    for (int i = 0; i < nthreads; ++i) threads.push_back(std::make_unique<load_thread>());
    for (size_t i = 0; i < plans.size(); ++i) {
      auto& t = *threads[i % threads.size()];
      if (produce)
        spawn_produce_connection(t, run, layout, batch, plans[i], static_cast<int>(i), static_cast<int>(plans.size()));
      else
        spawn_fetch_connection(t, run, layout, plans[i]);
    }
    for (int i = 0; i < opts.idle_connections; ++i)
      spawn_idle_connection(*threads[static_cast<size_t>(i) % threads.size()], run,
                            opts.bootstrap[static_cast<size_t>(i) % opts.bootstrap.size()]);
    std::vector<std::thread> workers;
    for (auto& t : threads) workers.emplace_back([&io = t->io] { io.run(); });

    // Every connection connected and negotiated (or failed), bounded.
    const auto setup_begin = load_clock::now();
    const auto setup_deadline = setup_begin + (opts.idle_connections > 0 ? 90s : 30s);
    auto set_up = [&] {
      return run.ready.load() + run.failed.load() >= static_cast<int>(plans.size()) &&
             run.idle_ready.load() + run.idle_failed.load() >= opts.idle_connections;
    };
    while (!set_up() && load_clock::now() < setup_deadline) std::this_thread::sleep_for(2ms);
    const double setup_s = std::chrono::duration<double>(load_clock::now() - setup_begin).count();
    const bool any_ready = run.ready.load() > 0;
    run.times.start = load_clock::now() + 5ms;
    if (!any_ready) run.times.start = load_clock::now() - 1h;  // nothing to run: connections still waiting end at once
    run.times.warmup_end = run.times.start + std::chrono::duration_cast<load_clock::duration>(
                                                 std::chrono::duration<double>(opts.warmup()));
    run.times.deadline = run.times.warmup_end + std::chrono::duration_cast<load_clock::duration>(
                                                    std::chrono::duration<double>(opts.duration_s));
    if (!any_ready) run.times.deadline = run.times.start;
    for (auto& t : threads)
      boost::asio::post(t->io, [tp = t.get(), start = run.times.start] { tp->open_gate(start); });

    std::this_thread::sleep_until(std::min(run.times.warmup_end, run.times.deadline));
    const double client0 = self_cpu_seconds();
    const auto broker0 = processes_cpu_seconds(opts.broker_pids);
    for (auto& w : workers) w.join();
    const double client1 = self_cpu_seconds();
    const auto broker1 = processes_cpu_seconds(opts.broker_pids);

    load_result r;
    r.opts = &opts;
    r.topic = layout.topic;
    r.partitions = count;
    r.connections = static_cast<int>(plans.size());
    std::vector<int32_t> nodes;
    for (const auto& p : plans) nodes.push_back(p.node_id);
    std::sort(nodes.begin(), nodes.end());
    r.brokers = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    r.threads = nthreads;
    r.api_version = run.api_version.load();
    r.batch_bytes = static_cast<int64_t>(batch.size());
    for (auto& t : threads) r.counters.merge(t->counters);
    const auto end = r.counters.last_completion > run.times.warmup_end ? r.counters.last_completion : load_clock::now();
    r.seconds = std::chrono::duration<double>(end - run.times.warmup_end).count();
    if (r.seconds < 0) r.seconds = 0;
    r.failed_connections = run.failed.load();
    r.idle_ready = run.idle_ready.load();
    r.idle_failed = run.idle_failed.load();
    r.idle_alive = run.idle_alive.load();
    r.setup_s = setup_s;
    {
      std::lock_guard lock(run.errors_mutex);
      r.connection_errors = run.connection_errors;
    }
    r.client_cpu_s = client1 - client0;
    if (broker0 && broker1) r.broker_cpu_s = *broker1 - *broker0;
    if (opts.json)
      print_json(r);
    else
      print_report(r);
    return any_ready && r.counters.records > 0 ? 0 : 1;
  } catch (const load_error& e) {
    std::fprintf(stderr, "sluice_load: %s\n", e.what());
    return 1;
  }
}
