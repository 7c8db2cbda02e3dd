#pragma once
// Where the coordinator writes what must survive: records of the internal topic __consumer_offsets.
#include <functional>
#include <optional>
#include <vector>

#include "broker/groups/group_types.h"

namespace sluice::groups {

/// One __consumer_offsets record: key bytes and value bytes, or no value for a tombstone.
struct group_record {
  bytes key;
  std::optional<bytes> value;
  bool operator==(const group_record&) const = default;
};

/// Append-only sink for one __consumer_offsets partition. The broker implements it as an append to the
/// partition's log (through the partition's strand); tests implement it in memory.
class group_log {
 public:
  virtual ~group_log() = default;
  /// Appends `records` atomically (one record batch) and calls `done` once with the Kafka error of the
  /// append (none on success; e.g. NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT,
  /// MESSAGE_TOO_LARGE). `done` must run on the coordinator's strand; it may run before append returns.
  virtual void append(std::vector<group_record> records, std::function<void(group_error)> done) = 0;
};

}  // namespace sluice::groups
