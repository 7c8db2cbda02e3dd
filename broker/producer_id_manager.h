#pragma once
// Hands out producer ids for idempotent producers (KIP-98; Kafka's ProducerIdManager): ids come from
// blocks of 1000 reserved through the coordination layer (coordination::cluster_store::
// allocate_producer_id_block, Kafka's /latest_producer_id_block), so an id is never handed out twice,
// across restarts and across brokers. A restart abandons the rest of the current block, as in Kafka.
#include <cstdint>
#include <mutex>
#include <optional>

#include "base/result.h"
#include "coordination/cluster_store.h"

namespace sluice::broker {

/// Thread-safe (one mutex; InitProducerId is not on the data path).
class producer_id_manager {
 public:
  producer_id_manager(coordination::cluster_store& store, int32_t broker_id) : store_(store), broker_id_(broker_id) {}

  /// The next unused producer id. Reserves (and persists) a new block when the current one is used up.
  /// Errors: the store's (coordination::errc::io_error) when no block can be reserved.
  result<int64_t> generate_producer_id();

 private:
  coordination::cluster_store& store_;
  int32_t broker_id_;
  std::mutex mutex_;
  std::optional<coordination::producer_id_block> block_;
  int64_t next_ = 0;
};

}  // namespace sluice::broker
