// libFuzzer target: the record batch parser and validators (storage/record_batch.h, storage/log_validator.h) and
// the four decompressors (storage/compression.h), as a Produce request's records reach them.
//
// Input: [mode byte] [bytes...]. Mode bits:
//   0-2  codec for the fixed-up modes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7: raw mode, no fix-up)
//   3    fixed-up modes: compress the payload with the codec first (so that decompression succeeds and the
//        records parser runs on it); clear: the payload is given to the decompressor as it is
//   4    apply record rules (key required, timestamp bounds) as a compacted, CreateTime-checked topic does
//   5-6  the topic's codec for validate_batch_records: producer (none), uncompressed, zstd, the batch's own
// Raw mode: the bytes are a batch as a client sent it (any CRC). Fixed-up modes: the first 61 bytes (zero-padded)
// are the header, the rest the records payload; magic, batchLength, the codec bits and the CRC are set so that
// validation passes the header checks and reaches the records (and the decompressor).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "storage/compression.h"
#include "storage/crc32c.h"
#include "storage/log_validator.h"
#include "storage/record_batch.h"

using namespace sluice::storage;

namespace {

constexpr size_t max_out = size_t{4} << 20;  // the decompressor's bound in this harness (RSS limit 2 GB)

void walk(const record_batch_header& h, std::span<const uint8_t> records) {
  auto it = record_iterator::over_records(h, records);
  record_view r;
  int32_t n = 0;
  while (it.next(r) && n < 100000) {
    if (r.key) (void)r.key->size();
    ++n;
  }
  (void)it.error();
}

void check_batch(std::span<const uint8_t> bytes, uint8_t mode) {
  auto parsed = parse_record_batch_header(bytes);
  if (!parsed) return;
  auto h = validate_record_batch(bytes);
  if (!h) return;
  const auto batch = bytes.first(static_cast<size_t>(h->size_bytes()));
  const auto payload = batch.subspan(record_batch_header_size);
  record_rules rules;
  if (mode & 0x10) {
    rules.key_required = true;
    rules.check_timestamps = true;
    rules.min_timestamp = 1000;
    rules.max_timestamp = int64_t{1} << 42;
  }
  if (h->compression() == compression_codec::none) {
    if (auto it = record_iterator::open(batch)) {
      record_view r;
      for (int32_t n = 0; n < 100000 && it->next(r); ++n) {
      }
    }
    if (auto s = check_records(payload, *h, rules)) {
      if (s->offsets_in_order) (void)s->max_timestamp;
      else (void)renumber_records(payload, h->records_count);
    }
  } else if (static_cast<uint8_t>(h->compression()) <= 4) {
    if (auto d = decompress(h->compression(), payload, max_out)) {
      walk(*h, *d);
      (void)check_records(*d, *h, rules);
    }
  }
  std::optional<compression_codec> target;
  switch ((mode >> 5) & 3) {
    case 0: target = std::nullopt; break;
    case 1: target = compression_codec::none; break;
    case 2: target = compression_codec::zstd; break;
    case 3: target = h->compression(); break;
  }
  if (static_cast<uint8_t>(h->compression()) > 4) return;  // Kafka refuses codecs 5-7 before this step
  compression_levels levels;
  levels.zstd = 1;
  levels.lz4 = 1;
  levels.gzip = 1;
  if (needs_record_validation(h->compression(), target) || (mode & 0x10)) {
    auto v = validate_batch_records(batch, *h, target, levels, rules);
    if (v && v->rebuilt) {
      // A rebuilt batch is stored as it is: it must pass the same checks as a client's.
      auto again = validate_record_batch(*v->rebuilt);
      if (!again || static_cast<size_t>(again->size_bytes()) != v->rebuilt->size()) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::span<const uint8_t> in(data + 1, size - 1);
  const uint8_t codec = mode & 7;
  if (codec > 4) {
    // Raw mode: a copy of exactly the input, so that ASan sees reads past it.
    std::vector<uint8_t> raw(in.begin(), in.end());
    check_batch(raw, mode);
    // Also the decompressors on the bytes directly (codec from the low bits of the first byte, if any).
    if (!raw.empty()) (void)decompress(static_cast<compression_codec>(1 + raw[0] % 4), std::span(raw).subspan(1), max_out);
    return 0;
  }
  std::vector<uint8_t> batch(record_batch_header_size, 0);
  const size_t head = std::min(in.size(), size_t{record_batch_header_size});
  std::memcpy(batch.data(), in.data(), head);
  std::span<const uint8_t> payload = in.subspan(head);
  std::vector<uint8_t> compressed;
  if (codec != 0 && (mode & 0x08)) {
    compression_levels fast;
    fast.gzip = 1;
    fast.lz4 = 1;
    fast.zstd = 1;
    auto c = compress(static_cast<compression_codec>(codec), payload, fast);
    if (!c) return 0;
    compressed = std::move(*c);
    payload = compressed;
  }
  batch.insert(batch.end(), payload.begin(), payload.end());
  const auto length = static_cast<uint32_t>(batch.size() - log_overhead);
  batch[batch_field::batch_length] = static_cast<uint8_t>(length >> 24);
  batch[batch_field::batch_length + 1] = static_cast<uint8_t>(length >> 16);
  batch[batch_field::batch_length + 2] = static_cast<uint8_t>(length >> 8);
  batch[batch_field::batch_length + 3] = static_cast<uint8_t>(length);
  batch[batch_field::magic] = static_cast<uint8_t>(record_batch_magic_v2);
  batch[batch_field::attributes + 1] = static_cast<uint8_t>((batch[batch_field::attributes + 1] & ~7) | codec);
  recompute_crc(batch);
  check_batch(batch, mode);
  return 0;
}
