#pragma once
// The part of Kafka's LogValidator (validateMessagesAndAssignOffsetsCompressed) that needs the records of a
// batch: only batches that are compressed, or that must be stored with another codec than they carry, come
// here; uncompressed batches for a topic whose compression.type is `producer` or `uncompressed` keep the
// header-only hot path of log::append.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "storage/compression.h"
#include "storage/record_batch.h"

namespace sluice::storage {

struct validated_batch {
  /// A new batch to store instead of the one sent: recompressed to the topic's codec, or with its inner
  /// offset deltas renumbered (base offset, leader epoch, producer id/epoch, base sequence, the
  /// transactional/control bits and the timestamps of the original; CRC valid). Empty: store as sent.
  std::optional<std::vector<uint8_t>> rebuilt;
  /// The largest record timestamp (CreateTime). Kafka writes it into the batch header when it differs.
  int64_t max_timestamp = -1;
  /// Records `rules` refused (check_records); when not empty, `rebuilt` is empty and the batch must not be stored.
  std::vector<record_error> rejected;
};

/// Whether a batch with codec `source` needs validate_batch_records on a topic whose compression.type is
/// `target` (std::nullopt: `producer`).
inline bool needs_record_validation(compression_codec source, std::optional<compression_codec> target) {
  return source != compression_codec::none || (target && *target != source);
}

/// Decompresses `batch` (one whole batch, header `h`, CRC already checked) if it is compressed, checks its
/// records (check_records), and rebuilds it when `target` (the topic's codec; std::nullopt: `producer`, keep
/// the producer's) differs from its codec or its offset deltas are not 0..n-1 (Kafka rewrites rather than
/// rejects those). Errors: errc::corrupt_message when the payload does not decompress (Kafka throws a
/// KafkaException there, which its broker answers UNKNOWN_SERVER_ERROR; CORRUPT_MESSAGE tells the client
/// what is wrong), errc::invalid_record for malformed records (Kafka's InvalidRecordException). Records that
/// break `rules` are returned in validated_batch::rejected.
sluice::result<validated_batch> validate_batch_records(std::span<const uint8_t> batch, const record_batch_header& h,
                                                       std::optional<compression_codec> target,
                                                       const compression_levels& levels,
                                                       const record_rules& rules = {});

}  // namespace sluice::storage
