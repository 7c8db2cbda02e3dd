#include "storage/compression.h"

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

namespace {

using detail::load_be;
using detail::store_be;

sluice::error corrupt(compression_codec codec, const std::string& what) {
  return make_error(errc::corrupt_message, std::string("corrupt ") + std::string(codec_name(codec)) +
                                               " payload: " + what);
}

sluice::error too_large(compression_codec codec, size_t max_out) {
  return corrupt(codec, "decompresses to more than " + std::to_string(max_out) + " bytes");
}

// Grows `out` (keeping `used` bytes) for at least one more chunk; false if `max_out` is reached.
bool grow(std::vector<uint8_t>& out, size_t used, size_t max_out) {
  if (used >= max_out) return false;
  const size_t want = std::min(max_out, std::max<size_t>(used * 2, 64 * 1024));
  out.resize(want);
  return true;
}

// ---- gzip -----------------------------------------------------------------------------------------

sluice::result<std::vector<uint8_t>> gzip_decompress(std::span<const uint8_t> in, size_t max_out) {
  z_stream zs{};
  // 15 + 32: gzip or zlib header, detected (clients write gzip; zlib streams cost nothing to accept).
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return make_error(errc::io_error, "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<uint8_t> out;
  size_t used = 0;
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  bool ended = false;
  while (true) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(compression_codec::gzip, max_out);
    zs.next_out = out.data() + used;
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, UINT32_MAX));
    const uInt before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    used += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      ended = true;
      if (zs.avail_in == 0) break;
      // Another gzip member follows (GZIPInputStream reads concatenated members).
      if (inflateReset(&zs) != Z_OK) return corrupt(compression_codec::gzip, "inflateReset failed");
      ended = false;
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;  // no progress possible: input exhausted mid-stream
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return corrupt(compression_codec::gzip, zs.msg ? zs.msg : "inflate error " + std::to_string(rc));
    }
    if (zs.avail_in == 0 && zs.avail_out != 0) break;  // all input consumed but no end of stream
  }
  if (!ended) return corrupt(compression_codec::gzip, "truncated stream");
  out.resize(used);
  return out;
}

sluice::result<std::vector<uint8_t>> gzip_compress(std::span<const uint8_t> in, int level) {
  z_stream zs{};
  // 15 + 16: a gzip wrapper, as Java's GZIPOutputStream and librdkafka.
  if (deflateInit2(&zs, level < 0 ? Z_DEFAULT_COMPRESSION : level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return make_error(errc::io_error, "deflateInit2 failed (level " + std::to_string(level) + ")");
  }
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, deflateEnd);
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) return make_error(errc::io_error, "deflate did not finish");
  out.resize(zs.total_out);
  return out;
}

// ---- snappy -----------------------------------------------------------------------------------------

constexpr uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t xerial_header_size = 16;
constexpr size_t xerial_block_size = 32 * 1024;  // SnappyOutputStream's default block size

bool snappy_raw_append(std::span<const uint8_t> block, std::vector<uint8_t>& out, size_t max_out,
                       sluice::error& err) {
  const char* src = reinterpret_cast<const char*>(block.data());
  size_t n = 0;
  if (!snappy::GetUncompressedLength(src, block.size(), &n)) {
    err = corrupt(compression_codec::snappy, "bad block length");
    return false;
  }
  if (n > max_out - out.size()) {
    err = too_large(compression_codec::snappy, max_out);
    return false;
  }
  // The length is the block's own claim: check the block decodes to exactly that many bytes (a walk over its
  // tags, O(block size), writing nothing) before allocating them. Else a few hundred bytes claiming 256 MiB
  // made the broker allocate and zero that much per block before the decoder refused it (found by fuzzing).
  if (!snappy::IsValidCompressedBuffer(src, block.size())) {
    err = corrupt(compression_codec::snappy, "bad block");
    return false;
  }
  const size_t at = out.size();
  out.resize(at + n);
  if (!snappy::RawUncompress(src, block.size(), reinterpret_cast<char*>(out.data() + at))) {
    err = corrupt(compression_codec::snappy, "bad block");
    return false;
  }
  return true;
}

sluice::result<std::vector<uint8_t>> snappy_decompress(std::span<const uint8_t> in, size_t max_out) {
  std::vector<uint8_t> out;
  sluice::error err{};
  if (in.size() >= xerial_header_size && std::memcmp(in.data(), xerial_magic, sizeof xerial_magic) == 0) {
    // xerial framing: the two version ints are not checked (the Java reader only requires the magic).
    size_t pos = xerial_header_size;
    while (pos < in.size()) {
      if (in.size() - pos < 4) return corrupt(compression_codec::snappy, "truncated xerial chunk length");
      const int32_t len = load_be<int32_t>(in.data() + pos);
      pos += 4;
      if (len < 0 || static_cast<size_t>(len) > in.size() - pos) {
        return corrupt(compression_codec::snappy, "xerial chunk of " + std::to_string(len) + " bytes truncated");
      }
      if (!snappy_raw_append(in.subspan(pos, static_cast<size_t>(len)), out, max_out, err)) return err;
      pos += static_cast<size_t>(len);
    }
    return out;
  }
  if (!snappy_raw_append(in, out, max_out, err)) return err;
  return out;
}

sluice::result<std::vector<uint8_t>> snappy_compress(std::span<const uint8_t> in) {
  std::vector<uint8_t> out(xerial_header_size);
  std::memcpy(out.data(), xerial_magic, sizeof xerial_magic);
  store_be<int32_t>(out.data() + 8, 1);   // version
  store_be<int32_t>(out.data() + 12, 1);  // minimum compatible version
  for (size_t pos = 0; pos < in.size(); pos += xerial_block_size) {
    const size_t n = std::min(xerial_block_size, in.size() - pos);
    const size_t at = out.size();
    out.resize(at + 4 + snappy::MaxCompressedLength(n));
    size_t written = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(in.data() + pos), n, reinterpret_cast<char*>(out.data() + at + 4),
                        &written);
    store_be<int32_t>(out.data() + at, static_cast<int32_t>(written));
    out.resize(at + 4 + written);
  }
  return out;
}

// ---- lz4 --------------------------------------------------------------------------------------------

sluice::result<std::vector<uint8_t>> lz4_decompress(std::span<const uint8_t> in, size_t max_out) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return make_error(errc::io_error, "LZ4F_createDecompressionContext failed");
  }
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> ctx(raw, LZ4F_freeDecompressionContext);
  std::vector<uint8_t> out;
  size_t used = 0;
  size_t pos = 0;
  size_t hint = 1;  // != 0: inside a frame
  if (in.empty()) return corrupt(compression_codec::lz4, "empty payload");
  while (pos < in.size()) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(compression_codec::lz4, max_out);
    size_t dst = out.size() - used;
    size_t src = in.size() - pos;
    hint = LZ4F_decompress(ctx.get(), out.data() + used, &dst, in.data() + pos, &src, nullptr);
    if (LZ4F_isError(hint)) return corrupt(compression_codec::lz4, LZ4F_getErrorName(hint));
    pos += src;
    used += dst;
    if (src == 0 && dst == 0 && used != out.size()) return corrupt(compression_codec::lz4, "no progress");
  }
  // Flush what the context still holds (output buffer was full on the last call).
  while (hint != 0) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(compression_codec::lz4, max_out);
    size_t dst = out.size() - used;
    size_t src = 0;
    hint = LZ4F_decompress(ctx.get(), out.data() + used, &dst, nullptr, &src, nullptr);
    if (LZ4F_isError(hint)) return corrupt(compression_codec::lz4, LZ4F_getErrorName(hint));
    used += dst;
    if (dst == 0) break;
  }
  if (hint != 0) return corrupt(compression_codec::lz4, "truncated frame");
  out.resize(used);
  return out;
}

sluice::result<std::vector<uint8_t>> lz4_compress(std::span<const uint8_t> in, int level) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
  prefs.compressionLevel = level;
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), &prefs));
  const size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) return make_error(errc::io_error, std::string("LZ4F_compressFrame: ") + LZ4F_getErrorName(n));
  out.resize(n);
  return out;
}

// ---- zstd -------------------------------------------------------------------------------------------

sluice::result<std::vector<uint8_t>> zstd_decompress(std::span<const uint8_t> in, size_t max_out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return make_error(errc::io_error, "ZSTD_createDCtx failed");
  if (in.empty()) return corrupt(compression_codec::zstd, "empty payload");
  std::vector<uint8_t> out;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t used = 0;
  size_t rc = 1;  // != 0: inside a frame
  while (input.pos < input.size || rc != 0) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(compression_codec::zstd, max_out);
    ZSTD_outBuffer output{out.data(), out.size(), used};
    const size_t in_before = input.pos;
    rc = ZSTD_decompressStream(ctx.get(), &output, &input);
    if (ZSTD_isError(rc)) return corrupt(compression_codec::zstd, ZSTD_getErrorName(rc));
    const bool progressed = output.pos != used || input.pos != in_before;
    used = output.pos;
    if (rc != 0 && input.pos == input.size && output.pos < output.size) {
      return corrupt(compression_codec::zstd, "truncated frame");
    }
    if (!progressed && output.pos < output.size) return corrupt(compression_codec::zstd, "no progress");
  }
  out.resize(used);
  return out;
}

sluice::result<std::vector<uint8_t>> zstd_compress(std::span<const uint8_t> in, int level) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
  if (ZSTD_isError(n)) return make_error(errc::io_error, std::string("ZSTD_compress: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

}  // namespace

sluice::result<std::vector<uint8_t>> decompress(compression_codec codec, std::span<const uint8_t> in, size_t max_out) {
  switch (codec) {
    case compression_codec::gzip: return gzip_decompress(in, max_out);
    case compression_codec::snappy: return snappy_decompress(in, max_out);
    case compression_codec::lz4: return lz4_decompress(in, max_out);
    case compression_codec::zstd: return zstd_decompress(in, max_out);
    case compression_codec::none: break;
  }
  return make_error(errc::corrupt_message, "unknown compression codec " + std::to_string(static_cast<int>(codec)));
}

sluice::result<std::vector<uint8_t>> compress(compression_codec codec, std::span<const uint8_t> in,
                                              const compression_levels& levels) {
  switch (codec) {
    case compression_codec::gzip: return gzip_compress(in, levels.gzip);
    case compression_codec::snappy: return snappy_compress(in);
    case compression_codec::lz4: return lz4_compress(in, levels.lz4);
    case compression_codec::zstd: return zstd_compress(in, levels.zstd);
    case compression_codec::none: break;
  }
  return make_error(errc::invalid_argument, "compress: no codec " + std::to_string(static_cast<int>(codec)));
}

std::string_view codec_name(compression_codec codec) {
  switch (codec) {
    case compression_codec::none: return "none";
    case compression_codec::gzip: return "gzip";
    case compression_codec::snappy: return "snappy";
    case compression_codec::lz4: return "lz4";
    case compression_codec::zstd: return "zstd";
  }
  return "unknown";
}

std::optional<compression_codec> parse_topic_compression_type(std::string_view value) {
  if (value == "uncompressed") return compression_codec::none;
  if (value == "gzip") return compression_codec::gzip;
  if (value == "snappy") return compression_codec::snappy;
  if (value == "lz4") return compression_codec::lz4;
  if (value == "zstd") return compression_codec::zstd;
  return std::nullopt;
}

}  // namespace sluice::storage
