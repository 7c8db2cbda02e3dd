#pragma once
// record_batch: builds v2 record batches for requests from a scenario's JSON spec, and turns the
// `records` bytes of responses into JSON (batch header fields plus a digest of the records) so that
// Fetch answers compare field by field. Kafka protocol guide "Record Batch" (magic 2).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>

namespace sluice::diff {

/// CRC-32C (Castagnoli) of `data`, as the v2 batch header's crc.
uint32_t crc32c(std::span<const uint8_t> data);

/// Bytes of one or more batches from `spec` (an object; every key optional):
///   count (records per batch, 1), batches (how many, 1), codec ("none" | "gzip"), key (string or null,
///   "k<i>"), value (string, "v<i>"), value_size (bytes, overrides value), ts (array of ms relative to
///   `base_ms`, per record; default i), ts_abs (array of absolute ms), producer_id (-1), producer_epoch
///   (-1), base_sequence (-1), attributes (extra attribute bits, e.g. 16 transactional), magic (2),
///   bad_crc (false), base_offset (0), last_offset_delta (override), truncate (drop that many bytes
///   at the end), headers ({"name": "value"}).
/// Throws std::runtime_error on an invalid spec.
std::vector<uint8_t> build_batches(const boost::json::object& spec, int64_t base_ms);

/// JSON of the batches in `bytes`: [{base_offset, batch_length, partition_leader_epoch, magic, crc_ok,
/// attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
/// base_sequence, record_count, records_digest}], a trailing partial batch as {"partial_bytes": n}.
boost::json::array describe_batches(std::span<const uint8_t> bytes);

}  // namespace sluice::diff
