#pragma once
// Reading and writing a coordinator's internal-topic partition (__consumer_offsets today, __transaction_state
// next): the two halves every coordinator shard needs from the log, independent of what its records mean.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "broker/partition.h"
#include "protocol/error_code.h"

namespace sluice::broker::coordinator {

using record_bytes = std::vector<uint8_t>;

/// One internal-topic record: key bytes and value bytes, or no value for a tombstone.
struct internal_record {
  record_bytes key;
  std::optional<record_bytes> value;
};

/// Appends one batch of internal records with acks=-1 and completes once the high watermark passes it (Kafka's
/// coordinators write with required acks -1 and answer when the write is committed: a commit acknowledged by a
/// coordinator survives its failover).
///
/// Strand: the partition's; `append` and `done` run there (`done` may run before `append` returns).
class internal_writer {
 public:
  /// `commit_timeout_ms`: how long to wait for the ISR (offsets.commit.timeout.ms,
  /// transaction.state.log... for the transaction coordinator); `min_insync_replicas`: read at each append.
  internal_writer(std::shared_ptr<partition> part, sluice::clock& clock, int64_t commit_timeout_ms,
                  std::function<int32_t()> min_insync_replicas);

  /// Appends `records` as one uncompressed batch stamped with the clock's wall time. `done` gets NONE once the
  /// high watermark passed the batch; else the append's error (e.g. NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
  /// MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR) or how the wait ended: NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR shrank
  /// below the minimum meanwhile), NOT_LEADER_OR_FOLLOWER (leadership moved), REQUEST_TIMED_OUT.
  void append(const std::vector<internal_record>& records, std::function<void(protocol::error_code)> done);

 private:
  std::shared_ptr<partition> part_;
  sluice::clock& clock_;
  int64_t commit_timeout_ms_;
  std::function<int32_t()> min_insync_replicas_;
};

/// Reads every record of `part` from its log start to its log end offset (a new leader loads everything it has,
/// as Kafka's coordinator loader does), in offset order, calling `visit(key, value)` for each keyed record of
/// uncompressed data batches (control batches and keyless records skipped). Returns the number of records
/// visited; a read error stops the replay there (logged). On the partition's strand.
size_t replay_log(partition& part,
                  const std::function<void(const record_bytes& key, const std::optional<record_bytes>& value)>& visit);

}  // namespace sluice::broker::coordinator
