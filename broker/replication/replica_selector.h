#pragma once
// KIP-392 (fetch from follower): which replica a consumer should read a partition from. The leader asks this for
// a consumer's Fetch v11+ when replica.selector.class is Kafka's RackAwareReplicaSelector, and names the answer
// as the partition's preferred_read_replica; the consumer then fetches from that follower, which serves reads up
// to its own high watermark (broker/handlers/fetch.cc).
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace sluice::broker::replication {

/// One replica a consumer could read from (Kafka's ReplicaView).
struct replica_view {
  int32_t broker_id = -1;
  std::optional<std::string> rack;  // broker.rack of that broker as registered (nullopt: none)
  int64_t log_end_offset = 0;       // its LEO as the leader last saw it (the leader: its own)
  int64_t since_caught_up_ms = 0;   // ms since it last reached the leader's LEO (the leader: 0)
};

/// Kafka's RackAwareReplicaSelector: with a client rack, the leader when it is in that rack, else the replica of
/// that rack with the highest log end offset (ties: the one caught up most recently, then the lowest id, so the
/// answer does not depend on the candidates' order); the leader when no replica is in the client's rack or the
/// client names none. `followers` are the candidates the leader found (in the ISR, holding the fetch offset).
/// Returns the chosen follower's id, or nullopt for the leader (which a Fetch answer leaves unnamed).
std::optional<int32_t> select_rack_aware(const std::string& client_rack, const replica_view& leader,
                                         std::span<const replica_view> followers);

}  // namespace sluice::broker::replication
