#pragma once
// Kafka's offset checkpoint files (OffsetCheckpointFile), one of each per log dir:
// "recovery-point-offset-checkpoint" and "log-start-offset-checkpoint". Text:
//   0                       <- version
//   2                       <- number of entries
//   orders 0 1234           <- topic, partition, offset (space separated)
//   orders 1 987
// Written to "<name>.tmp", fsynced, renamed over the old file, then the directory is fsynced.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"

namespace sluice::storage {

using topic_partition = std::pair<std::string, int32_t>;
using offset_checkpoint = std::map<topic_partition, int64_t>;

inline constexpr const char* recovery_point_checkpoint_file = "recovery-point-offset-checkpoint";
inline constexpr const char* log_start_offset_checkpoint_file = "log-start-offset-checkpoint";

/// Reads a checkpoint file; a missing file is an empty map. Malformed content: errc::corrupt_message.
sluice::result<offset_checkpoint> read_offset_checkpoint(const std::filesystem::path& file);

/// Replaces `file` with `text`: written to "<file>.tmp", fsynced, renamed, directory fsynced. errc::io_error.
sluice::result<void> write_file_atomically(const std::filesystem::path& file, std::string_view text);

/// Replaces `file` atomically with `entries`. errc::io_error.
sluice::result<void> write_offset_checkpoint(const std::filesystem::path& file, const offset_checkpoint& entries);

}  // namespace sluice::storage
