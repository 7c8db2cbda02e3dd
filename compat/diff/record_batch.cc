#include "compat/diff/record_batch.h"

#include <zlib.h>

#include <array>
#include <cstdio>
#include <stdexcept>

namespace sluice::diff {
namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

void put_be(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_uvarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
void put_varint(std::vector<uint8_t>& out, int64_t v) {
  put_uvarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
uint64_t get_be(std::span<const uint8_t> b, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | b[pos + i];
  return v;
}

int64_t int_of(const boost::json::object& o, const char* key, int64_t dflt) {
  auto it = o.find(key);
  if (it == o.end()) return dflt;
  return it->value().to_number<int64_t>();
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&z, in.size()) + 32);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

std::vector<uint8_t> one_record(int64_t ts_delta, int32_t offset_delta, const boost::json::value* key,
                                const std::string& value, const boost::json::object* headers) {
  std::vector<uint8_t> body;
  body.push_back(0);  // attributes
  put_varint(body, ts_delta);
  put_varint(body, offset_delta);
  if (key == nullptr || key->is_null()) {
    put_varint(body, -1);
  } else {
    const auto& k = key->as_string();
    put_varint(body, static_cast<int64_t>(k.size()));
    body.insert(body.end(), k.begin(), k.end());
  }
  put_varint(body, static_cast<int64_t>(value.size()));
  body.insert(body.end(), value.begin(), value.end());
  put_varint(body, headers ? static_cast<int64_t>(headers->size()) : 0);
  if (headers) {
    for (const auto& h : *headers) {
      put_varint(body, static_cast<int64_t>(h.key().size()));
      body.insert(body.end(), h.key().begin(), h.key().end());
      const auto& v = h.value().as_string();
      put_varint(body, static_cast<int64_t>(v.size()));
      body.insert(body.end(), v.begin(), v.end());
    }
  }
  std::vector<uint8_t> out;
  put_varint(out, static_cast<int64_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::vector<uint8_t> build_batches(const boost::json::object& spec, int64_t base_ms) {
  const int64_t count = int_of(spec, "count", 1);
  const int64_t batches = int_of(spec, "batches", 1);
  if (count < 0 || count > 100000 || batches < 1 || batches > 1000) throw std::runtime_error("records: bad count");
  std::string codec = "none";
  if (auto it = spec.find("codec"); it != spec.end()) codec = std::string(it->value().as_string());
  if (codec != "none" && codec != "gzip") throw std::runtime_error("records: codec must be none or gzip");
  const boost::json::array* ts = spec.contains("ts") ? &spec.at("ts").as_array() : nullptr;
  const boost::json::array* ts_abs = spec.contains("ts_abs") ? &spec.at("ts_abs").as_array() : nullptr;
  const boost::json::object* headers = spec.contains("headers") ? &spec.at("headers").as_object() : nullptr;
  const int64_t value_size = int_of(spec, "value_size", -1);
  std::vector<uint8_t> out;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> stamps;
    for (int64_t i = 0; i < count; ++i) {
      if (ts_abs && static_cast<size_t>(i) < ts_abs->size())
        stamps.push_back((*ts_abs)[i].to_number<int64_t>());
      else if (ts && static_cast<size_t>(i) < ts->size())
        stamps.push_back(base_ms + (*ts)[i].to_number<int64_t>());
      else
        stamps.push_back(base_ms + i);
    }
    const int64_t first_ts = stamps.empty() ? base_ms : stamps[0];
    int64_t max_ts = stamps.empty() ? -1 : stamps[0];
    std::vector<uint8_t> recs;
    for (int64_t i = 0; i < count; ++i) {
      max_ts = std::max(max_ts, stamps[i]);
      boost::json::value key = boost::json::string("k" + std::to_string(i));
      if (auto it = spec.find("key"); it != spec.end()) {
        // One key for every record, or an array of keys by record index (null: no key).
        key = it->value().is_array() && i < static_cast<int64_t>(it->value().as_array().size())
                  ? it->value().as_array()[static_cast<size_t>(i)]
                  : it->value();
      }
      std::string value = "v" + std::to_string(i);
      if (auto it = spec.find("value"); it != spec.end()) value = std::string(it->value().as_string());
      if (value_size >= 0) value.assign(static_cast<size_t>(value_size), 'x');
      auto r = one_record(stamps[i] - first_ts, static_cast<int32_t>(i), &key, value, headers);
      recs.insert(recs.end(), r.begin(), r.end());
    }
    int16_t attributes = static_cast<int16_t>(int_of(spec, "attributes", 0));
    if (codec == "gzip") {
      recs = gzip(recs);
      attributes |= 1;
    }
    std::vector<uint8_t> tail;  // from attributes on: what the crc covers
    put_be(tail, static_cast<uint16_t>(attributes), 2);
    put_be(tail, static_cast<uint32_t>(int_of(spec, "last_offset_delta", count > 0 ? count - 1 : 0)), 4);
    put_be(tail, static_cast<uint64_t>(first_ts), 8);
    put_be(tail, static_cast<uint64_t>(max_ts), 8);
    put_be(tail, static_cast<uint64_t>(int_of(spec, "producer_id", -1)), 8);
    put_be(tail, static_cast<uint16_t>(int_of(spec, "producer_epoch", -1)), 2);
    put_be(tail, static_cast<uint32_t>(int_of(spec, "base_sequence", -1) + (count > 0 ? b * count : 0) *
                                       (int_of(spec, "base_sequence", -1) >= 0 ? 1 : 0)), 4);
    put_be(tail, static_cast<uint32_t>(count), 4);
    tail.insert(tail.end(), recs.begin(), recs.end());
    uint32_t crc = crc32c(tail);
    if (spec.contains("bad_crc") && spec.at("bad_crc").as_bool()) crc ^= 0x5A5A5A5Au;
    put_be(out, static_cast<uint64_t>(int_of(spec, "base_offset", 0)), 8);
    put_be(out, static_cast<uint32_t>(4 + 1 + 4 + tail.size()), 4);  // leader epoch, magic, crc, rest
    put_be(out, 0xFFFFFFFFu, 4);                                       // partition leader epoch: -1 from clients
    out.push_back(static_cast<uint8_t>(int_of(spec, "magic", 2)));
    put_be(out, crc, 4);
    out.insert(out.end(), tail.begin(), tail.end());
  }
  const int64_t truncate = int_of(spec, "truncate", 0);
  if (truncate > 0) out.resize(out.size() > static_cast<size_t>(truncate) ? out.size() - truncate : 0);
  return out;
}

boost::json::array describe_batches(std::span<const uint8_t> b) {
  boost::json::array out;
  size_t pos = 0;
  for (int guard = 0; guard < 100000 && pos < b.size(); ++guard) {
    if (b.size() - pos < 61) {
      out.push_back(boost::json::object{{"partial_bytes", b.size() - pos}});
      break;
    }
    const int64_t batch_length = static_cast<int32_t>(get_be(b, pos + 8, 4));
    if (batch_length < 49 || static_cast<size_t>(batch_length) > b.size() - pos - 12) {
      out.push_back(boost::json::object{{"partial_bytes", b.size() - pos}});
      break;
    }
    const auto whole = b.subspan(pos, static_cast<size_t>(batch_length) + 12);
    const auto records = whole.subspan(61);
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64 of the records (compressed payload when compressed)
    for (uint8_t c : records) h = (h ^ c) * 1099511628211ull;
    char digest[32];
    std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h));
    boost::json::object o;
    o["base_offset"] = static_cast<int64_t>(get_be(whole, 0, 8));
    o["batch_length"] = batch_length;
    o["partition_leader_epoch"] = static_cast<int32_t>(get_be(whole, 12, 4));
    o["magic"] = static_cast<int8_t>(whole[16]);
    o["crc_ok"] = static_cast<uint32_t>(get_be(whole, 17, 4)) == crc32c(whole.subspan(21));
    o["attributes"] = static_cast<int16_t>(get_be(whole, 21, 2));
    o["last_offset_delta"] = static_cast<int32_t>(get_be(whole, 23, 4));
    o["base_timestamp"] = static_cast<int64_t>(get_be(whole, 27, 8));
    o["max_timestamp"] = static_cast<int64_t>(get_be(whole, 35, 8));
    o["producer_id"] = static_cast<int64_t>(get_be(whole, 43, 8));
    o["producer_epoch"] = static_cast<int16_t>(get_be(whole, 51, 2));
    o["base_sequence"] = static_cast<int32_t>(get_be(whole, 53, 4));
    o["record_count"] = static_cast<int32_t>(get_be(whole, 57, 4));
    o["records_digest"] = digest;
    out.push_back(std::move(o));
    pos += whole.size();
  }
  return out;
}

}  // namespace sluice::diff
