#pragma once
// A follower's pull from one leader broker (Kafka's ReplicaFetcherThread): for every partition this broker
// follows on that leader, first truncate to where the leader's log agrees (OffsetForLeaderEpoch, KIP-101),
// then fetch from the log end offset with replica_id set and append what comes as it is.
#include <boost/asio.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/partition.h"
#include "broker/replication/broker_client.h"

namespace sluice::broker {

/// The follower side of the replication throttle (KIP-73, Kafka's ReplicaFetcherThread with its quota): which of
/// the partitions fetched are throttled replicas (the topic's follower.replication.throttled.replicas names this
/// broker's replica), whether follower.replication.throttled.rate is used up, and the bytes fetched for throttled
/// replicas. While it is used up, throttled replicas not in the ISR are left out of the fetch (and so out of the
/// fetch session) until the rate falls below the limit. Empty functions: no throttle.
struct follower_throttle {
  std::function<bool(const std::string& topic, int32_t partition)> covers;
  std::function<bool(int64_t now_ms)> exceeded;
  std::function<void(int64_t bytes, int64_t now_ms)> record;
};

/// Strand: its own; every method posts there, so any thread may call them.
class replica_fetcher : public std::enable_shared_from_this<replica_fetcher> {
 public:
  replica_fetcher(asio::any_io_executor executor, const broker_config& config, int32_t leader_id, sluice::clock& clock,
                  follower_throttle throttle = {});

  /// Where the leader listens (from its registration); a change reconnects.
  void set_endpoint(std::string host, uint16_t port);
  /// Follows `p` at `leader_epoch` (replacing an older epoch); it is truncated before its next fetch.
  void add(std::shared_ptr<partition> p, int32_t leader_epoch);
  void remove(std::shared_ptr<partition> p);
  /// Starts the fetch loop (once).
  void start();
  /// Ends the loop after the current request.
  void stop();
  int32_t leader_id() const { return leader_id_; }

 private:
  struct entry {
    std::shared_ptr<partition> p;
    int32_t leader_epoch = 0;
    bool needs_truncation = true;
    int64_t leader_high_watermark = -1;  // from the last fetch answer: caught up to it, the replica counts as in sync
  };
  using key = std::pair<std::string, int32_t>;
  asio::awaitable<void> run();
  asio::awaitable<bool> truncate(std::map<key, entry>& work);
  asio::awaitable<bool> fetch_once(std::map<key, entry>& work);
  asio::awaitable<void> pause(std::chrono::milliseconds d);

  asio::strand<asio::any_io_executor> strand_;
  const broker_config& config_;
  int32_t leader_id_;
  sluice::clock& clock_;
  follower_throttle throttle_;
  broker_client client_;
  asio::steady_timer backoff_;
  std::string host_;
  uint16_t port_ = 0;
  bool endpoint_changed_ = false;
  bool started_ = false;
  bool stopped_ = false;
  std::map<key, entry> partitions_;

  /// The fetcher's side of its incremental fetch session with the leader (KIP-227, Kafka's FetchSessionHandler):
  /// the session id (0: none), the epoch of the next incremental request, and what the leader holds for each
  /// partition (the parameters last sent). A full fetch (epoch 0) asks for a session; afterwards a request names
  /// only partitions whose parameters changed and forgets those no longer fetched. Any session error or failed
  /// call starts over with a full fetch.
  struct sent_params {
    int64_t fetch_offset;
    int64_t log_start_offset;
    int32_t leader_epoch;
    int32_t max_bytes;
    friend bool operator==(const sent_params&, const sent_params&) = default;
  };
  int32_t session_id_ = 0;
  int32_t session_epoch_ = 0;  // 0: the next request is a full one
  std::map<key, sent_params> session_partitions_;
};

}  // namespace sluice::broker
