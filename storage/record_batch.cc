#include "storage/record_batch.h"

#include <algorithm>
#include <string>

#include "storage/byte_order.h"
#include "storage/crc32c.h"
#include "storage/errc.h"

namespace sluice::storage {

using detail::load_be;
using detail::store_be;

record_batch_header decode_record_batch_header(const uint8_t* p) {
  record_batch_header h;
  h.base_offset = load_be<int64_t>(p + batch_field::base_offset);
  h.batch_length = load_be<int32_t>(p + batch_field::batch_length);
  h.partition_leader_epoch = load_be<int32_t>(p + batch_field::partition_leader_epoch);
  h.magic = static_cast<int8_t>(p[batch_field::magic]);
  h.crc = load_be<uint32_t>(p + batch_field::crc);
  h.attributes = load_be<int16_t>(p + batch_field::attributes);
  h.last_offset_delta = load_be<int32_t>(p + batch_field::last_offset_delta);
  h.base_timestamp = load_be<int64_t>(p + batch_field::base_timestamp);
  h.max_timestamp = load_be<int64_t>(p + batch_field::max_timestamp);
  h.producer_id = load_be<int64_t>(p + batch_field::producer_id);
  h.producer_epoch = load_be<int16_t>(p + batch_field::producer_epoch);
  h.base_sequence = load_be<int32_t>(p + batch_field::base_sequence);
  h.records_count = load_be<int32_t>(p + batch_field::records_count);
  return h;
}

sluice::result<record_batch_header> parse_record_batch_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < static_cast<size_t>(log_overhead)) {
    return make_error(errc::corrupt_message,
                      "record batch truncated: " + std::to_string(bytes.size()) + " bytes, need 12");
  }
  const int32_t batch_length = load_be<int32_t>(bytes.data() + batch_field::batch_length);
  if (bytes.size() <= static_cast<size_t>(batch_field::magic) || batch_length < 5) {
    return make_error(errc::corrupt_message, "record batch truncated before its magic byte");
  }
  const int8_t magic = static_cast<int8_t>(bytes[batch_field::magic]);
  if (magic != record_batch_magic_v2) {
    return make_error(errc::unsupported_magic, "record batch magic " + std::to_string(magic) + ", only 2 supported");
  }
  if (batch_length < record_batch_header_size - log_overhead) {
    return make_error(errc::corrupt_message,
                      "record batch length " + std::to_string(batch_length) + " below the v2 header size");
  }
  const int64_t size = int64_t{batch_length} + log_overhead;
  if (static_cast<int64_t>(bytes.size()) < size) {
    return make_error(errc::corrupt_message, "record batch of " + std::to_string(size) + " bytes truncated at " +
                                                 std::to_string(bytes.size()));
  }
  return decode_record_batch_header(bytes.data());
}

uint32_t compute_record_batch_crc(std::span<const uint8_t> batch) {
  return crc32c(batch.subspan(batch_field::attributes));
}

sluice::result<record_batch_header> validate_record_batch(std::span<const uint8_t> bytes) {
  auto h = parse_record_batch_header(bytes);
  if (!h) return h;
  const uint32_t actual = compute_record_batch_crc(bytes.first(static_cast<size_t>(h->size_bytes())));
  if (actual != h->crc) {
    return make_error(errc::corrupt_message, "record batch at base offset " + std::to_string(h->base_offset) +
                                                 ": CRC32C mismatch (stored " + std::to_string(h->crc) +
                                                 ", computed " + std::to_string(actual) + ")");
  }
  return h;
}

void set_base_offset(std::span<uint8_t> batch, int64_t base_offset) {
  store_be<int64_t>(batch.data() + batch_field::base_offset, base_offset);
}

void set_partition_leader_epoch(std::span<uint8_t> batch, int32_t leader_epoch) {
  store_be<int32_t>(batch.data() + batch_field::partition_leader_epoch, leader_epoch);
}

void recompute_crc(std::span<uint8_t> batch) {
  store_be<uint32_t>(batch.data() + batch_field::crc, compute_record_batch_crc(batch));
}

void set_log_append_time(std::span<uint8_t> batch, int64_t timestamp_ms) {
  int16_t attributes = load_be<int16_t>(batch.data() + batch_field::attributes);
  attributes = static_cast<int16_t>(attributes | batch_attribute::timestamp_type_bit);
  store_be<int16_t>(batch.data() + batch_field::attributes, attributes);
  store_be<int64_t>(batch.data() + batch_field::max_timestamp, timestamp_ms);
  recompute_crc(batch);
}

void set_max_timestamp(std::span<uint8_t> batch, int64_t timestamp_ms) {
  store_be<int64_t>(batch.data() + batch_field::max_timestamp, timestamp_ms);
  recompute_crc(batch);
}

// ---- varints (zig-zag, protobuf style) ----------------------------------------------------------------

namespace {

// base + delta as Java's long arithmetic computes it (Kafka's DefaultRecord: baseOffset + offsetDelta,
// baseTimestamp + timestampDelta): a client's values may overflow, which must wrap, not be undefined.
int64_t wrapping_add(int64_t base, int64_t delta) {
  return static_cast<int64_t>(static_cast<uint64_t>(base) + static_cast<uint64_t>(delta));
}

void put_varlong(std::vector<uint8_t>& out, int64_t value) {
  uint64_t v = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

void put_varint(std::vector<uint8_t>& out, int32_t value) { put_varlong(out, value); }

void put_bytes(std::vector<uint8_t>& out, std::optional<std::string_view> bytes) {
  if (!bytes) {
    put_varint(out, -1);
    return;
  }
  put_varint(out, static_cast<int32_t>(bytes->size()));
  out.insert(out.end(), bytes->begin(), bytes->end());
}

// Bounds-checked reader over one record's bytes.
struct varint_reader {
  std::span<const uint8_t> buf;
  size_t pos = 0;
  bool ok = true;

  int64_t varlong(int max_bytes = 10) {
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (pos >= buf.size()) break;
      const uint8_t b = buf[pos++];
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
    }
    ok = false;
    return 0;
  }
  int32_t varint() {
    const int64_t v = varlong(5);
    if (v < INT32_MIN || v > INT32_MAX) ok = false;
    return static_cast<int32_t>(v);
  }
  int8_t int8() {
    if (pos >= buf.size()) {
      ok = false;
      return 0;
    }
    return static_cast<int8_t>(buf[pos++]);
  }
  // A length-prefixed byte string; -1 is null, other negatives are malformed.
  std::optional<std::string_view> bytes(bool nullable) {
    const int32_t n = varint();
    if (!ok) return std::nullopt;
    if (n == -1 && nullable) return std::nullopt;
    if (n < 0 || static_cast<size_t>(n) > buf.size() - pos) {
      ok = false;
      return std::nullopt;
    }
    std::string_view s(reinterpret_cast<const char*>(buf.data() + pos), static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return s;
  }
};

}  // namespace

// ---- record_iterator ----------------------------------------------------------------------------------

sluice::result<record_iterator> record_iterator::open(std::span<const uint8_t> batch) {
  auto h = parse_record_batch_header(batch);
  if (!h) return h.err();
  if (h->compression() != compression_codec::none) {
    return make_error(errc::invalid_argument, "record_iterator reads uncompressed batches only (codec " +
                                                  std::to_string(static_cast<int>(h->compression())) + ")");
  }
  const auto records = batch.subspan(record_batch_header_size,
                                     static_cast<size_t>(h->size_bytes()) - record_batch_header_size);
  return record_iterator(*h, records);
}

bool record_iterator::fail(const char* what) {
  error_ = make_error(errc::invalid_record, "record " + std::to_string(index_) + " of batch at base offset " +
                                                std::to_string(header_.base_offset) + ": " + what);
  return false;
}

bool record_iterator::next(record_view& out) {
  if (error_) return false;
  if (index_ >= header_.records_count) {
    if (pos_ != records_.size()) return fail("bytes left after the last record");
    return false;
  }
  if (pos_ >= records_.size()) return fail("batch ends before recordsCount records");
  varint_reader outer{records_.subspan(pos_)};
  const int32_t length = outer.varint();
  if (!outer.ok || length < 0 || static_cast<size_t>(length) > outer.buf.size() - outer.pos) {
    return fail("bad record length");
  }
  varint_reader r{outer.buf.subspan(outer.pos, static_cast<size_t>(length))};
  r.int8();  // record attributes: unused in v2
  const int64_t timestamp_delta = r.varlong();
  const int32_t offset_delta = r.varint();
  auto key = r.bytes(true);
  auto value = r.bytes(true);
  const int32_t header_count = r.varint();
  if (!r.ok || header_count < 0 || static_cast<size_t>(header_count) > r.buf.size() - r.pos) {
    return fail("malformed record fields");
  }
  out.headers.clear();
  for (int32_t i = 0; i < header_count; ++i) {
    auto hkey = r.bytes(false);
    auto hvalue = r.bytes(true);
    if (!r.ok) return fail("malformed record header");
    out.headers.push_back(record_header{*hkey, hvalue});
  }
  if (r.pos != r.buf.size()) return fail("record length does not match its fields");
  out.offset = wrapping_add(header_.base_offset, offset_delta);
  out.timestamp = header_.ts_type() == timestamp_type::log_append_time
                      ? header_.max_timestamp
                      : wrapping_add(header_.base_timestamp, timestamp_delta);
  out.key = key;
  out.value = value;
  pos_ += outer.pos + static_cast<size_t>(length);
  ++index_;
  return true;
}

// ---- check_records / renumber_records -----------------------------------------------------------------

namespace {

// One record's fields, parsed from `buf` at `pos` (the length varint first). False when malformed.
struct parsed_record {
  size_t begin = 0;       // the length varint
  size_t body = 0;        // first byte after the length varint (attributes)
  size_t after_offset = 0;  // first byte after the offsetDelta varint (the key length)
  size_t end = 0;         // one past the record
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  bool key_null = false;
};

// A zigzag varint of at most `max_bytes` bytes from [p, end) into `out`; the byte after it, or nullptr when it is
// truncated or longer. The check loop of every record of every produced batch: pointers, and one branch for the
// one-byte varints that most fields of small records are.
inline const uint8_t* read_varlong(const uint8_t* p, const uint8_t* end, int max_bytes, int64_t& out) {
  if (p < end && *p < 0x80) {
    const uint64_t v = *p;
    out = static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
    return p + 1;
  }
  uint64_t v = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (p == end) return nullptr;
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      out = static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
      return p;
    }
  }
  return nullptr;
}

inline const uint8_t* read_varint(const uint8_t* p, const uint8_t* end, int32_t& out) {
  int64_t v = 0;
  p = read_varlong(p, end, 5, v);
  if (p == nullptr || v < INT32_MIN || v > INT32_MAX) return nullptr;
  out = static_cast<int32_t>(v);
  return p;
}

// A length-prefixed byte string in [p, end): the byte after it, or nullptr when malformed. -1 (null) only when
// `nullable`; `is_null` tells which.
inline const uint8_t* skip_bytes(const uint8_t* p, const uint8_t* end, bool nullable, bool& is_null) {
  int32_t n = 0;
  p = read_varint(p, end, n);
  is_null = false;
  if (p == nullptr) return nullptr;
  if (n == -1 && nullable) {
    is_null = true;
    return p;
  }
  if (n < 0 || n > end - p) return nullptr;
  return p + n;
}

const char* parse_record(std::span<const uint8_t> buf, size_t pos, parsed_record& out) {
  const uint8_t* const base = buf.data();
  const uint8_t* p = base + pos;
  int32_t length = 0;
  p = read_varint(p, base + buf.size(), length);
  if (p == nullptr || length < 0 || length > (base + buf.size()) - p) return "bad record length";
  const uint8_t* const end = p + length;
  out.begin = pos;
  out.body = static_cast<size_t>(p - base);
  out.end = static_cast<size_t>(end - base);
  if (p == end) return "malformed record fields";
  out.attributes = static_cast<int8_t>(*p++);
  bool null = false;
  int32_t header_count = 0;
  if ((p = read_varlong(p, end, 10, out.timestamp_delta)) == nullptr ||
      (p = read_varint(p, end, out.offset_delta)) == nullptr) {
    return "malformed record fields";
  }
  out.after_offset = static_cast<size_t>(p - base);
  if ((p = skip_bytes(p, end, true, out.key_null)) == nullptr || (p = skip_bytes(p, end, true, null)) == nullptr ||
      (p = read_varint(p, end, header_count)) == nullptr || header_count < 0 || header_count > end - p) {
    return "malformed record fields";
  }
  for (int32_t i = 0; i < header_count; ++i) {
    if ((p = skip_bytes(p, end, false, null)) == nullptr || (p = skip_bytes(p, end, true, null)) == nullptr) {
      return "malformed record header";
    }
  }
  if (p != end) return "record length does not match its fields";
  return nullptr;
}

}  // namespace

sluice::result<records_summary> check_records(std::span<const uint8_t> records, const record_batch_header& header,
                                              const record_rules& rules) {
  records_summary summary;
  const bool timestamps = rules.check_timestamps && header.ts_type() == timestamp_type::create_time;
  size_t pos = 0;
  auto fail = [&](int32_t index, const std::string& what) {
    return make_error(errc::invalid_record, "record " + std::to_string(index) + " of batch with " +
                                                std::to_string(header.records_count) + " records: " + what);
  };
  for (int32_t i = 0; i < header.records_count; ++i) {
    if (pos >= records.size()) return fail(i, "premature end of the records (declared count too large)");
    parsed_record rec;
    if (const char* err = parse_record(records, pos, rec)) return fail(i, err);
    if (rec.offset_delta != i) summary.offsets_in_order = false;
    const int64_t ts = wrapping_add(header.base_timestamp, rec.timestamp_delta);
    summary.max_timestamp = std::max(summary.max_timestamp, ts);
    // Kafka's validateKey, then validateTimestamp (-1 is "no timestamp" and never out of range).
    if (rules.key_required && rec.key_null) {
      summary.rejected.push_back({i, false, "Compacted topic cannot accept message without key"});
    } else if (timestamps && ts != -1 && (ts < rules.min_timestamp || ts > rules.max_timestamp)) {
      summary.rejected.push_back({i, true, "Timestamp " + std::to_string(ts) + " of message with offset " +
                                               std::to_string(wrapping_add(header.base_offset, rec.offset_delta)) +
                                               " is out of range. The timestamp should be within [" +
                                               std::to_string(rules.min_timestamp) + ", " +
                                               std::to_string(rules.max_timestamp) + "]"});
    }
    pos = rec.end;
  }
  if (pos != records.size()) {
    return fail(header.records_count, std::to_string(records.size() - pos) + " bytes left after the last record");
  }
  return summary;
}

std::vector<uint8_t> renumber_records(std::span<const uint8_t> records, int32_t count) {
  std::vector<uint8_t> out;
  out.reserve(records.size() + 16);
  std::vector<uint8_t> body;
  size_t pos = 0;
  for (int32_t i = 0; i < count && pos < records.size(); ++i) {
    parsed_record rec;
    if (parse_record(records, pos, rec) != nullptr) break;  // checked before: cannot happen
    body.clear();
    body.push_back(static_cast<uint8_t>(rec.attributes));
    put_varlong(body, rec.timestamp_delta);
    put_varint(body, i);
    body.insert(body.end(), records.begin() + static_cast<std::ptrdiff_t>(rec.after_offset),
                records.begin() + static_cast<std::ptrdiff_t>(rec.end));
    put_varint(out, static_cast<int32_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    pos = rec.end;
  }
  return out;
}

// ---- record_batch_builder -----------------------------------------------------------------------------

record_batch_builder& record_batch_builder::set_base_offset(int64_t base_offset) {
  base_offset_ = base_offset;
  return *this;
}
record_batch_builder& record_batch_builder::set_partition_leader_epoch(int32_t leader_epoch) {
  partition_leader_epoch_ = leader_epoch;
  return *this;
}
record_batch_builder& record_batch_builder::set_producer(int64_t producer_id, int16_t producer_epoch,
                                                         int32_t base_sequence) {
  producer_id_ = producer_id;
  producer_epoch_ = producer_epoch;
  base_sequence_ = base_sequence;
  return *this;
}
record_batch_builder& record_batch_builder::set_timestamp_type(timestamp_type type) {
  if (type == timestamp_type::log_append_time) {
    attributes_ = static_cast<int16_t>(attributes_ | batch_attribute::timestamp_type_bit);
  } else {
    attributes_ = static_cast<int16_t>(attributes_ & ~batch_attribute::timestamp_type_bit);
  }
  return *this;
}
record_batch_builder& record_batch_builder::set_transactional() {
  attributes_ = static_cast<int16_t>(attributes_ | batch_attribute::transactional_bit);
  return *this;
}
record_batch_builder& record_batch_builder::set_control() {
  attributes_ = static_cast<int16_t>(attributes_ | batch_attribute::control_bit);
  return *this;
}

void encode_record(std::vector<uint8_t>& out, int32_t offset_delta, int64_t timestamp_delta,
                   std::optional<std::string_view> key, std::optional<std::string_view> value,
                   std::span<const record_header> headers) {
  std::vector<uint8_t> body;
  body.reserve(16 + (key ? key->size() : 0) + (value ? value->size() : 0));
  body.push_back(0);  // attributes
  put_varlong(body, timestamp_delta);
  put_varint(body, offset_delta);
  put_bytes(body, key);
  put_bytes(body, value);
  put_varint(body, static_cast<int32_t>(headers.size()));
  for (const auto& h : headers) {
    put_bytes(body, h.key);
    put_bytes(body, h.value);
  }
  put_varint(out, static_cast<int32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
}

record_batch_builder& record_batch_builder::add(std::optional<std::string_view> key,
                                                std::optional<std::string_view> value, int64_t timestamp_ms,
                                                std::span<const record_header> headers) {
  if (count_ == 0) base_timestamp_ = timestamp_ms;
  if (timestamp_ms > max_timestamp_) max_timestamp_ = timestamp_ms;
  encode_record(records_, count_, timestamp_ms - base_timestamp_, key, value, headers);
  ++count_;
  return *this;
}

std::vector<uint8_t> record_batch_builder::build() const {
  std::vector<uint8_t> out(size_bytes());
  uint8_t* p = out.data();
  store_be<int64_t>(p + batch_field::base_offset, base_offset_);
  store_be<int32_t>(p + batch_field::batch_length, static_cast<int32_t>(out.size() - log_overhead));
  store_be<int32_t>(p + batch_field::partition_leader_epoch, partition_leader_epoch_);
  p[batch_field::magic] = static_cast<uint8_t>(record_batch_magic_v2);
  store_be<int16_t>(p + batch_field::attributes, attributes_);
  store_be<int32_t>(p + batch_field::last_offset_delta, count_ > 0 ? count_ - 1 : 0);
  store_be<int64_t>(p + batch_field::base_timestamp, base_timestamp_);
  store_be<int64_t>(p + batch_field::max_timestamp, max_timestamp_);
  store_be<int64_t>(p + batch_field::producer_id, producer_id_);
  store_be<int16_t>(p + batch_field::producer_epoch, producer_epoch_);
  store_be<int32_t>(p + batch_field::base_sequence, base_sequence_);
  store_be<int32_t>(p + batch_field::records_count, count_);
  std::copy(records_.begin(), records_.end(), out.begin() + record_batch_header_size);
  recompute_crc(out);
  return out;
}

}  // namespace sluice::storage
