// Compressed record batches (storage/compression.h, storage/log_validator.h): the batches are built here
// with the codec libraries directly, as clients build them, and go through log::append.
#include <gtest/gtest.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "storage/byte_order.h"
#include "storage/compression.h"
#include "storage/errc.h"
#include "storage/log.h"
#include "storage/log_validator.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::batches_in;
using testing::read_region;
using testing::temp_dir;

// ---- the libraries, as a client uses them ---------------------------------------------------------------

std::vector<uint8_t> lib_gzip(std::span<const uint8_t> in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, in.size()));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Raw snappy (one block), as librdkafka writes it.
std::vector<uint8_t> lib_snappy_raw(std::span<const uint8_t> in) {
  std::string out;
  snappy::Compress(reinterpret_cast<const char*>(in.data()), in.size(), &out);
  return {out.begin(), out.end()};
}

// xerial framing, as Java's SnappyOutputStream writes it, with small chunks to have several.
std::vector<uint8_t> lib_snappy_xerial(std::span<const uint8_t> in, size_t chunk = 50) {
  std::vector<uint8_t> out = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  for (size_t pos = 0; pos < in.size(); pos += chunk) {
    std::string block;
    snappy::Compress(reinterpret_cast<const char*>(in.data() + pos), std::min(chunk, in.size() - pos), &block);
    uint8_t len[4];
    detail::store_be<int32_t>(len, static_cast<int32_t>(block.size()));
    out.insert(out.end(), len, len + 4);
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

std::vector<uint8_t> lib_lz4(std::span<const uint8_t> in) {
  LZ4F_preferences_t prefs{};
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), &prefs));
  const size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

// Streaming zstd without a pledged size: the frame has no content size (as librdkafka's and zstd-jni's).
std::vector<uint8_t> lib_zstd_stream(std::span<const uint8_t> in) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()) + 64);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  ZSTD_outBuffer output{out.data(), out.size(), 0};
  size_t rc = 0;
  do {
    rc = ZSTD_compressStream2(cctx, &output, &input, ZSTD_e_end);
    EXPECT_FALSE(ZSTD_isError(rc));
  } while (rc != 0 && !ZSTD_isError(rc));
  ZSTD_freeCCtx(cctx);
  out.resize(output.pos);
  return out;
}

std::vector<uint8_t> lib_compress(compression_codec codec, std::span<const uint8_t> in) {
  switch (codec) {
    case compression_codec::gzip: return lib_gzip(in);
    case compression_codec::snappy: return lib_snappy_raw(in);
    case compression_codec::lz4: return lib_lz4(in);
    case compression_codec::zstd: return lib_zstd_stream(in);
    default: return {in.begin(), in.end()};
  }
}

// ---- batches ----------------------------------------------------------------------------------------------

std::vector<uint8_t> plain_batch(int records, int64_t ts = 5000, int64_t producer_id = -1) {
  record_batch_builder b;
  if (producer_id >= 0) b.set_producer(producer_id, 3, 0);
  for (int i = 0; i < records; ++i) {
    std::string v = "value-" + std::to_string(i) + std::string(40, 'a' + (i % 26));
    record_header h{"trace", std::string_view("abc")};
    b.add("key-" + std::to_string(i), v, ts + i * 7, std::span<const record_header>(&h, 1));
  }
  return b.build();
}

std::span<const uint8_t> records_of(const std::vector<uint8_t>& batch) {
  return std::span<const uint8_t>(batch).subspan(record_batch_header_size);
}

// The batch `plain` with its records part replaced by `payload` and the codec bits set; CRC recomputed.
std::vector<uint8_t> with_payload(const std::vector<uint8_t>& plain, compression_codec codec,
                                  std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(plain.begin(), plain.begin() + record_batch_header_size);
  out.insert(out.end(), payload.begin(), payload.end());
  detail::store_be<int32_t>(out.data() + batch_field::batch_length, static_cast<int32_t>(out.size() - log_overhead));
  const int16_t attrs = detail::load_be<int16_t>(out.data() + batch_field::attributes);
  detail::store_be<int16_t>(out.data() + batch_field::attributes,
                            static_cast<int16_t>((attrs & ~batch_attribute::compression_mask) | static_cast<int16_t>(codec)));
  recompute_crc(out);
  return out;
}

std::vector<uint8_t> compressed_batch(compression_codec codec, int records = 20, int64_t producer_id = -1) {
  const auto plain = plain_batch(records, 5000, producer_id);
  const auto payload = lib_compress(codec, records_of(plain));
  return with_payload(plain, codec, payload);
}

// The (key, value) pairs of a stored batch, decompressing it with our decompress().
std::vector<std::pair<std::string, std::string>> records_in(std::span<const uint8_t> batch) {
  auto h = validate_record_batch(batch);
  EXPECT_TRUE(h.ok());
  if (!h.ok()) return {};
  std::vector<uint8_t> plain(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(h->size_bytes()));
  if (h->compression() != compression_codec::none) {
    auto d = decompress(h->compression(), std::span<const uint8_t>(plain).subspan(record_batch_header_size));
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.err().message);
    if (!d.ok()) return {};
    plain = with_payload(plain, compression_codec::none, *d);
  }
  auto it = record_iterator::open(plain);
  EXPECT_TRUE(it.ok());
  std::vector<std::pair<std::string, std::string>> out;
  record_view r;
  while (it->next(r)) out.emplace_back(std::string(*r.key), std::string(*r.value));
  EXPECT_FALSE(it->error().has_value()) << it->error()->message;
  return out;
}

class CompressionTest : public ::testing::Test {
 protected:
  std::unique_ptr<log> open_log(log_config cfg = {}) {
    auto l = log::open(tmp_.path() / "t-0", cfg, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  // Everything the log stores, as bytes.
  std::vector<uint8_t> stored(log& l) {
    auto r = l.read(l.log_start_offset(), INT32_MAX, INT64_MAX, true);
    EXPECT_TRUE(r.ok());
    return r.ok() ? read_region(r->region) : std::vector<uint8_t>{};
  }
  temp_dir tmp_;
  manual_clock clock_;
};

constexpr compression_codec all_codecs[] = {compression_codec::gzip, compression_codec::snappy, compression_codec::lz4,
                                            compression_codec::zstd};

// ---- codec round trips -------------------------------------------------------------------------------------

TEST(Compression, OurCompressOutputIsReadByTheLibrariesAndBack) {
  std::vector<uint8_t> data(200000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 31) % 251 < 120 ? 'a' : i % 7);
  for (auto codec : all_codecs) {
    auto c = compress(codec, data);
    ASSERT_TRUE(c.ok()) << codec_name(codec);
    EXPECT_LT(c->size(), data.size()) << codec_name(codec);
    auto d = decompress(codec, *c);
    ASSERT_TRUE(d.ok()) << codec_name(codec) << ": " << d.err().message;
    EXPECT_EQ(*d, data) << codec_name(codec);
  }
  // Library-made payloads, with every framing a client uses.
  for (auto codec : all_codecs) {
    auto d = decompress(codec, lib_compress(codec, data));
    ASSERT_TRUE(d.ok()) << codec_name(codec) << ": " << d.err().message;
    EXPECT_EQ(*d, data) << codec_name(codec);
  }
  auto x = decompress(compression_codec::snappy, lib_snappy_xerial(data, 32768));
  ASSERT_TRUE(x.ok()) << x.err().message;
  EXPECT_EQ(*x, data);
  // Our snappy output is xerial framed (the Java client's format).
  auto s = compress(compression_codec::snappy, data);
  ASSERT_GE(s->size(), 16u);
  EXPECT_EQ(std::memcmp(s->data(), "\x82SNAPPY\0", 8), 0);
  // Two gzip members and two zstd frames back to back are read whole.
  auto g = lib_gzip(std::span<const uint8_t>(data).first(1000));
  auto g2 = lib_gzip(std::span<const uint8_t>(data).subspan(1000));
  g.insert(g.end(), g2.begin(), g2.end());
  EXPECT_EQ(*decompress(compression_codec::gzip, g), data);
  auto z = lib_zstd_stream(std::span<const uint8_t>(data).first(1000));
  auto z2 = lib_zstd_stream(std::span<const uint8_t>(data).subspan(1000));
  z.insert(z.end(), z2.begin(), z2.end());
  EXPECT_EQ(*decompress(compression_codec::zstd, z), data);
  // The output bound.
  auto big = decompress(compression_codec::zstd, lib_zstd_stream(data), 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.err().code, errc::corrupt_message);
}

TEST(Compression, LevelsAreApplied) {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>("the quick brown fox "[(i * 7 + i / 13) % 20]);
  compression_levels fast{1, 1, 1}, best{9, 17, 19};
  for (auto codec : {compression_codec::gzip, compression_codec::lz4, compression_codec::zstd}) {
    auto a = compress(codec, data, fast);
    auto b = compress(codec, data, best);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LE(b->size(), a->size()) << codec_name(codec);
    EXPECT_EQ(*decompress(codec, *b), data);
  }
}

TEST(Compression, TopicCompressionTypeNames) {
  EXPECT_FALSE(parse_topic_compression_type("producer").has_value());
  EXPECT_EQ(parse_topic_compression_type("uncompressed"), compression_codec::none);
  EXPECT_EQ(parse_topic_compression_type("gzip"), compression_codec::gzip);
  EXPECT_EQ(parse_topic_compression_type("snappy"), compression_codec::snappy);
  EXPECT_EQ(parse_topic_compression_type("lz4"), compression_codec::lz4);
  EXPECT_EQ(parse_topic_compression_type("zstd"), compression_codec::zstd);
}

// ---- log::append -------------------------------------------------------------------------------------------

TEST_F(CompressionTest, EachCodecIsValidatedAndStoredAsSent) {
  auto l = open_log();
  std::vector<std::vector<uint8_t>> sent;
  for (auto codec : all_codecs) {
    sent.push_back(compressed_batch(codec, 20));
    auto copy = sent.back();
    auto r = l->append(copy, 7);
    ASSERT_TRUE(r.ok()) << codec_name(codec) << ": " << r.err().message;
    EXPECT_EQ(r->record_count, 20);
  }
  EXPECT_EQ(l->log_end_offset(), 80);
  const auto bytes = stored(*l);
  const auto headers = batches_in(bytes);
  ASSERT_EQ(headers.size(), 4u);
  size_t pos = 0;
  for (size_t i = 0; i < headers.size(); ++i) {
    EXPECT_EQ(headers[i].compression(), all_codecs[i]);
    EXPECT_EQ(headers[i].base_offset, static_cast<int64_t>(20 * i));
    EXPECT_EQ(headers[i].partition_leader_epoch, 7);
    // Stored as sent: everything from the CRC on is the producer's bytes.
    ASSERT_EQ(static_cast<size_t>(headers[i].size_bytes()), sent[i].size());
    EXPECT_TRUE(std::equal(sent[i].begin() + batch_field::magic, sent[i].end(),
                           bytes.begin() + static_cast<std::ptrdiff_t>(pos + batch_field::magic)))
        << codec_name(all_codecs[i]);
    const auto recs = records_in(std::span<const uint8_t>(bytes).subspan(pos));
    ASSERT_EQ(recs.size(), 20u);
    EXPECT_EQ(recs[3].first, "key-3");
    EXPECT_EQ(recs[3].second.substr(0, 8), "value-3d");
    pos += static_cast<size_t>(headers[i].size_bytes());
  }
}

TEST_F(CompressionTest, XerialSnappyIsAccepted) {
  auto l = open_log();
  const auto plain = plain_batch(30);
  auto batch = with_payload(plain, compression_codec::snappy, lib_snappy_xerial(records_of(plain), 64));
  auto r = l->append(batch, 0);
  ASSERT_TRUE(r.ok()) << r.err().message;
  const auto recs = records_in(stored(*l));
  ASSERT_EQ(recs.size(), 30u);
  EXPECT_EQ(recs[29].first, "key-29");
  // A chunk length past the end of the payload.
  auto framed = lib_snappy_xerial(records_of(plain), 64);
  detail::store_be<int32_t>(framed.data() + 16, 1 << 20);
  auto bad = with_payload(plain, compression_codec::snappy, framed);
  auto e = l->append(bad, 0);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.err().code, errc::corrupt_message);
}

TEST_F(CompressionTest, CorruptCompressedPayloadIsCorruptMessageAndNothingIsWritten) {
  auto l = open_log();
  const auto plain = plain_batch(10);
  for (auto codec : all_codecs) {
    // Garbage with a valid CRC (a CRC mismatch is caught before): the codec must reject it.
    std::vector<uint8_t> garbage(300);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 11);
    auto batch = with_payload(plain, codec, garbage);
    auto r = l->append(batch, 0);
    ASSERT_FALSE(r.ok()) << codec_name(codec);
    EXPECT_EQ(r.err().code, errc::corrupt_message) << codec_name(codec) << ": " << r.err().message;
    // A truncated stream.
    auto good = lib_compress(codec, records_of(plain));
    good.resize(good.size() * 2 / 3);
    auto cut = with_payload(plain, codec, good);
    auto t = l->append(cut, 0);
    ASSERT_FALSE(t.ok()) << codec_name(codec);
    EXPECT_TRUE(t.err().code == errc::corrupt_message || t.err().code == errc::invalid_record)
        << codec_name(codec) << ": " << t.err().message;
  }
  // One bad batch after a good one: nothing of the append is written.
  auto two = compressed_batch(compression_codec::gzip, 5);
  std::vector<uint8_t> junk(100, 0x55);
  auto bad = with_payload(plain, compression_codec::zstd, junk);
  two.insert(two.end(), bad.begin(), bad.end());
  EXPECT_FALSE(l->append(two, 0).ok());
  EXPECT_EQ(l->log_end_offset(), 0);
  EXPECT_EQ(l->size_bytes(), 0);
}

TEST_F(CompressionTest, MalformedRecordsInsideAValidStreamAreInvalidRecord) {
  auto l = open_log();
  const auto plain = plain_batch(10);
  // recordsCount says 10, the compressed payload holds 9 records.
  auto nine = plain_batch(9);
  auto batch = with_payload(plain, compression_codec::lz4, lib_lz4(records_of(nine)));
  auto r = l->append(batch, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_record) << r.err().message;
  // Trailing bytes after the last record.
  auto extra = std::vector<uint8_t>(records_of(plain).begin(), records_of(plain).end());
  extra.push_back(0);
  auto b2 = with_payload(plain, compression_codec::gzip, lib_gzip(extra));
  auto r2 = l->append(b2, 0);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.err().code, errc::invalid_record) << r2.err().message;
  // A key length beyond its record.
  auto broken = std::vector<uint8_t>(records_of(plain).begin(), records_of(plain).end());
  // Record 0 (68 bytes): a 2-byte length varint, attributes, ts delta, offset delta, then the key length:
  // 0x7f is zig-zag -64, a negative length other than -1 (null).
  ASSERT_EQ(broken[0], 136);
  broken[5] = 0x7f;
  auto b3 = with_payload(plain, compression_codec::zstd, lib_zstd_stream(broken));
  auto r3 = l->append(b3, 0);
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.err().code, errc::invalid_record) << r3.err().message;
  EXPECT_EQ(l->log_end_offset(), 0);
}

TEST_F(CompressionTest, TopicCodecRecompressesKeepingProducerFields) {
  log_config cfg;
  cfg.compression_type = compression_codec::zstd;
  auto l = open_log(cfg);
  auto gz = compressed_batch(compression_codec::gzip, 25, /*producer_id=*/42);
  const auto sent_header = decode_record_batch_header(gz.data());
  auto r = l->append(gz, 5);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(r->record_count, 25);
  EXPECT_EQ(r->last_offset, 24);
  // A zstd batch is stored as sent; an uncompressed one is compressed too.
  auto zs = compressed_batch(compression_codec::zstd, 3);
  ASSERT_TRUE(l->append(zs, 5).ok());
  auto plain = plain_batch(4);
  ASSERT_TRUE(l->append(plain, 5).ok());
  const auto bytes = stored(*l);
  const auto headers = batches_in(bytes);  // CRCs checked
  ASSERT_EQ(headers.size(), 3u);
  for (const auto& h : headers) EXPECT_EQ(h.compression(), compression_codec::zstd);
  const auto& h = headers[0];
  EXPECT_EQ(h.producer_id, 42);
  EXPECT_EQ(h.producer_epoch, 3);
  EXPECT_EQ(h.base_sequence, 0);
  EXPECT_EQ(h.records_count, 25);
  EXPECT_EQ(h.last_offset_delta, 24);
  EXPECT_EQ(h.base_timestamp, sent_header.base_timestamp);
  EXPECT_EQ(h.max_timestamp, sent_header.max_timestamp);
  EXPECT_EQ(h.partition_leader_epoch, 5);
  EXPECT_EQ(headers[1].base_offset, 25);
  EXPECT_EQ(headers[2].base_offset, 28);
  const auto recs = records_in(bytes);
  ASSERT_EQ(recs.size(), 25u);
  const auto expected = records_in(plain_batch(25));
  EXPECT_EQ(recs, expected);
  // The producer state took the batch: its retry is a duplicate with the original offsets.
  auto retry = compressed_batch(compression_codec::gzip, 25, 42);
  auto d = l->append(retry, 5);
  ASSERT_TRUE(d.ok()) << d.err().message;
  EXPECT_TRUE(d->duplicate);
  EXPECT_EQ(d->base_offset, 0);
  // Survives a reopen (recovery scans the rebuilt batches).
  l.reset();
  l = open_log(cfg);
  EXPECT_EQ(l->log_end_offset(), 32);
}

TEST_F(CompressionTest, TopicUncompressedDecompressesAndGzipCompresses) {
  log_config cfg;
  cfg.compression_type = compression_codec::none;
  auto l = open_log(cfg);
  auto lz = compressed_batch(compression_codec::lz4, 12);
  ASSERT_TRUE(l->append(lz, 0).ok());
  auto bytes = stored(*l);
  auto headers = batches_in(bytes);
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers[0].compression(), compression_codec::none);
  EXPECT_EQ(records_in(bytes), records_in(plain_batch(12)));

  log_config gz;
  gz.compression_type = compression_codec::gzip;
  gz.compression_level.gzip = 1;
  l->update_config(gz);
  auto plain = plain_batch(6);
  ASSERT_TRUE(l->append(plain, 0).ok());
  bytes = stored(*l);
  headers = batches_in(bytes);
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[1].compression(), compression_codec::gzip);
  EXPECT_EQ(headers[1].base_offset, 12);
  EXPECT_EQ(records_in(std::span<const uint8_t>(bytes).subspan(static_cast<size_t>(headers[0].size_bytes()))),
            records_in(plain_batch(6)));
}

TEST_F(CompressionTest, RecompressedBatchAboveMaxMessageBytesIsRejected) {
  log_config cfg;
  cfg.compression_type = compression_codec::none;
  cfg.max_message_bytes = 1000;
  auto l = open_log(cfg);
  auto gz = compressed_batch(compression_codec::gzip, 40);  // ~3 KB of records, gzip makes it small
  ASSERT_LT(gz.size(), 1000u);
  auto r = l->append(gz, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::record_too_large);
}

TEST_F(CompressionTest, InnerOffsetsOutOfOrderAreRenumberedAndMaxTimestampCorrected) {
  auto l = open_log();
  // Records with offset deltas 0, 0, 0 (some old clients), and a header max timestamp that lies.
  std::vector<uint8_t> records;
  for (int i = 0; i < 3; ++i) {
    record_batch_builder one;
    one.add("k" + std::to_string(i), std::string("v") + std::to_string(i), 5000 + i * 10);
    auto b = one.build();
    records.insert(records.end(), b.begin() + record_batch_header_size, b.end());
  }
  auto plain = plain_batch(3);
  auto batch = with_payload(plain, compression_codec::gzip, lib_gzip(records));
  detail::store_be<int64_t>(batch.data() + batch_field::max_timestamp, 999999);
  recompute_crc(batch);
  ASSERT_TRUE(l->append(batch, 0).ok());
  const auto bytes = stored(*l);
  const auto h = batches_in(bytes);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].compression(), compression_codec::gzip);
  EXPECT_EQ(h[0].max_timestamp, 5000);  // every record: timestamp delta 0 from the base timestamp
  // The stored records carry offsets 0, 1, 2.
  auto d = decompress(compression_codec::gzip, std::span<const uint8_t>(bytes).subspan(record_batch_header_size));
  ASSERT_TRUE(d.ok());
  auto summary = check_records(*d, h[0]);
  ASSERT_TRUE(summary.ok());
  EXPECT_TRUE(summary->offsets_in_order);
  EXPECT_EQ((records_in(bytes)), (std::vector<std::pair<std::string, std::string>>{{"k0", "v0"}, {"k1", "v1"}, {"k2", "v2"}}));
  // A compressed batch with a correct header keeps its CRC: no rewrite at all.
  auto exact = compressed_batch(compression_codec::snappy, 4);
  const uint32_t crc = decode_record_batch_header(exact.data()).crc;
  ASSERT_TRUE(l->append(exact, 0).ok());
  EXPECT_EQ(batches_in(stored(*l)).back().crc, crc);
}

TEST_F(CompressionTest, LogAppendTimeOnACompressedBatch) {
  log_config cfg;
  cfg.message_timestamp_type = timestamp_type::log_append_time;
  auto l = open_log(cfg);
  auto zs = compressed_batch(compression_codec::zstd, 5);
  auto r = l->append(zs, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->log_append_time, clock_.now_ms());
  const auto h = batches_in(stored(*l));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].ts_type(), timestamp_type::log_append_time);
  EXPECT_EQ(h[0].max_timestamp, clock_.now_ms());
  EXPECT_EQ(h[0].compression(), compression_codec::zstd);
}

TEST_F(CompressionTest, UncompressedHotPathIsUntouched) {
  auto l = open_log();  // compression.type=producer
  auto plain = plain_batch(8);
  const auto sent = plain;
  ASSERT_TRUE(l->append(plain, 0).ok());
  const auto bytes = stored(*l);
  ASSERT_EQ(bytes.size(), sent.size());
  EXPECT_TRUE(std::equal(sent.begin() + batch_field::magic, sent.end(), bytes.begin() + batch_field::magic));
  EXPECT_FALSE(needs_record_validation(compression_codec::none, std::nullopt));
  EXPECT_FALSE(needs_record_validation(compression_codec::none, compression_codec::none));
  EXPECT_TRUE(needs_record_validation(compression_codec::none, compression_codec::lz4));
  EXPECT_TRUE(needs_record_validation(compression_codec::gzip, std::nullopt));
}

TEST_F(CompressionTest, UncompressedBatchWithMalformedRecordsIsRefused) {
  // A right CRC over records that do not parse (a record length varint pointing past the batch): Kafka's
  // in-place validation answers INVALID_RECORD; stored, it would stop every consumer at that offset.
  auto l = open_log();
  auto batch = plain_batch(1);
  const std::vector<uint8_t> garbage = {0x7f, 0xff, 0xff, 0x0f, 'x', 'x'};
  batch.resize(record_batch_header_size);
  batch.insert(batch.end(), garbage.begin(), garbage.end());
  detail::store_be<int32_t>(batch.data() + batch_field::batch_length, static_cast<int32_t>(batch.size() - log_overhead));
  recompute_crc(batch);
  ASSERT_TRUE(validate_record_batch(batch).ok());  // header and CRC are fine
  auto r = l->append(batch, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_record);
  EXPECT_EQ(l->log_end_offset(), 0);
}

}  // namespace
}  // namespace sluice::storage
