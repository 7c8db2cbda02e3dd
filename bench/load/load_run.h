#pragma once
// load_run: the state sluice_load's I/O threads share with main: the run's clock (start, end of warm-up,
// deadline), the start gate, per-thread counters merged at the end, and the workloads' entry points.
//
// Threading: each load_thread owns an io_context run by one std::thread; its connections, counters and gate are
// touched only on that thread until it has joined. Across threads only the atomics of shared_run are touched.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bench/load/latency_histogram.h"
#include "bench/load/load_options.h"
#include "bench/load/topic_layout.h"

namespace sluice::bench {

using load_clock = std::chrono::steady_clock;

/// What one thread (and, merged, the run) counted. Only completions at or after the end of the warm-up count;
/// latencies count for requests whose intended send time is at or after it.
struct load_counters {
  int64_t requests = 0;      // Produce responses (acks=0: requests written) or Fetch responses
  int64_t records = 0;       // records acknowledged without error (produce) or read (fetch)
  int64_t value_bytes = 0;   // produce: value bytes of those records
  int64_t batch_bytes = 0;   // record batch bytes (as on the wire, compressed if so) of those records
  int64_t late_sends = 0;    // fixed rate: requests written more than 1 ms after their intended send time
  int64_t unanswered = 0;    // requests still in flight when a connection failed or the drain timed out
  std::map<int16_t, int64_t> errors;  // Kafka error code -> partition results (or top-level Fetch errors)
  latency_histogram latency;          // microseconds: produce send (or intended send) to response; fetch round trip
  load_clock::time_point last_completion{};  // latest counted completion

  void merge(const load_counters& o);
};

/// The run's clock, fixed by main before the gate opens.
struct run_clock {
  load_clock::time_point start;       // sending starts
  load_clock::time_point warmup_end;  // start + warm-up: figures count from here
  load_clock::time_point deadline;    // warmup_end + duration: no new request after it
};

struct shared_run {
  explicit shared_run(const load_options& o) : opts(o) {}
  const load_options& opts;
  run_clock times;
  std::atomic<int> ready{0};   // connections connected and negotiated
  std::atomic<int> failed{0};  // connections that failed before or during the run
  std::atomic<int64_t> records_claimed{0};  // --records: records claimed by senders / readers so far
  std::atomic<int> idle_ready{0};   // --idle-connections connected and negotiated
  std::atomic<int> idle_failed{0};  // --idle-connections that failed to connect or negotiate
  std::atomic<int> idle_alive{0};   // --idle-connections that still answered ApiVersions after the run
  std::atomic<int> api_version{-1};  // the Produce or Fetch version negotiated (the last connection's)
  std::mutex errors_mutex;
  std::vector<std::string> connection_errors;  // first failures, for the report (under errors_mutex)

  /// Claims `n` records against --records; false when the limit is reached (no limit: always true).
  bool claim(int64_t n);
  /// Counts a failed busy connection (`failed`) and keeps its first words for the report (note_error).
  void note_failure(const std::string& what);
  /// Keeps `what` among the first 10 connection errors of the report, counting nothing.
  void note_error(const std::string& what);
};

/// One I/O thread: an io_context with its share of connections.
class load_thread {
 public:
  load_thread() : gate_(io) {}
  boost::asio::io_context io;
  load_counters counters;

  /// Opens the gate: connections waiting in wait_start() go at `start`. Call through post() onto this thread's io.
  void open_gate(load_clock::time_point start) {
    start_ = start;
    started_ = true;
    gate_.cancel();
  }
  /// Suspends until open_gate() ran and its start time has come.
  boost::asio::awaitable<void> wait_start();

 private:
  boost::asio::steady_timer gate_;
  bool started_ = false;
  load_clock::time_point start_{};
};

/// The pre-encoded record batch every Produce request carries: `batch_records` records with null keys and values of
/// `record_size` random letters (a fresh value per record, so that compression has something to do, as with
/// real data, rather than a value repeated), CreateTime now, producer id -1 (no idempotence), compressed with
/// `compression` (storage/compression.h framing). Throws load_error when compression fails.
std::vector<uint8_t> build_load_batch(const load_options& opts);

/// Starts one produce connection on `thread`: connect, ApiVersions, pick Produce v3-v13, pre-encode one request per
/// partition, signal ready, wait for the gate, then send batches round robin over `plan.partitions` with up to
/// --inflight requests in flight (max rate) or on the fixed-rate schedule, until the deadline or --records, and
/// wait (up to 10 s) for the last responses. `index`/`total` place its fixed-rate schedule among all connections.
/// Failures are counted (shared_run::failed, note_failure) and end the connection, never the run.
void spawn_produce_connection(load_thread& thread, shared_run& run, const topic_layout& layout,
                              std::span<const uint8_t> batch, connection_plan plan, int index, int total);

/// Starts one fetch connection: connect, ApiVersions, pick Fetch v4-v18, ready, gate, then Fetch requests (no
/// fetch session: session id 0, epoch -1, every partition each time) for `plan.partitions` from --offset, one at a
/// time, counting the records of each batch header (bytes 57-60) without decoding records, until every partition
/// reached its high watermark (unless --follow), the deadline, or --records.
void spawn_fetch_connection(load_thread& thread, shared_run& run, const topic_layout& layout, connection_plan plan);
/// Starts one idle connection (--idle-connections) to `broker`: connect, ApiVersions, wait for the gate, send
/// nothing until the run's deadline, then one ApiVersions round trip to check that the broker still serves it
/// (shared_run::idle_ready, idle_failed, idle_alive).
void spawn_idle_connection(load_thread& thread, shared_run& run, broker_address broker);

}  // namespace sluice::bench
