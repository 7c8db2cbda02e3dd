#pragma once
// Incremental fetch sessions (KIP-227): the broker remembers, per fetcher, which partitions it fetches and with
// which parameters, so that a fetcher names only what changed and the broker answers only what changed.
//
// Kafka's FetchSessionCache and FetchSession (kafka.server), as a fetcher observes them:
// - Request metadata (session_id, session_epoch), Fetch v7+:
//     (0, -1)  sessionless full fetch, no session is made;
//     (0, 0)   full fetch that asks for a new session: the answer carries the new id, or 0 when none was made;
//     (X, -1)  closes session X, then a sessionless full fetch;
//     (X, 0)   closes session X, then a full fetch that asks for a new session;
//     (X, n>0) incremental fetch in session X: FETCH_SESSION_ID_NOT_FOUND when X is not cached,
//              INVALID_FETCH_SESSION_EPOCH when n is not the session's next epoch, FETCH_SESSION_TOPIC_ID_ERROR when
//              the request's version (13+: topic ids) does not match the one the session was made with.
// - An incremental request names partitions to add or update (fetch offset, max bytes, log start, epochs) and
//   forgotten partitions to drop; the broker fetches every partition of the session, in session order, and answers
//   a partition only when it has records, an error, a diverging epoch, or a high watermark or log start offset that
//   differs from the last one answered (CachedPartition.maybeUpdateResponseData). A partition that returned records
//   moves to the end of the session's order, so that max_bytes serves every partition in turn.
// - An incremental request that forgets the last partition closes the session (answered as sessionless, id 0).
// - At most `max_slots` sessions (max.incremental.fetch.session.cache.slots). When full, a new session may evict
//   one that was unused for `eviction_ms` (Kafka: 120 s), else the least valuable evictable one: followers'
//   sessions are privileged; a larger session may evict a smaller consumer session older than `eviction_ms`.
//
// Thread-safe: one mutex guards the cache and every session's contents (short critical sections).
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "protocol/messages/fetch.h"

namespace sluice::broker {

/// One partition of a fetch session (Kafka's CachedPartition): the fetcher's last parameters and the last
/// high watermark and log start offset answered for it.
struct cached_fetch_partition {
  std::string topic;        // name (sessions with topic ids: the name the id resolved to, "" while unknown)
  protocol::uuid topic_id;  // sessions with topic ids (Fetch 13+)
  int32_t partition = 0;
  int32_t max_bytes = 0;
  int64_t fetch_offset = 0;
  int64_t fetcher_log_start_offset = -1;  // the follower's log start offset as it sent it
  int32_t current_leader_epoch = -1;
  int32_t last_fetched_epoch = -1;
  int64_t high_watermark = -1;        // last answered; -1 after an error, so that the partition is answered again
  int64_t local_log_start_offset = -1;  // last answered
};

/// A request partition as a session holds it (Kafka's CachedPartition(part, reqData)); nothing answered yet.
cached_fetch_partition cached_from_request(const protocol::fetch_request::fetch_topic& ft,
                                           const protocol::fetch_request::fetch_partition& fp);

/// KIP-227's epoch sequence: 1, 2, ..., INT32_MAX, then 1 again (0 and -1 are the full-fetch epochs).
int32_t next_fetch_session_epoch(int32_t epoch);

/// The session key of a partition: the topic id's bytes (sessions with ids) or the name, and the index.
using fetch_session_partition_key = std::pair<std::string, int32_t>;
struct fetch_session_key_hash {
  size_t operator()(const fetch_session_partition_key& k) const {
    return std::hash<std::string>{}(k.first) * 31 + static_cast<size_t>(k.second);
  }
};

struct fetch_session {
  int32_t id = 0;
  bool privileged = false;   // made by a follower
  bool uses_topic_ids = false;
  int64_t creation_ms = 0;
  int64_t last_used_ms = 0;
  int32_t epoch = 1;         // the epoch the next incremental request must carry
  std::list<cached_fetch_partition> partitions;  // session order
  std::unordered_map<fetch_session_partition_key, std::list<cached_fetch_partition>::iterator, fetch_session_key_hash>
      index;
};

class fetch_session_cache {
 public:
  /// `max_slots` >= 0 (0: no session is ever made); `eviction_ms`: how long a session stays unused before any new
  /// session may evict it. Time from `clock.monotonic_ms()`.
  fetch_session_cache(sluice::clock& clock, int32_t max_slots, int64_t eviction_ms = 120000);

  /// What an incremental request got: an error (the whole answer is that error and session id 0), or the session
  /// to fetch with its partitions in order as request topics, or (`closed`) the session ended because the request
  /// forgot its last partition: fetch the request as sessionless.
  struct incremental {
    protocol::error_code error = protocol::error_code::none;
    std::shared_ptr<fetch_session> session;
    int32_t expected_epoch = 0;  // the session's epoch after this request, checked again by finish()
    bool closed = false;
    std::vector<protocol::fetch_request::fetch_topic> topics;  // every session partition, session order
    /// Per partition of `topics` (in order): the high watermark and log start offset last answered.
    std::vector<std::pair<int64_t, int64_t>> last_answered;
  };
  /// Applies an incremental request (`uses_topic_ids`: version 13+) to session `session_id` at `epoch` > 0.
  /// In a session with topic ids, a partition keeps the name its id first resolved to (Kafka's CachedPartition:
  /// updates keep it, maybeResolveUnknownName fills it); `name_of` (called under the cache's lock) gives the name
  /// of an id now, or "" when it is unknown.
  incremental begin_incremental(int32_t session_id, int32_t epoch, bool uses_topic_ids,
                                const std::vector<protocol::fetch_request::fetch_topic>& topics,
                                const std::vector<protocol::fetch_request::forgotten_topic>& forgotten,
                                const std::function<std::string(const protocol::uuid&)>& name_of = {});

  /// Filters `resp` (built for `inc.topics`) down to what the fetcher must see, records the answered high
  /// watermarks and log start offsets and moves partitions that returned records to the end; sets the session id.
  /// When another request of the session came in between: INVALID_FETCH_SESSION_EPOCH with no partitions.
  void finish(const incremental& inc, protocol::fetch_response& resp);

  /// Makes a session of `partitions` (full fetch with epoch 0); returns its id, or 0 when the cache is full and
  /// nothing could be evicted.
  int32_t maybe_create(bool privileged, bool uses_topic_ids, std::vector<cached_fetch_partition> partitions);

  /// Closes a session (full fetch naming it); true when it existed.
  bool remove(int32_t session_id);

  int64_t size() const;
  int64_t total_partitions() const;
  int64_t evictions() const;

 private:
  struct lru_key {  // Kafka's LastUsedKey
    int64_t last_used_ms;
    int32_t id;
    auto operator<=>(const lru_key&) const = default;
  };
  struct evictable_key {  // Kafka's EvictableKey: (privileged, size, id)
    bool privileged;
    int64_t size;
    int32_t id;
    auto operator<=>(const evictable_key&) const = default;
  };
  struct entry {
    std::shared_ptr<fetch_session> session;
    int64_t cached_size = -1;  // size when last touched (-1: not indexed yet)
  };

  void touch(entry& e, int64_t now);                      // lock held
  void erase(std::map<int32_t, entry>::iterator it);      // lock held
  bool try_evict(bool privileged, int64_t size, int64_t now);  // lock held
  int32_t new_id();                                        // lock held

  sluice::clock& clock_;
  const int32_t max_slots_;
  const int64_t eviction_ms_;
  mutable std::mutex mutex_;
  std::map<int32_t, entry> sessions_;
  std::set<lru_key> last_used_;
  std::set<evictable_key> evictable_by_all_;
  std::set<evictable_key> evictable_by_privileged_;
  int64_t partitions_ = 0;
  int64_t evictions_ = 0;
  uint64_t rng_state_;
};

fetch_session_partition_key fetch_session_key(bool uses_topic_ids, const protocol::uuid& topic_id,
                                                  const std::string& topic, int32_t partition);

}  // namespace sluice::broker
