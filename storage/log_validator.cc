#include "storage/log_validator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

sluice::result<validated_batch> validate_batch_records(std::span<const uint8_t> batch, const record_batch_header& h,
                                                       std::optional<compression_codec> target,
                                                       const compression_levels& levels,
                                                       const record_rules& rules) {
  const compression_codec source = h.compression();
  const auto payload = batch.subspan(record_batch_header_size, static_cast<size_t>(h.size_bytes()) - record_batch_header_size);
  std::vector<uint8_t> decompressed;
  std::span<const uint8_t> records = payload;
  if (source != compression_codec::none) {
    auto d = decompress(source, payload);
    if (!d) return d.err();
    decompressed = std::move(d.value());
    records = decompressed;
  }
  auto summary = check_records(records, h, rules);
  if (!summary) return summary.err();

  validated_batch out;
  out.max_timestamp = summary->max_timestamp;
  if (!summary->rejected.empty()) {
    out.rejected = std::move(summary->rejected);
    return out;
  }
  const compression_codec codec = target ? *target : source;
  if (codec == source && summary->offsets_in_order) return out;

  // Rebuild (Kafka's buildRecordsAndAssignOffsets): the same header, new records part.
  std::vector<uint8_t> renumbered;
  if (!summary->offsets_in_order) {
    renumbered = renumber_records(records, h.records_count);
    records = renumbered;
  }
  std::vector<uint8_t> compressed;
  std::span<const uint8_t> body = records;
  if (codec != compression_codec::none) {
    auto c = compress(codec, records, levels);
    if (!c) return c.err();
    compressed = std::move(c.value());
    body = compressed;
  }
  if (body.size() > static_cast<size_t>(INT32_MAX) - record_batch_header_size) {
    return make_error(errc::record_too_large, "rebuilt batch larger than 2 GiB");
  }
  std::vector<uint8_t> rebuilt(record_batch_header_size + body.size());
  std::memcpy(rebuilt.data(), batch.data(), record_batch_header_size);
  // No records (recordsCount 0): body.data() may be null, which memcpy must not get even for 0 bytes.
  if (!body.empty()) std::memcpy(rebuilt.data() + record_batch_header_size, body.data(), body.size());
  uint8_t* p = rebuilt.data();
  detail::store_be<int32_t>(p + batch_field::batch_length, static_cast<int32_t>(rebuilt.size() - log_overhead));
  const int16_t attributes = static_cast<int16_t>((h.attributes & ~batch_attribute::compression_mask) |
                                                  static_cast<int16_t>(codec));
  detail::store_be<int16_t>(p + batch_field::attributes, attributes);
  if (h.ts_type() == timestamp_type::create_time && summary->max_timestamp >= 0) {
    detail::store_be<int64_t>(p + batch_field::max_timestamp, summary->max_timestamp);
  }
  recompute_crc(rebuilt);
  out.rebuilt = std::move(rebuilt);
  return out;
}

}  // namespace sluice::storage
