#include "bench/load/load_run.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

#include "bench/load/kafka_connection.h"
#include "storage/compression.h"
#include "storage/record_batch.h"

namespace sluice::bench {
namespace asio = boost::asio;

void load_counters::merge(const load_counters& o) {
  requests += o.requests;
  records += o.records;
  value_bytes += o.value_bytes;
  batch_bytes += o.batch_bytes;
  late_sends += o.late_sends;
  unanswered += o.unanswered;
  for (const auto& [code, n] : o.errors) errors[code] += n;
  latency.merge(o.latency);
  last_completion = std::max(last_completion, o.last_completion);
}

bool shared_run::claim(int64_t n) {
  if (opts.records <= 0) return true;
  return records_claimed.fetch_add(n, std::memory_order_relaxed) < opts.records;
}

void shared_run::note_failure(const std::string& what) {
  failed.fetch_add(1);
  note_error(what);
}

void shared_run::note_error(const std::string& what) {
  std::lock_guard lock(errors_mutex);
  if (connection_errors.size() < 10) connection_errors.push_back(what);
}

asio::awaitable<void> load_thread::wait_start() {
  while (!started_) {
    gate_.expires_at(load_clock::time_point::max());
    boost::system::error_code ec;
    co_await gate_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (load_clock::now() < start_) {
    asio::steady_timer at(io, start_);
    boost::system::error_code ec;
    co_await at.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

std::vector<uint8_t> build_load_batch(const load_options& opts) {
  std::mt19937_64 rng(0x5eed);  // fixed: every run sends the same bytes
  std::uniform_int_distribution<int> letter('a', 'z');
  std::string value(static_cast<size_t>(opts.record_size), 'a');
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  storage::record_batch_builder builder;
  for (int32_t i = 0; i < opts.batch_records; ++i) {
    for (auto& ch : value) ch = static_cast<char>(letter(rng));
    builder.add(std::nullopt, std::string_view(value), now_ms);
  }
  std::vector<uint8_t> batch = builder.build();
  if (opts.compression == storage::compression_codec::none) return batch;
  // The same batch with its records compressed: header (61 bytes) + compressed records, batchLength and the codec
  // bits of the attributes set, CRC recomputed.
  auto compressed = storage::compress(
      opts.compression, std::span<const uint8_t>(batch).subspan(storage::record_batch_header_size));
  if (!compressed) throw load_error("compressing the batch failed");
  batch.resize(storage::record_batch_header_size);
  batch.insert(batch.end(), compressed->begin(), compressed->end());
  const uint32_t length = static_cast<uint32_t>(batch.size() - storage::log_overhead);
  for (int i = 0; i < 4; ++i)
    batch[storage::batch_field::batch_length + i] = static_cast<uint8_t>(length >> (24 - 8 * i));
  batch[storage::batch_field::attributes + 1] =
      static_cast<uint8_t>((batch[storage::batch_field::attributes + 1] & ~storage::batch_attribute::compression_mask) |
                           static_cast<uint8_t>(opts.compression));
  storage::recompute_crc(batch);
  return batch;
}

}  // namespace sluice::bench
