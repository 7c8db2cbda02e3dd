#pragma once
// Cluster mode: waiting until this broker's cluster snapshot shows what an admin request just wrote.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "broker/handlers/handlers.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

/// Waits until this broker's cluster snapshot satisfies `ready`, at most `timeout_ms` on the injected clock;
/// returns whether it did. Woken by each snapshot the replica manager applies (topic_registry::sync), no
/// polling. Kafka's ZooKeeper-mode controller answers CreateTopics and CreatePartitions with a positive
/// timeout only once the new partitions have leaders in its metadata (DelayedCreatePartitions), so a
/// client's next admin request to the same broker finds them (librdkafka's 0081_admin creates topics and
/// grows them at once). Without it the answer leaves after the ZooKeeper write, before this broker's own
/// watch has brought the topic back.
inline task<bool> wait_for_snapshot(broker_services& svc, request_context& rc,
                                    std::function<bool(const coordination::cluster_snapshot&)> ready, int32_t timeout_ms) {
  const auto until = wait_deadline::after(svc.clock, timeout_ms);
  for (;;) {
    // Parked before looking, so a snapshot applied in between wakes it.
    auto waiter = std::make_shared<purgatory_waiter>(rc.executor);
    svc.topics.wake_on_next_snapshot(waiter);
    auto c = svc.topics.cluster();
    if (c && ready(*c)) co_return true;
    if (until.passed()) co_return false;
    parked_time parked(rc, svc.clock);  // waiting for metadata: not work (request quotas)
    auto op = waiter->wait(until);  // not inside co_await: GCC 12
    co_await std::move(op);
  }
}

/// True when `snapshot` has `topic` with at least `partitions` partitions, each with a leader.
inline bool has_leaders(const coordination::cluster_snapshot& snapshot, const std::string& topic, int32_t partitions) {
  auto it = snapshot.topics.find(topic);
  if (it == snapshot.topics.end() || it->second.partition_count() < partitions) return false;
  for (int32_t p = 0; p < partitions; ++p) {
    const auto* st = snapshot.state(topic, p);
    if (st == nullptr || st->leader < 0) return false;
  }
  return true;
}

/// CreateTopics and CreatePartitions with a positive timeout (cluster mode): waits until every (topic,
/// partition count) of `topics` has leaders in this broker's snapshot, at most `timeout_ms`; nothing to
/// wait for when `topics` is empty or the timeout is not positive. On timeout the partitions exist all the
/// same and the request is answered as it stands.
inline task<void> wait_for_leaders(broker_services& svc, request_context& rc,
                                   std::vector<std::pair<std::string, int32_t>> topics, int32_t timeout_ms) {
  if (topics.empty() || timeout_ms <= 0) co_return;
  auto wait_op = wait_for_snapshot(svc, rc, [topics = std::move(topics)](const coordination::cluster_snapshot& s) {
    return std::all_of(topics.begin(), topics.end(), [&](const auto& t) { return has_leaders(s, t.first, t.second); });
  }, timeout_ms);
  co_await std::move(wait_op);  // not inside co_await: GCC 12
}

}  // namespace sluice::broker::handlers
