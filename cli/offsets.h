#pragma once
// ListOffsets for the CLI: the offset of a timestamp, or the earliest / latest offset, of partitions of one
// topic, each asked of its leader (KIP-79 timestamps; -2 earliest, -1 latest = the high watermark for
// read_uncommitted).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/cluster.h"

namespace sluice::cli {

inline constexpr int64_t earliest_timestamp = -2;
inline constexpr int64_t latest_timestamp = -1;

/// partition -> offset for `timestamp` (ms, or earliest/latest_timestamp). A partition with no record at or after
/// the timestamp gets -1 (Kafka's answer). Throws failure(kafka_error) on a partition error.
std::map<int32_t, int64_t> list_offsets(cluster& kafka, const topic_info& topic, const std::vector<int32_t>& partitions,
                                        int64_t timestamp);

}  // namespace sluice::cli
