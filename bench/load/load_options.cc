#include "bench/load/load_options.h"

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace sluice::bench {
namespace po = boost::program_options;
namespace {

[[noreturn]] void usage_error(const std::string& what) {
  std::cerr << "sluice_load: " << what << " (--help lists the options)\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) out.push_back(part);
  return out;
}

broker_address parse_address(const std::string& s) {
  const auto colon = s.rfind(':');
  broker_address a;
  if (colon == std::string::npos) {
    a.host = s;
    return a;
  }
  a.host = s.substr(0, colon);
  const long port = std::strtol(s.c_str() + colon + 1, nullptr, 10);
  if (a.host.empty() || port <= 0 || port > 65535) usage_error("bad broker address '" + s + "'");
  a.port = static_cast<uint16_t>(port);
  return a;
}

}  // namespace

load_options parse_load_options(int argc, char** argv) {
  load_options o;
  std::string mode = "produce", bootstrap = "127.0.0.1:9092", compression = "none", acks = "-1";
  std::vector<std::string> pids;
  double warmup = -1;
  int32_t partitions = -1;
  po::options_description d(
      "sluice_load: a Kafka load generator on Sluice's codec (bench/README.md, \"Load generator\").\n"
      "Produce mode: pre-encoded v2 record batches over pipelined Produce requests, at max rate or a fixed rate.\n"
      "Fetch mode: raw Fetch readers that count records from batch headers.\nOptions",
      110, 55);
  // clang-format off
  d.add_options()
      ("help,h", "this text")
      ("mode", po::value(&mode), "produce | fetch (default produce)")
      ("bootstrap,b", po::value(&bootstrap), "HOST:PORT[,HOST:PORT...] (default 127.0.0.1:9092)")
      ("topic", po::value(&o.topic), "topic (default sluice-load); produce creates it when missing")
      ("partitions", po::value(&partitions), "produce: partitions of a created topic, 0 = use the existing topic's "
                                                "(default 1); fetch: read the first N partitions, 0 = all")
      ("replication-factor", po::value(&o.replication_factor), "of a created topic; -1 = broker default (default 1)")
      ("connections", po::value(&o.connections), "produce connections, at least one per leader broker (default 1)")
      ("consumers", po::value(&o.consumers), "fetch connections (default 1)")
      ("idle-connections", po::value(&o.idle_connections), "connections that negotiate (ApiVersions) and then send "
                                                            "nothing until the end, round robin over --bootstrap; "
                                                            "each asks ApiVersions once more at the end (default 0)")
      ("threads", po::value(&o.threads), "I/O threads, each an io_context with its share of connections (default 1)")
      ("record-size", po::value(&o.record_size), "value bytes per record (default 100)")
      ("batch-records", po::value(&o.batch_records), "records per batch; one batch per Produce request (default 100)")
      ("compression", po::value(&compression), "none | lz4 | zstd (default none)")
      ("inflight", po::value(&o.inflight), "Produce requests in flight per connection (default 5)")
      ("acks", po::value(&acks), "0 | 1 | -1 | all (default -1)")
      ("timeout-ms", po::value(&o.timeout_ms), "Produce timeout_ms (default 30000)")
      ("rate", po::value(&o.rate), "records/s over all connections (open loop, latency from the intended send "
                                   "time); 0 = max rate (default 0)")
      ("duration", po::value(&o.duration_s), "measured seconds after the warm-up (default 5)")
      ("warmup", po::value(&warmup), "seconds before measuring (default 1 for produce, 0 for fetch)")
      ("records", po::value(&o.records), "stop after this many records sent (produce, warm-up included) or read "
                                         "(fetch); 0 = no limit (default 0)")
      ("offset", po::value(&o.fetch_offset), "fetch: first offset of each partition (default 0)")
      ("fetch-partition-bytes", po::value(&o.fetch_partition_bytes), "fetch: PartitionMaxBytes (default 1048576)")
      ("fetch-max-bytes", po::value(&o.fetch_max_bytes), "fetch: MaxBytes (default 52428800)")
      ("fetch-max-wait-ms", po::value(&o.fetch_max_wait_ms), "fetch: MaxWaitMs (default 500)")
      ("follow", po::bool_switch(&o.follow), "fetch: keep reading at the log end until the duration ends "
                                             "(default: stop once every partition reached its high watermark)")
      ("broker-pid", po::value(&pids)->composing(), "broker process id(s) for the broker CPU figure; repeatable "
                                                     "or comma-separated")
      ("client-id", po::value(&o.client_id), "request header client id (default sluice-load)")
      ("json", po::bool_switch(&o.json), "print one JSON object instead of lines");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(d).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    usage_error(e.what());
  }
  if (vm.count("help")) {
    std::cout << d << "\n";
    std::exit(0);
  }
  if (mode == "produce")
    o.mode = load_mode::produce;
  else if (mode == "fetch")
    o.mode = load_mode::fetch;
  else
    usage_error("--mode must be produce or fetch");
  o.bootstrap.clear();
  for (const auto& b : split(bootstrap, ',')) o.bootstrap.push_back(parse_address(b));
  if (o.bootstrap.empty()) usage_error("--bootstrap is empty");
  if (compression == "none")
    o.compression = storage::compression_codec::none;
  else if (compression == "lz4")
    o.compression = storage::compression_codec::lz4;
  else if (compression == "zstd")
    o.compression = storage::compression_codec::zstd;
  else
    usage_error("--compression must be none, lz4 or zstd");
  if (acks == "all" || acks == "-1")
    o.acks = -1;
  else if (acks == "0" || acks == "1")
    o.acks = static_cast<int16_t>(std::stoi(acks));
  else
    usage_error("--acks must be 0, 1, -1 or all");
  for (const auto& p : pids)
    for (const auto& one : split(p, ',')) {
      const int pid = std::atoi(one.c_str());
      if (pid <= 0) usage_error("bad --broker-pid '" + one + "'");
      o.broker_pids.push_back(pid);
    }
  if (vm.count("warmup")) {
    if (warmup < 0) usage_error("--warmup must be >= 0");
    o.warmup_s = warmup;
  }
  if (vm.count("partitions") && partitions < 0) usage_error("--partitions must be >= 0");
  o.partitions = partitions >= 0 ? partitions : (o.mode == load_mode::produce ? 1 : 0);
  if (o.connections < 1 || o.consumers < 1 || o.threads < 1 || o.inflight < 1)
    usage_error("--connections, --consumers, --threads and --inflight must be >= 1");
  if (o.record_size < 0 || o.batch_records < 1) usage_error("--record-size must be >= 0, --batch-records >= 1");
  if (o.rate < 0 || o.duration_s <= 0) usage_error("--rate must be >= 0 and --duration > 0");
  if (o.records < 0) usage_error("--records must be >= 0");
  if (o.idle_connections < 0) usage_error("--idle-connections must be >= 0");
  return o;
}

}  // namespace sluice::bench
