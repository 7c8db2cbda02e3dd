// The fetch workload of sluice_load: raw Fetch readers (load_run.h), what bench/fetch_capacity.py does, in C++.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <memory>

#include "bench/load/kafka_connection.h"
#include "bench/load/load_run.h"
#include "protocol/messages/fetch.h"
#include "storage/record_batch.h"

namespace sluice::bench {
namespace asio = boost::asio;

namespace {

struct partition_position {
  int32_t partition;
  int64_t offset;           // next offset to fetch
  bool at_end = false;      // reached the high watermark of the last response
};

/// What the record batches in `bytes` hold: whole batches only (a fetch may end with a partial batch, which the
/// next fetch asks for again). Counts records from each v2 header's recordsCount without decoding records.
struct batches_seen {
  int64_t records = 0;
  int64_t bytes = 0;
  int64_t next_offset = -1;  // last offset of the last whole batch + 1; -1 when none
};

batches_seen walk_batches(std::span<const uint8_t> bytes) {
  batches_seen out;
  size_t pos = 0;
  while (bytes.size() - pos >= static_cast<size_t>(storage::record_batch_header_size)) {
    const auto h = storage::decode_record_batch_header(bytes.data() + pos);
    const int64_t size = h.size_bytes();
    if (h.batch_length < 0 || size > static_cast<int64_t>(bytes.size() - pos)) break;
    // Control batches (transaction markers) take offsets but hold no data records.
    if (!h.is_control()) out.records += h.records_count;
    out.bytes += size;
    out.next_offset = h.last_offset() + 1;
    pos += static_cast<size_t>(size);
  }
  return out;
}

asio::awaitable<void> run_fetch(std::shared_ptr<kafka_connection> conn, load_thread& thread, shared_run& run,
                                const topic_layout& layout, connection_plan plan) {
  const auto& opts = run.opts;
  int16_t version = 4;
  try {
    // GCC 12: each awaitable is built before its co_await (temporaries of a co_await full-expression are destroyed
    // twice).
    auto connecting = conn->connect();
    co_await std::move(connecting);
    auto negotiating = conn->negotiate();
    co_await std::move(negotiating);
    // Fetch v4 is Kafka 4.0's oldest (KIP-896); v13+ names topics by id (KIP-516).
    auto v = conn->pick(protocol::api_key::fetch, 4, 18);
    if (v && *v >= 13 && layout.topic_id.is_zero()) v = 12;
    if (!v) conn->fail("the broker serves no Fetch version in 4-18");
    version = *v;
    run.api_version.store(version);
  } catch (const std::exception& e) {
    run.note_failure(e.what());
    co_return;
  }
  std::vector<partition_position> positions;
  for (int32_t p : plan.partitions) positions.push_back({p, opts.fetch_offset});
  run.ready.fetch_add(1);
  auto starting = thread.wait_start();
  co_await std::move(starting);
  auto& c = thread.counters;
  const auto& times = run.times;
  try {
    for (;;) {
      if (load_clock::now() >= times.deadline) break;
      if (opts.records > 0 && run.records_claimed.load(std::memory_order_relaxed) >= opts.records) break;
      protocol::fetch_request req;
      req.replica_id = -1;  // a consumer (v0-14; v15+ leaves ReplicaState at its default)
      req.max_wait_ms = opts.fetch_max_wait_ms;
      req.min_bytes = 1;
      req.max_bytes = opts.fetch_max_bytes;
      req.isolation_level = 0;  // read_uncommitted
      req.session_id = 0;       // no fetch session (KIP-227): a full fetch request every time
      req.session_epoch = -1;
      auto& t = req.topics.emplace_back();
      t.topic = layout.topic;
      t.topic_id = layout.topic_id;
      for (const auto& pp : positions) {
        if (pp.at_end && !opts.follow) continue;
        auto& fp = t.partitions.emplace_back();
        fp.partition = pp.partition;
        fp.fetch_offset = pp.offset;
        fp.partition_max_bytes = opts.fetch_partition_bytes;
      }
      if (t.partitions.empty()) break;  // every partition read to its high watermark
      const auto sent = load_clock::now();
      auto calling = conn->call<protocol::fetch_response>(req, version);
      auto resp = co_await std::move(calling);
      const auto done = load_clock::now();
      const bool counted = done >= times.warmup_end;
      if (resp.error_code != protocol::error_code::none) {
        if (counted) ++c.errors[static_cast<int16_t>(resp.error_code)];
        conn->fail("Fetch: " + std::string(protocol::error_name(resp.error_code)));
      }
      int64_t records = 0, bytes = 0;
      for (const auto& tr : resp.responses)
        for (const auto& pd : tr.partitions) {
          partition_position* pp = nullptr;
          for (auto& x : positions)
            if (x.partition == pd.partition_index) pp = &x;
          if (!pp) continue;
          if (pd.error_code != protocol::error_code::none) {
            if (counted) ++c.errors[static_cast<int16_t>(pd.error_code)];
            pp->at_end = true;  // not retried: the report shows the error
            continue;
          }
          if (pd.records_ && !pd.records_->in_file()) {
            const auto seen = walk_batches(pd.records_->bytes);
            records += seen.records;
            bytes += seen.bytes;
            if (seen.next_offset > pp->offset) pp->offset = seen.next_offset;
          }
          pp->at_end = pp->offset >= pd.high_watermark;
        }
      if (opts.records > 0) run.records_claimed.fetch_add(records, std::memory_order_relaxed);
      if (counted) {
        ++c.requests;
        c.records += records;
        c.batch_bytes += bytes;
        c.last_completion = std::max(c.last_completion, done);
        if (sent >= times.warmup_end)
          c.latency.record(static_cast<uint64_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(done - sent).count()));
      }
    }
  } catch (const std::exception& e) {
    run.note_failure(e.what());
  }
  conn->close();
}

}  // namespace

void spawn_fetch_connection(load_thread& thread, shared_run& run, const topic_layout& layout, connection_plan plan) {
  auto conn = std::make_shared<kafka_connection>(thread.io, plan.broker, run.opts.client_id);
  asio::co_spawn(thread.io, run_fetch(conn, thread, run, layout, std::move(plan)), asio::detached);
}

}  // namespace sluice::bench
