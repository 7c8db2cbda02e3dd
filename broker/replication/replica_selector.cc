#include "broker/replication/replica_selector.h"

namespace sluice::broker::replication {

std::optional<int32_t> select_rack_aware(const std::string& client_rack, const replica_view& leader,
                                         std::span<const replica_view> followers) {
  if (client_rack.empty() || leader.rack == client_rack) return std::nullopt;
  const replica_view* best = nullptr;
  for (const auto& f : followers) {
    if (f.rack != client_rack || f.broker_id == leader.broker_id) continue;
    const bool better = best == nullptr || f.log_end_offset > best->log_end_offset ||
                        (f.log_end_offset == best->log_end_offset &&
                         (f.since_caught_up_ms < best->since_caught_up_ms ||
                          (f.since_caught_up_ms == best->since_caught_up_ms && f.broker_id < best->broker_id)));
    if (better) best = &f;
  }
  if (best == nullptr) return std::nullopt;
  return best->broker_id;
}

}  // namespace sluice::broker::replication
