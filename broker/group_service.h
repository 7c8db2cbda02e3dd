#pragma once
// The broker's consumer group coordinators: one groups::group_coordinator per __consumer_offsets
// partition, each owned by that partition's strand, persisted by appending to that partition.
#include <atomic>
#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/error_map.h"
#include "broker/partition.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::broker {

class topic_registry;

inline constexpr std::string_view consumer_offsets_topic = "__consumer_offsets";

/// Threading: `shard_for`/`shards` may be called from any strand (they read an immutable snapshot);
/// `ensure_topic` serializes creation with a mutex. Everything inside a shard (the coordinator, its
/// timer, its log) is touched only on `shard::strand()` = the __consumer_offsets partition's strand, so
/// the coordinator's appends run synchronously on the strand that owns the log.
class group_service {
 public:
  struct shard {
    std::shared_ptr<partition> part;
    std::unique_ptr<groups::group_log> log;
    std::unique_ptr<groups::group_coordinator> coordinator;
    std::unique_ptr<asio::steady_timer> timer;
    std::optional<int64_t> armed;  // the deadline the timer waits for
    partition::strand_type& strand() { return part->strand(); }
  };

  group_service(const broker_config& config, topic_registry& topics, sluice::clock& clock);

  /// At start-up: if __consumer_offsets exists, replays each partition on its strand.
  void start();
  /// Creates __consumer_offsets (offsets.topic.num.partitions partitions, replication factor
  /// min(offsets.topic.replication.factor, live brokers = 1), cleanup.policy=compact) when missing, and
  /// loads its shards. Errors: the CreateTopics error.
  kafka_error ensure_topic();

  /// Cluster mode: a __consumer_offsets partition became led here (its groups are replayed from its log)
  /// or stopped being led here (its groups are unloaded). Other topics are ignored. Any thread.
  void on_leadership_change(const std::shared_ptr<partition>& p, bool leader);

  /// The shard coordinating `group_id` (Kafka's partitionFor), or null while there is no topic or, in
  /// cluster mode, when this broker has no replica of its partition.
  std::shared_ptr<shard> shard_for(std::string_view group_id) const;
  std::vector<std::shared_ptr<shard>> shards() const;

  /// On the shard's strand: re-arms its timer for the coordinator's next deadline.
  void arm_timer(const std::shared_ptr<shard>& s);

 private:
  void load_shards(const std::vector<std::shared_ptr<partition>>& parts);
  void replay(shard& s);

  const broker_config& config_;
  topic_registry& topics_;
  sluice::clock& clock_;
  groups::group_config group_config_;
  std::mutex mutex_;
  std::atomic<std::shared_ptr<const std::vector<std::shared_ptr<shard>>>> shards_;
};

/// groups::group_error carries Kafka's numeric codes.
inline protocol::error_code to_wire(groups::group_error e) {
  return static_cast<protocol::error_code>(static_cast<int16_t>(e));
}

/// Kafka's clientHost: "/" + the client's address (no port).
inline std::string client_host_of(const std::string& peer) {
  auto colon = peer.rfind(':');
  std::string host = colon == std::string::npos ? peer : peer.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return "/" + host;
}

/// Runs `f(coordinator, reply)` on the shard's strand, where `reply(R)` may be called then or later (on
/// that strand); resumes the calling coroutine on its own executor with the R. Re-arms the shard timer.
template <typename R, typename F>
asio::awaitable<R> group_call(group_service& svc, std::shared_ptr<group_service::shard> s, F f) {
  auto initiate = [&svc, s](auto handler, F work) mutable {
    asio::post(s->strand(), [&svc, s, work = std::move(work), handler = std::move(handler)]() mutable {
      auto h = std::make_shared<decltype(handler)>(std::move(handler));
      std::function<void(R)> reply = [h](R value) {
        auto back = asio::get_associated_executor(*h);
        asio::post(back, [h, value = std::move(value)]() mutable { std::move (*h)(std::move(value)); });
      };
      work(*s->coordinator, std::move(reply));
      svc.arm_timer(s);
    });
  };
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(R)>(std::move(initiate),
                                                                                  asio::use_awaitable, std::move(f));
}

/// Runs `f(coordinator)` (returning a value) on the shard's strand and re-arms the timer.
template <typename F>
auto group_run(group_service& svc, std::shared_ptr<group_service::shard> s, F f)
    -> asio::awaitable<std::invoke_result_t<F&, groups::group_coordinator&>> {
  using R = std::invoke_result_t<F&, groups::group_coordinator&>;
  // Named before co_await: GCC 12 destroys lambda temporaries of a co_await full-expression twice.
  auto work = [f = std::move(f)](groups::group_coordinator& c, std::function<void(R)> reply) mutable {
    reply(f(c));
  };
  co_return co_await group_call<R>(svc, std::move(s), std::move(work));
}

}  // namespace sluice::broker
