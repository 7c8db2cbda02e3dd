#pragma once
// What the coordinator asks to make durable, in Kafka's CoordinatorShard shape: an operation does not write; it
// returns (or, for work a timer or another member's request started, queues) the __consumer_offsets records to
// append and what to answer once they are committed. The runtime that owns the partition appends them as one
// batch, waits for the high watermark, replays each record into the coordinator (`group_coordinator::replay`),
// and only then delivers the answer. Committed offsets and deletions change only by that replay, so a coordinator
// rebuilt from the log and one that served the requests hold the same offsets.
#include <cstdint>
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

/// The transactional producer whose batch a TxnOffsetCommit's records are appended in (KIP-98).
struct producer_stamp {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool operator==(const producer_stamp&) const = default;
};

/// Where a replayed record came from (Kafka's replay(offset, producerId, producerEpoch, record)): its offset in the
/// __consumer_offsets partition (-1: unknown) and its batch's producer; records of a transactional batch are that
/// producer's pending transactional offsets.
struct record_context {
  int64_t offset = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool transactional = false;
};

/// Kafka's CoordinatorResult for a request: `records` to append atomically (empty: nothing to write, answer at
/// once), `response` to give once they are committed and replayed, and `failed(error)` to give instead when the
/// append failed (`error` is the append's outcome, Kafka's number: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
/// REQUEST_TIMED_OUT, MESSAGE_TOO_LARGE, INVALID_PRODUCER_EPOCH, ...; `failed` maps it as Kafka does for that API
/// and undoes what the operation reserved). `producer` set (TxnOffsetCommit): the records are appended as that
/// producer's transactional batch, and replayed as its pending offsets.
template <typename R>
struct coordinator_result {
  std::vector<group_record> records;
  R response;
  std::function<R(group_error)> failed;
  std::optional<producer_stamp> producer;
};

/// An append no request waits for directly (the leader's assignment, a static member's new id, an emptied group,
/// expired offsets): the records, and `done(error)` run on the coordinator's strand after the outcome is known
/// (after the replay on success). Taken by the runtime with `group_coordinator::take_writes()`.
struct group_write {
  std::vector<group_record> records;
  std::function<void(group_error)> done;
};

}  // namespace sluice::groups
