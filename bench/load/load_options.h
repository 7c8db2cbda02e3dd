#pragma once
// load_options: the command line of sluice_load (bench/README.md, "Load generator").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/record_batch.h"

namespace sluice::bench {

enum class load_mode { produce, fetch };

/// One `host:port` of --bootstrap (numeric IPv4 or a name the resolver knows; the project runs on 127.0.0.1).
struct broker_address {
  std::string host;
  uint16_t port = 9092;
  std::string text() const { return host + ":" + std::to_string(port); }
};

struct load_options {
  load_mode mode = load_mode::produce;
  std::vector<broker_address> bootstrap{{"127.0.0.1", 9092}};
  std::string topic = "sluice-load";
  /// Produce: partitions of the topic created when missing, and how many of its partitions to load (default 1);
  /// 0 = the topic must exist, load all its partitions. Fetch: how many of the topic's partitions to read
  /// (default 0 = all). parse_load_options fills the mode's default.
  int32_t partitions = 1;
  int16_t replication_factor = 1;  // -1: the broker's default.replication.factor (KIP-464)
  int connections = 1;             // produce connections (at least one per leader broker)
  int consumers = 1;               // fetch connections
  int idle_connections = 0;        // connections that only negotiate and hold, spread over the --bootstrap brokers
  int threads = 1;                 // io_context threads; connection i runs on thread i % threads
  int32_t record_size = 100;       // value bytes per record (random letters, a fresh value per record)
  int32_t batch_records = 100;     // records per v2 record batch, one batch per Produce request
  storage::compression_codec compression = storage::compression_codec::none;
  int inflight = 5;                // Produce requests in flight per connection (Kafka's max.in.flight default)
  int16_t acks = -1;               // 0, 1 or -1 (all)
  int32_t timeout_ms = 30000;      // Produce timeout_ms
  double rate = 0;                 // records/s over all connections; 0 = max-rate (closed loop)
  double duration_s = 5;           // measured seconds after the warm-up
  std::optional<double> warmup_s;  // default: 1 s for produce, 0 for fetch
  int64_t records = 0;             // stop after sending (produce) or reading (fetch) this many records; 0 = none
  int64_t fetch_offset = 0;        // fetch: first offset of every partition
  int32_t fetch_partition_bytes = 1 << 20;  // fetch: PartitionMaxBytes (librdkafka's max.partition.fetch.bytes)
  int32_t fetch_max_bytes = 50 << 20;       // fetch: MaxBytes (Kafka's fetch.max.bytes)
  int32_t fetch_max_wait_ms = 500;          // fetch: MaxWaitMs (Kafka's fetch.max.wait.ms)
  bool follow = false;             // fetch: keep fetching at the log end until the duration ends
  std::vector<int> broker_pids;    // processes whose CPU is reported as the broker's (summed)
  std::string client_id = "sluice-load";
  bool json = false;

  double warmup() const { return warmup_s ? *warmup_s : (mode == load_mode::produce ? 1.0 : 0.0); }
};

/// Parses argv. Prints usage and exits 0 on --help; prints the problem and exits 2 on a bad option.
load_options parse_load_options(int argc, char** argv);

}  // namespace sluice::bench
