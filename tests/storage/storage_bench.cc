// Prints append and read throughput of one log on the local disk (page cache; no fsync per append).
//   storage_bench [dir] [batch_bytes] [total_mb]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/clock.h"
#include "storage/log.h"

using namespace sluice::storage;

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "/tmp/sluice-storage-bench";
  const size_t batch_bytes = argc > 2 ? std::stoul(argv[2]) : 16384;
  const int64_t total_mb = argc > 3 ? std::stoll(argv[3]) : 256;
  std::filesystem::remove_all(dir);
  log_config cfg;
  cfg.segment_bytes = 128 << 20;
  auto l = log::open(dir / "bench-0", cfg, sluice::system_clock::instance());
  if (!l) {
    std::fprintf(stderr, "open: %s\n", l.err().message.c_str());
    return 1;
  }
  // ~100-byte records, as many as fit in batch_bytes.
  record_batch_builder b;
  const std::string value(90, 'v');
  while (b.size_bytes() + 110 < batch_bytes) b.add(std::nullopt, value, 1700000000000);
  const auto batch = b.build();
  std::vector<uint8_t> buf = batch;
  const int64_t batches = (total_mb << 20) / static_cast<int64_t>(batch.size());
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < batches; ++i) {
    std::copy(batch.begin(), batch.end(), buf.begin());
    auto r = (*l)->append(buf, 0);
    if (!r) {
      std::fprintf(stderr, "append: %s\n", r.err().message.c_str());
      return 1;
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  const double append_s = std::chrono::duration<double>(t1 - t0).count();
  const double mb = static_cast<double>(batches * static_cast<int64_t>(batch.size())) / (1 << 20);
  std::printf("append: %lld batches of %zu bytes (%d records), %.1f MB in %.3f s = %.1f MB/s, %.0f batches/s\n",
              static_cast<long long>(batches), batch.size(), b.record_count(), mb, append_s, mb / append_s,
              batches / append_s);
  // Reads of 1 MiB from every offset step (index lookup + header walk), returning regions only.
  int64_t next = 0, reads = 0, bytes = 0;
  t0 = std::chrono::steady_clock::now();
  while (next < (*l)->log_end_offset()) {
    auto r = (*l)->read(next, 1 << 20, INT64_MAX, true);
    if (!r || r->region.size == 0) break;
    ++reads;
    bytes += r->region.size;
    // Advance past the region: read the last batch boundary from the returned size.
    auto r2 = (*l)->read(next, static_cast<int32_t>(r->region.size), INT64_MAX, true);
    (void)r2;
    next += (r->region.size / static_cast<int64_t>(batch.size())) * b.record_count();
  }
  t1 = std::chrono::steady_clock::now();
  const double read_s = std::chrono::duration<double>(t1 - t0).count();
  std::printf("read (locate only, 2 lookups per step): %lld reads of ~1 MiB in %.3f s = %.0f reads/s\n",
              static_cast<long long>(reads), read_s, 2 * reads / read_s);
  auto t2 = std::chrono::steady_clock::now();
  auto f = (*l)->flush();
  auto t3 = std::chrono::steady_clock::now();
  std::printf("final fsync: %.3f s\n", std::chrono::duration<double>(t3 - t2).count());
  (*l)->close();
  std::filesystem::remove_all(dir);
  return f ? 0 : 1;
}
