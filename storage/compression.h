#pragma once
// The four record batch codecs of Kafka (attribute bits 0-2), through their libraries: gzip (zlib), snappy
// (libsnappy), lz4 (liblz4 frame format) and zstd (libzstd). No codec is implemented here, only the
// framing Kafka clients put around the libraries' output:
//
//   gzip    RFC 1952 gzip members (Java's GZIPOutputStream, librdkafka); concatenated members are read too
//   snappy  xerial framing as the Java client writes it (SnappyOutputStream): the 16-byte header
//           0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0, int32 version, int32 compatible version, then chunks of
//           [int32 big-endian compressed length][raw snappy block]; a payload without that header is one
//           raw snappy block (what librdkafka writes; Java's SnappyInputStream accepts both)
//   lz4     the standard LZ4 frame (magic-2 batches, KIP-57); written with independent 64 KiB blocks and no
//           checksums, as Java's KafkaLZ4BlockOutputStream
//   zstd    zstd frames, read with the streaming API (clients may omit the content size), several frames
//           concatenated allowed
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/record_batch.h"

namespace sluice::storage {

/// Largest decompressed size accepted for the records of one batch (a bound against decompression bombs;
/// Kafka has none because it streams). A larger payload is errc::corrupt_message.
inline constexpr size_t max_decompressed_batch_bytes = size_t{256} << 20;

/// Decompresses the records part of a batch compressed with `codec` (not none). Errors:
/// errc::corrupt_message when the library rejects the data, the stream is truncated, or the output would
/// exceed `max_out` bytes.
sluice::result<std::vector<uint8_t>> decompress(compression_codec codec, std::span<const uint8_t> in,
                                                size_t max_out = max_decompressed_batch_bytes);

/// Compression levels of KIP-390 (topic keys compression.gzip.level, compression.lz4.level,
/// compression.zstd.level) with Kafka 4.0's defaults.
struct compression_levels {
  int gzip = -1;  // -1: zlib's default (6); else 1..9
  int lz4 = 9;    // 1..17 (>= 3: LZ4 HC)
  int zstd = 3;   // -131072..22
};

/// Compresses `in` with `codec` (not none) at the codec's level from `levels`; the framing as above
/// (snappy: xerial with 32 KiB chunks, as the Java client). Errors: errc::io_error if a library fails.
sluice::result<std::vector<uint8_t>> compress(compression_codec codec, std::span<const uint8_t> in,
                                              const compression_levels& levels = {});

/// Kafka's names: "none" (batch attribute; the topic setting says "uncompressed"), "gzip", "snappy", "lz4",
/// "zstd".
std::string_view codec_name(compression_codec codec);

/// Parses a topic compression.type value: "uncompressed", "gzip", "snappy", "lz4", "zstd" give that codec,
/// "producer" (keep what the producer sent) gives std::nullopt. Unknown values also give std::nullopt.
std::optional<compression_codec> parse_topic_compression_type(std::string_view value);

}  // namespace sluice::storage
