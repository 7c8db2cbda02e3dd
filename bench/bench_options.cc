// sluice_bench's command line (bench.h): the options, their defaults and the usage text.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench.h"

namespace sluice::bench {

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: sluice_bench (--bootstrap HOST:PORT | --mock [--mock-brokers N]) [options]\n"
               "  --mode produce|consume|latency|create[,...]   default produce\n"
               "  --records N        records to produce/consume (default 100000)\n"
               "  --size S           value size in bytes (default 100)\n"
               "  --keys K           produce: keys i %% K, so each key is written records/K times (default: all distinct)\n"
               "  --acks A           0, 1, -1/all (default 1)\n"
               "  --linger-ms L      producer linger.ms (default: librdkafka's, 5 in 2.0.2)\n"
               "  --compression C    none, gzip, snappy, lz4, zstd (default none)\n"
               "  --partitions P     partitions of the fresh topic (default 1)\n"
               "  --replication-factor F  replication factor of the fresh topic (default 1)\n"
               "  --topic-config k=v topic config of the fresh topic (repeatable), e.g. min.insync.replicas=2\n"
               "  --rate R           latency mode: records per second (default 1000)\n"
               "  --duration D       latency mode: seconds of sending (default 5)\n"
               "  --topic T          topic name (default: generated, fresh per mode); consume alone reads it as is\n"
               "  --timeout SEC      bound on each phase (default 60)\n"
               "  --label TEXT       copied to the output\n"
               "  -X key=value       any librdkafka property, for all clients\n"
               "  --json             also print one JSON object per mode\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(2);
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bootstrap") o.bootstrap = need(i);
    else if (a == "--mock") o.mock = true;
    else if (a == "--mock-brokers") o.mock_brokers = std::stoi(need(i));
    else if (a == "--mode") {
      o.modes.clear();
      std::string m = need(i);
      for (size_t p = 0; p <= m.size();) {
        size_t c = m.find(',', p);
        if (c == std::string::npos) c = m.size();
        if (c > p) o.modes.push_back(m.substr(p, c - p));
        p = c + 1;
      }
    } else if (a == "--records") o.records = std::stol(need(i));
    else if (a == "--size") o.size = std::stoi(need(i));
    else if (a == "--keys") o.keys = std::stol(need(i));
    else if (a == "--acks") o.acks = need(i);
    else if (a == "--linger-ms") o.linger_ms = need(i);
    else if (a == "--compression") o.compression = need(i);
    else if (a == "--partitions") o.partitions = std::stoi(need(i));
    else if (a == "--replication-factor") o.replication_factor = std::stoi(need(i));
    else if (a == "--topic-config") {
      std::string kv = need(i);
      auto eq = kv.find('=');
      if (eq == std::string::npos) usage(2);
      o.topic_configs.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    else if (a == "--rate") o.rate = std::stod(need(i));
    else if (a == "--duration") o.duration = std::stod(need(i));
    else if (a == "--topic") o.topic = need(i);
    else if (a == "--timeout") o.timeout = std::stod(need(i));
    else if (a == "--label") o.label = need(i);
    else if (a == "--json") o.json = true;
    else if (a == "-X") {
      std::string kv = need(i);
      auto eq = kv.find('=');
      if (eq == std::string::npos) usage(2);
      o.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "-h" || a == "--help") usage(0);
    else {
      std::fprintf(stderr, "unknown argument: %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.mock == !o.bootstrap.empty()) {
    std::fprintf(stderr, "give exactly one of --bootstrap and --mock\n");
    usage(2);
  }
  if (o.acks == "all") o.acks = "-1";
  if (o.records <= 0 || o.size < 0 || o.partitions <= 0 || o.rate <= 0) usage(2);
  for (auto& m : o.modes)
    if (m != "produce" && m != "consume" && m != "latency" && m != "create") usage(2);
  return o;
}

}  // namespace sluice::bench
