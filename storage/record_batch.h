#pragma once
// The v2 record batch (magic 2, KIP-98; Kafka's DefaultRecordBatch). Storage treats batches as opaque
// bytes except for this 61-byte header:
//
//   offset  size  field                  in CRC
//        0     8  baseOffset             no   (set by the log on append)
//        8     4  batchLength            no   (bytes after this field: total size - 12)
//       12     4  partitionLeaderEpoch   no   (set by the log on append)
//       16     1  magic (= 2)            no
//       17     4  crc (CRC32C, unsigned) no
//       21     2  attributes             yes  bits 0-2 compression, 3 timestamp type, 4 transactional,
//       23     4  lastOffsetDelta        yes       5 control, 6 delete horizon (KIP-534)
//       27     8  baseTimestamp          yes
//       35     8  maxTimestamp           yes
//       43     8  producerId             yes
//       51     2  producerEpoch          yes
//       53     4  baseSequence           yes
//       57     4  recordsCount           yes
//       61        records...             yes
//
// Each record (uncompressed): length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
// keyLength varint (-1 = null), key, valueLength varint (-1 = null), value, headerCount varint, then per
// header: keyLength varint, key, valueLength varint (-1 = null), value. Varints are zig-zag (protobuf).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sluice::storage {

inline constexpr int8_t record_batch_magic_v2 = 2;
/// baseOffset + batchLength: the bytes of a batch not counted by batchLength.
inline constexpr int32_t log_overhead = 12;
inline constexpr int32_t record_batch_header_size = 61;

namespace batch_field {
inline constexpr int base_offset = 0;
inline constexpr int batch_length = 8;
inline constexpr int partition_leader_epoch = 12;
inline constexpr int magic = 16;
inline constexpr int crc = 17;
inline constexpr int attributes = 21;
inline constexpr int last_offset_delta = 23;
inline constexpr int base_timestamp = 27;
inline constexpr int max_timestamp = 35;
inline constexpr int producer_id = 43;
inline constexpr int producer_epoch = 51;
inline constexpr int base_sequence = 53;
inline constexpr int records_count = 57;
}  // namespace batch_field

/// Compression codec, attribute bits 0-2.
enum class compression_codec : uint8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };
/// Timestamp type, attribute bit 3 (KIP-32): CreateTime set by the producer, LogAppendTime by the broker.
enum class timestamp_type : uint8_t { create_time = 0, log_append_time = 1 };

namespace batch_attribute {
inline constexpr int16_t compression_mask = 0x07;
inline constexpr int16_t timestamp_type_bit = 0x08;
inline constexpr int16_t transactional_bit = 0x10;
inline constexpr int16_t control_bit = 0x20;
inline constexpr int16_t delete_horizon_bit = 0x40;
}  // namespace batch_attribute

/// The decoded fixed header of one v2 batch.
struct record_batch_header {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  int32_t partition_leader_epoch = -1;
  int8_t magic = record_batch_magic_v2;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = -1;
  int64_t max_timestamp = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t records_count = 0;

  /// Whole batch size in bytes (batchLength + 12).
  int64_t size_bytes() const { return int64_t{batch_length} + log_overhead; }
  int64_t last_offset() const { return base_offset + last_offset_delta; }
  compression_codec compression() const {
    return static_cast<compression_codec>(attributes & batch_attribute::compression_mask);
  }
  timestamp_type ts_type() const {
    return (attributes & batch_attribute::timestamp_type_bit) ? timestamp_type::log_append_time
                                                              : timestamp_type::create_time;
  }
  bool is_transactional() const { return (attributes & batch_attribute::transactional_bit) != 0; }
  bool is_control() const { return (attributes & batch_attribute::control_bit) != 0; }
  bool has_delete_horizon() const { return (attributes & batch_attribute::delete_horizon_bit) != 0; }
};

/// Decodes the 61 header bytes at `p` without any check.
record_batch_header decode_record_batch_header(const uint8_t* p);

/// Parses the header of the batch at the start of `bytes` (which may hold further batches after it).
/// Checks: at least 12 bytes, magic == 2 (errc::unsupported_magic; the magic byte sits at offset 16 in
/// every message format, so v0/v1 message sets are recognised), batchLength >= 49, and the whole batch
/// (batchLength + 12 bytes) within `bytes`; else errc::corrupt_message. Does not check the CRC.
sluice::result<record_batch_header> parse_record_batch_header(std::span<const uint8_t> bytes);

/// parse_record_batch_header plus the CRC32C over attributes..end (errc::corrupt_message on mismatch).
sluice::result<record_batch_header> validate_record_batch(std::span<const uint8_t> bytes);

/// CRC32C of a whole batch's checksummed part (bytes 21..end). `batch` is exactly one batch.
uint32_t compute_record_batch_crc(std::span<const uint8_t> batch);

/// In-place edits of one whole batch. Base offset and partition leader epoch lie outside the CRC; the
/// others recompute it.
void set_base_offset(std::span<uint8_t> batch, int64_t base_offset);
void set_partition_leader_epoch(std::span<uint8_t> batch, int32_t leader_epoch);
void recompute_crc(std::span<uint8_t> batch);
/// Marks the batch LogAppendTime with `timestamp_ms` as its max timestamp (Kafka's
/// DefaultRecordBatch.setMaxTimestamp): readers then give every record this timestamp. Recomputes the CRC.
void set_log_append_time(std::span<uint8_t> batch, int64_t timestamp_ms);
/// Sets the max timestamp (CreateTime) of the batch and recomputes the CRC.
void set_max_timestamp(std::span<uint8_t> batch, int64_t timestamp_ms);

/// A record header; key is never null, value may be.
struct record_header {
  std::string_view key;
  std::optional<std::string_view> value;
};

/// One record of a batch, its fields viewing the batch bytes (or the decompressed records of a compressed batch).
struct record_view {
  int64_t offset = 0;
  int64_t timestamp = -1;  // LogAppendTime batches: the batch max timestamp
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<record_header> headers;
};

/// Walks the records of one v2 batch: open() for an UNCOMPRESSED batch as stored, over_records() for the
/// decompressed records of a compressed one. The bytes must outlive the iterator and its views.
///   auto it = record_iterator::open(bytes); record_view r; while (it->next(r)) { ... }
///   if (it->error()) { malformed }
class record_iterator {
 public:
  /// `batch` starts with one whole batch (extra bytes after it are ignored). Header errors as
  /// parse_record_batch_header (the CRC is not checked here); a compressed batch is errc::invalid_argument.
  static sluice::result<record_iterator> open(std::span<const uint8_t> batch);

  /// Walks `records`, the record bytes of the batch described by `header` (for a compressed batch, its
  /// decompressed payload; see decompress() in compression.h). Offsets and timestamps come from `header`
  /// (LogAppendTime: every record gets header.max_timestamp). `records` must outlive the iterator.
  static record_iterator over_records(const record_batch_header& header, std::span<const uint8_t> records) {
    return record_iterator(header, records);
  }

  /// Fills `out` with the next record; false at the end or when a record is malformed (then error() is set:
  /// errc::invalid_record), or when the batch holds fewer records than recordsCount says.
  bool next(record_view& out);
  const std::optional<sluice::error>& error() const { return error_; }
  const record_batch_header& header() const { return header_; }

 private:
  record_iterator(record_batch_header h, std::span<const uint8_t> records) : header_(h), records_(records) {}
  bool fail(const char* what);

  record_batch_header header_;
  std::span<const uint8_t> records_;
  size_t pos_ = 0;
  int32_t index_ = 0;
  std::optional<sluice::error> error_;
};

/// Per-record rules of Kafka's LogValidator.validateRecord for a client's batch (validateKey, validateTimestamp).
struct record_rules {
  bool key_required = false;  // cleanup.policy contains `compact`: a record without a key is refused
  /// CreateTime records: timestamps outside [min_timestamp, max_timestamp] (now - message.timestamp.before.max.ms,
  /// now + message.timestamp.after.max.ms, saturated) are refused. Off for LogAppendTime topics.
  bool check_timestamps = false;
  int64_t min_timestamp = INT64_MIN;
  int64_t max_timestamp = INT64_MAX;
};

/// One record a rule refused (Kafka's ProduceResponse RecordError; Produce v8+ answers them).
struct record_error {
  int32_t batch_index;  // the record's index in its batch
  bool timestamp;       // true: INVALID_TIMESTAMP (out-of-range timestamp); false: INVALID_RECORD (no key)
  std::string message;
};

/// What check_records learnt of the records of one batch.
struct records_summary {
  bool offsets_in_order = true;  // the offset deltas are 0, 1, ..., recordsCount - 1
  int64_t max_timestamp = -1;    // largest record timestamp (baseTimestamp + timestampDelta)
  std::vector<record_error> rejected;  // records the rules refused, in batch order (empty without rules)
};

/// Walks the `header.records_count` records in `records` (the record bytes after the 61-byte header; for
/// a compressed batch its decompressed payload) as Kafka's DefaultRecord.readFrom and the record iterator
/// of LogValidator do: every length and varint within bounds, key/value/header lengths >= -1 (header keys
/// not null) and inside their record, each record's fields exactly filling its length, exactly
/// recordsCount records and no byte after the last. Errors: errc::invalid_record (Kafka's
/// InvalidRecordException, INVALID_RECORD) naming the record index.
/// With `rules`, each record is also checked against them and the ones refused are listed in
/// records_summary::rejected (the walk goes on: Kafka reports every refused record of the batch).
sluice::result<records_summary> check_records(std::span<const uint8_t> records, const record_batch_header& header,
                                              const record_rules& rules = {});

/// The same records with their offset deltas renumbered 0..n-1 (Kafka rewrites a compressed batch whose
/// inner offsets are not in order rather than rejecting it). `records` must have passed check_records.
std::vector<uint8_t> renumber_records(std::span<const uint8_t> records, int32_t count);

/// Appends one record in the v2 record format (length varint, attributes 0, timestampDelta varlong, offsetDelta
/// varint, key, value, headers) to `out`. For rebuilding a batch with chosen offset deltas (compaction).
void encode_record(std::vector<uint8_t>& out, int32_t offset_delta, int64_t timestamp_delta,
                   std::optional<std::string_view> key, std::optional<std::string_view> value,
                   std::span<const record_header> headers);

/// Builds one uncompressed v2 batch, for the broker's internal topics (consumer offsets, transaction
/// markers) and for tests. The base timestamp is the first record's; offsets are 0-based deltas.
class record_batch_builder {
 public:
  record_batch_builder& set_base_offset(int64_t base_offset);
  record_batch_builder& set_partition_leader_epoch(int32_t leader_epoch);
  record_batch_builder& set_producer(int64_t producer_id, int16_t producer_epoch, int32_t base_sequence);
  record_batch_builder& set_timestamp_type(timestamp_type type);
  record_batch_builder& set_transactional();
  record_batch_builder& set_control();

  /// Adds a record with the next offset delta. `timestamp_ms` is CreateTime milliseconds.
  record_batch_builder& add(std::optional<std::string_view> key, std::optional<std::string_view> value,
                            int64_t timestamp_ms, std::span<const record_header> headers = {});

  int32_t record_count() const { return count_; }
  /// Size of the batch build() returns.
  size_t size_bytes() const { return record_batch_header_size + records_.size(); }
  /// The batch bytes with a valid CRC32C. A builder with no records gives a batch of recordsCount 0
  /// (which the log rejects).
  std::vector<uint8_t> build() const;

 private:
  int64_t base_offset_ = 0;
  int32_t partition_leader_epoch_ = -1;
  int64_t producer_id_ = -1;
  int16_t producer_epoch_ = -1;
  int32_t base_sequence_ = -1;
  int16_t attributes_ = 0;
  int64_t base_timestamp_ = -1;
  int64_t max_timestamp_ = -1;
  int32_t count_ = 0;
  std::vector<uint8_t> records_;
};

}  // namespace sluice::storage
