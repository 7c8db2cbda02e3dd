// Fetch (key 1). Consumers: whole record batches up to the high watermark; followers (replica_id >= 0):
// up to the log end offset, their fetch offset counting as their LEO for the high watermark and the ISR.
// read_committed consumers (isolation_level 1, KIP-98): up to the last stable offset, with the aborted
// transactions overlapping what they read (null for read_uncommitted, as Kafka).
// Consumer side: whole record batches up to the high watermark, served as file regions
// (sent with sendfile). Long poll: when fewer than min_bytes are ready, the request parks in the
// partitions' purgatories until an append wakes it or max_wait_ms passes (Kafka's DelayedFetch).
// Fetch from follower (KIP-392): a consumer's Fetch v11+ is served by any replica, a follower reading up to its own
// high watermark; with replica.selector.class set to the rack-aware selector, the leader answers a consumer that
// names its rack with a preferred read replica in that rack (no records), which the consumer then fetches from.
// Fetch sessions (KIP-227, broker/fetch_session_cache.h): a full fetch with epoch 0 makes a session; an incremental
// one fetches every partition of its session and is answered only what changed for the fetcher.
#include <algorithm>
#include <map>
#include <utility>

#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/fetch_session_cache.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/cluster_view.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/partition_errc.h"
#include "broker/purgatory.h"
#include "broker/quota_manager.h"
#include "broker/topic_config.h"
#include "storage/errc.h"
#include "broker/replication/replica_manager.h"
#include "broker/replication/replica_selector.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::fetch_response;

namespace {

struct slot {
  std::shared_ptr<partition> p;
  response::partition_data* out;
  int64_t fetch_offset;
  int32_t partition_max_bytes;
  int32_t current_leader_epoch;  // as requested (-1: none)
  int32_t last_fetched_epoch;    // v12+ (-1: none)
  int64_t follower_high_watermark;  // v18+ (KIP-1166): the follower's high watermark; INT64_MAX: not sent
  int64_t follower_log_start_offset;  // v5+: a follower's log start (DeleteRecords waits for it); -1: not sent
  uint64_t bytes = 0;            // read in the last pass (for the bytes-out metric)
  bool throttled = false;        // a follower's fetch of a leader-throttled replica (KIP-73)
};

struct read_outcome {
  result<storage::read_result> data;
  int64_t high_watermark;
  int64_t log_start_offset;
  std::optional<isr_change> isr_expansion;  // a follower fetch that brought its replica into sync
  int64_t last_stable_offset = -1;
  std::vector<storage::aborted_txn> aborted;  // read_committed only
  std::optional<storage::epoch_entry> diverging = std::nullopt;  // KIP-320: the last fetched epoch diverges (nothing read)
  int32_t preferred_read_replica = -1;  // KIP-392: the follower the consumer should read from (nothing read)
};

/// KIP-392: the racks of the live brokers, by id, as the consumer's listener reaches them (a replica without an
/// endpoint on that listener cannot be named: Kafka's Node.noNode).
using rack_map = std::map<int32_t, std::optional<std::string>>;

/// The leader's choice of a read replica for a consumer in `client_rack` fetching at `offset` (Kafka's
/// findPreferredReadReplica with RackAwareReplicaSelector); -1: read here. Strand only.
int32_t preferred_read_replica(const partition& p, int64_t offset, const std::string& client_rack, const rack_map& racks,
                               int32_t self, int64_t now_ms) {
  // Beyond Kafka's rule (a candidate's own log start at or below the offset, read_replica_candidates), an offset
  // below the leader's log start (deleted, or out of range) is read here and never sent to a follower, so that a
  // follower whose log start lags never serves records the leader has deleted.
  if (offset < p.log_start_offset()) return -1;
  auto candidates = p.read_replica_candidates(offset);
  if (candidates.empty()) return -1;
  const auto self_rack = racks.find(self);
  replication::replica_view leader{self, self_rack == racks.end() ? std::nullopt : self_rack->second,
                                   p.log_end_offset(), 0};
  std::vector<replication::replica_view> followers;
  for (const auto& f : candidates) {
    auto rack = racks.find(f.broker_id);
    if (rack == racks.end()) continue;  // no endpoint on the consumer's listener
    followers.push_back({f.broker_id, rack->second, f.log_end_offset, now_ms - f.last_caught_up_ms});
  }
  return replication::select_rack_aware(client_rack, leader, followers).value_or(-1);
}

/// Kafka reads the log only at an offset in [log start, end) (end: high watermark, last stable offset for
/// read_committed, log end offset for followers); there, a negative partition_max_bytes makes its segment read
/// throw (LogSegment.read: "Invalid max size"), which the fetch answers as UNKNOWN_SERVER_ERROR for that partition.
/// Elsewhere (empty partition, at the end, out of range) it never reaches that check. std::nullopt: read as usual.
/// Strand only.
std::optional<read_outcome> check_negative_max_bytes(partition& p, int64_t offset, int32_t partition_max_bytes,
                                                     int64_t end) {
  if (partition_max_bytes >= 0 || offset < p.log_start_offset() || offset >= end) return std::nullopt;
  return read_outcome{error{base_errc::failed, "invalid max size " + std::to_string(partition_max_bytes) +
                                                  " for log read from offset " + std::to_string(offset)},
                      -1, -1, {}, -1, {}, std::nullopt};
}

/// Fetch v12+ with a last fetched epoch (Kafka's Partition.readRecords, KIP-320): the end offset of that epoch
/// here decides whether the fetch position is still on this log. Unknown epoch or a position below the log start:
/// OFFSET_OUT_OF_RANGE; an epoch that ended before the position (or an older epoch here): nothing is read and the
/// answer names the diverging epoch and its end offset. std::nullopt: read as usual. Strand only.
std::optional<read_outcome> check_last_fetched_epoch(partition& p, int64_t offset, int32_t last_fetched_epoch) {
  if (last_fetched_epoch < 0) return std::nullopt;
  const auto end = p.end_offset_for_epoch(last_fetched_epoch);
  auto out_of_range = [&](const std::string& why) {
    return read_outcome{error{storage::errc::offset_out_of_range, why}, -1, -1, {}, -1, {}, std::nullopt};
  };
  if (end.epoch < 0 || end.start_offset < 0)
    return out_of_range("could not determine the end offset of the last fetched epoch " + std::to_string(last_fetched_epoch));
  if (offset < p.log_start_offset()) return out_of_range("fetch offset below the log start offset");
  if (end.epoch < last_fetched_epoch || end.start_offset < offset) {
    return read_outcome{storage::read_result{}, p.high_watermark(), p.log_start_offset(), {}, p.last_stable_offset(), {}, end};
  }
  return std::nullopt;
}

/// Fetch v16+ (KIP-951): a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH partition names its current leader
/// (this broker while it leads; -1 while there is none) and that leader's epoch.
void name_current_leader(response::partition_data& pd, const partition& p, int32_t self) {
  pd.current_leader.leader_id = p.is_leader() ? self : p.leader_id();
  pd.current_leader.leader_epoch = p.leader_epoch();
}

/// A consumer fetching exactly at its end (the high watermark; the last stable offset for read_committed) reads
/// nothing, and its answer comes from the partition's atomics without a hop to its strand: the common case of an
/// incremental fetch session, whose every partition is fetched on every request (KIP-227). Only when the last
/// fetched epoch cannot diverge: none sent, or the current leader epoch (its end is the log end, past the fetch
/// offset). std::nullopt: read on the strand as usual. Any thread.
std::optional<read_outcome> read_at_end(const partition& p, int64_t offset, bool read_committed,
                                        int32_t last_fetched_epoch) {
  if (!p.is_leader() || p.closed()) return std::nullopt;
  if (last_fetched_epoch >= 0 && last_fetched_epoch != p.leader_epoch()) return std::nullopt;
  const int64_t hw = p.high_watermark(), lso = p.last_stable_offset(), start = p.log_start_offset();
  if (offset != (read_committed ? lso : hw) || offset < start) return std::nullopt;
  return read_outcome{storage::read_result{}, hw, start, {}, lso, {}, std::nullopt};
}

/// KIP-227: a partition of an incremental session whose fetch would answer nothing the fetcher has not been told:
/// at its end (read_at_end), with the high watermark and log start offset last answered. Any thread.
bool is_quiet(const partition& p, int64_t offset, bool read_committed, int32_t last_fetched_epoch, int64_t last_hw,
              int64_t last_start) {
  auto at_end = read_at_end(p, offset, read_committed, last_fetched_epoch);
  return at_end && at_end->high_watermark == last_hw && at_end->log_start_offset == last_start;
}

/// A session partition left out of an incremental fetch while it is quiet (see fetch()).
struct quiet_partition {
  std::shared_ptr<partition> p;
  int64_t fetch_offset;
  int32_t last_fetched_epoch;
  int64_t last_hw, last_start;
  bool active;  // fetched (not quiet)
};

error_code check_epoch(int32_t requested, int32_t current) {
  if (requested < 0 || requested == current) return error_code::none;
  return requested < current ? error_code::fenced_leader_epoch : error_code::unknown_leader_epoch;
}

}  // namespace

task<response> fetch(broker_services& svc, request_context& rc, protocol::fetch_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  resp.session_id = 0;
  const int32_t replica_id = version >= 15 ? req.replica_state_.replica_id : req.replica_id;
  const bool from_follower = replica_id >= 0;
  // KIP-392: a consumer's Fetch v11+ carries client metadata, so any replica serves it (a follower up to its own
  // high watermark); an older consumer reads from the leader only (Kafka's FetchParams.fetchOnlyLeader).
  const bool reads_any_replica = !from_follower && version >= 11;
  // With the rack-aware selector and a client rack, the leader may name a follower of that rack instead.
  std::shared_ptr<const rack_map> racks;
  if (reads_any_replica && svc.config.rack_aware_replica_selector && !req.rack_id.empty()) {
    auto m = std::make_shared<rack_map>();
    for (auto& ep : live_brokers(svc, rc.session.listener_name)) (*m)[ep.id] = std::move(ep.rack);
    racks = std::move(m);
  }

  // KIP-227: (0, -1) sessionless; epoch 0 or -1 close the named session, and 0 asks for a new one; a positive
  // epoch is an incremental fetch in the named session (Kafka's FetchManager.newContext).
  const int32_t session_epoch = version >= 7 ? req.session_epoch : -1;
  const int32_t session_id = version >= 7 ? req.session_id : 0;
  const bool uses_topic_ids = version >= 13;
  bool make_session = false;
  fetch_session_cache::incremental in_session;
  if (session_epoch == 0 || session_epoch == -1) {
    if (session_id != 0 && svc.fetch_sessions != nullptr) svc.fetch_sessions->remove(session_id);
    make_session = session_epoch == 0 && svc.fetch_sessions != nullptr;
  } else if (svc.fetch_sessions == nullptr) {
    resp.error_code = error_code::fetch_session_id_not_found;
    co_return resp;
  } else {
    auto name_of = [&svc](const protocol::uuid& id) {
      auto t = svc.topics.find(from_wire(id));
      return t ? t->name : std::string();
    };
    in_session = svc.fetch_sessions->begin_incremental(session_id, session_epoch, uses_topic_ids, req.topics,
                                                       req.forgotten_topics_data, name_of);
    if (in_session.error != error_code::none) {
      resp.error_code = in_session.error;
      co_return resp;
    }
    if (in_session.session) req.topics = std::move(in_session.topics);  // fetch the whole session, in its order
  }

  // A follower's fetch (replica_id >= 0) reads up to the LEO and reports the follower's progress.
  if (from_follower) rc.request_quota_exempt = true;  // replication is not throttled by client quotas (Kafka)
  const int32_t min_bytes = req.min_bytes;
  // KIP-98: read_committed consumers read up to the last stable offset and get the aborted transactions.
  const bool read_committed = !from_follower && version >= 4 && req.isolation_level == 1;
  const auto until = wait_deadline::after(svc.clock, req.max_wait_ms);

  // KIP-227: in an incremental session (a consumer's, without an authorizer or a rack-aware read-replica choice), a
  // partition whose fetch would answer nothing new (at its end, same high watermark and log start offset as last
  // answered, still led here) is left out of the fetch: it is only parked on, and joins (the fetch starts over) once
  // it has something to tell. The answer is the same as fetching it; the work per idle partition is a few atomic
  // loads and a park.
  std::vector<quiet_partition> quiet;
  std::vector<protocol::fetch_request::fetch_topic> session_topics;
  if (in_session.session && !from_follower && svc.authorizer == nullptr && !racks) {
    session_topics = std::move(req.topics);
    size_t flat = 0;
    for (const auto& ft : session_topics) {
      std::shared_ptr<const topic> t = uses_topic_ids ? svc.topics.find(from_wire(ft.topic_id)) : svc.topics.find(ft.topic);
      for (const auto& fp : ft.partitions) {
        const auto [last_hw, last_start] = in_session.last_answered[flat++];
        quiet_partition q{partition_of(t, fp.partition), fp.fetch_offset, version >= 12 ? fp.last_fetched_epoch : -1,
                          last_hw, last_start, true};
        q.active = !q.p || check_epoch(fp.current_leader_epoch, q.p->leader_epoch()) != error_code::none ||
                   !is_quiet(*q.p, fp.fetch_offset, read_committed, q.last_fetched_epoch, last_hw, last_start);
        quiet.push_back(std::move(q));
      }
    }
  }
  std::vector<std::string> topic_keys;
  std::map<std::pair<std::string_view, int32_t>, std::pair<size_t, size_t>> last_entry;  // -> (topic, partition index)
  for (bool restart = true; restart;) {
    restart = false;
    const auto waiting_quiet =
        std::count_if(quiet.begin(), quiet.end(), [](const quiet_partition& q) { return !q.active; });
    if (!session_topics.empty()) {
      // The session's partitions in session order, the quiet ones left out.
      req.topics.clear();
      resp.responses.clear();
      size_t flat = 0;
      for (const auto& ft : session_topics) {
        bool named = false;
        for (const auto& fp : ft.partitions) {
          if (!quiet[flat++].active) continue;
          if (!named) {
            req.topics.push_back({});
            req.topics.back().topic = ft.topic;
            req.topics.back().topic_id = ft.topic_id;
            named = true;
          }
          req.topics.back().partitions.push_back(fp);
        }
      }
    }
    // Kafka keys the request by topic and partition (FetchRequest.fetchData, a map): a partition named twice is
    // answered once, with its last entry, and a topic left without partitions is not answered.
    // A topic's key: its id's 16 bytes (v13+) or its name, made once per topic entry.
    topic_keys.assign(req.topics.size(), std::string());
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      const auto& ft = req.topics[ti];
      topic_keys[ti] = version >= 13 ? std::string(ft.topic_id.bytes.begin(), ft.topic_id.bytes.end()) : ft.topic;
    }
    last_entry.clear();
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      for (size_t pi = 0; pi < req.topics[ti].partitions.size(); ++pi) {
        last_entry[{topic_keys[ti], req.topics[ti].partitions[pi].partition}] = {ti, pi};
      }
    }
    auto is_last = [&](size_t ti, size_t pi) {
      return last_entry[{topic_keys[ti], req.topics[ti].partitions[pi].partition}] == std::make_pair(ti, pi);
    };

    // Resolve every partition once; errors found here are final for this request. Kafka answers the partitions it
    // asked the replica manager about (request order), then those refused before: for a consumer first every unknown
    // topic id (its first pass), then unknown topics and partitions (its second pass); for a follower both in one
    // pass; each in request order; consecutive partitions of one topic share a topic entry, also across those runs
    // (KafkaApis.handleFetchRequest: "interesting", then "erroneous"; FetchResponse.of).
    enum class run { asked, unknown_id, refused };  // the answer's order
    struct resolved {
      size_t topic;  // index in req.topics
      size_t partition_at;  // index in its partitions
      response::partition_data data;
      std::shared_ptr<partition> p;  // to read (no error yet)
      run where;
      // The leader side of the replication throttle (KIP-73): a follower's fetch of a partition whose topic lists
      // this broker's replica in leader.replication.throttled.replicas (bytes count against
      // leader.replication.throttled.rate).
      bool throttled = false;
    };
    std::vector<resolved> ordered;
    // Authorization (KafkaApis.handleFetchRequest): ClusterAction for a follower, Read on each topic for a consumer;
    // refused partitions answer TOPIC_AUTHORIZATION_FAILED.
    const bool follower_denied = from_follower && !cluster_authorized(svc, rc, acl_operation::cluster_action);
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      auto& ft = req.topics[ti];
      std::shared_ptr<const topic> t = version >= 13 ? svc.topics.find(from_wire(ft.topic_id)) : svc.topics.find(ft.topic);
      // v13+: a session keeps the name its topic id resolved to (Kafka's CachedPartition), so that a topic deleted
      // under a session answers UNKNOWN_TOPIC_OR_PARTITION, and one recreated under the same name (a new id)
      // INCONSISTENT_TOPIC_ID, rather than UNKNOWN_TOPIC_ID; the name also goes into a new session.
      std::shared_ptr<const topic> renamed;  // the topic now under the session's name, with another id
      if (version >= 13) {
        if (t && ft.topic.empty()) ft.topic = t->name;  // a session's partitions already carry it
        else if (!t && !ft.topic.empty()) renamed = svc.topics.find(ft.topic);
      }
      const bool denied = follower_denied || (!from_follower && svc.authorizer != nullptr &&
                                              !authorized(svc, rc, acl_operation::read, resource_type::topic,
                                                          t ? t->name : ft.topic));
      for (size_t pi = 0; pi < ft.partitions.size(); ++pi) {
        if (!is_last(ti, pi)) continue;
        const auto& fp = ft.partitions[pi];
        response::partition_data pd;
        pd.partition_index = fp.partition;
        pd.high_watermark = -1;
        pd.last_stable_offset = -1;
        pd.log_start_offset = -1;
        pd.records_ = protocol::records{};
        // Kafka: errors found before the log read (unknown topic, topic id or partition: KafkaApis) keep the
        // schema's empty list; errors of the read itself (ReplicaManager: not leader, fenced epoch, ...) and
        // read_uncommitted answers are null; read_committed fills it.
        pd.aborted_transactions = std::nullopt;
        std::shared_ptr<partition> to_read;
        run where = run::asked;
        // Kafka's KafkaApis.handleFetchRequest: a follower without ClusterAction is refused everything; else an id
        // without a name is UNKNOWN_TOPIC_ID, then a consumer's unauthorized topic, then a name not in the metadata.
        if (!t && ft.topic.empty() && !follower_denied) {
          pd.error_code = version >= 13 ? error_code::unknown_topic_id : error_code::unknown_topic_or_partition;
          pd.aborted_transactions.emplace();
          where = version >= 13 && !from_follower ? run::unknown_id : run::refused;
        } else if (denied) {
          pd.error_code = error_code::topic_authorization_failed;
          pd.aborted_transactions.emplace();
          where = run::refused;
        } else if (!t && !renamed) {
          pd.error_code = error_code::unknown_topic_or_partition;
          pd.aborted_transactions.emplace();
          where = run::refused;
        } else if (auto p = partition_of(t ? t : renamed, fp.partition); !p) {
          pd.error_code = missing_partition_error(t ? t : renamed, fp.partition);
          if (pd.error_code == error_code::unknown_topic_or_partition) {
            pd.aborted_transactions.emplace();
            where = run::refused;
          }
        } else if (!t) {
          // Kafka's ReplicaManager.readFromLog: the log's topic id differs from the session's (a read error).
          pd.error_code = error_code::inconsistent_topic_id;
        } else if (!p->is_leader() && !reads_any_replica) {
          pd.error_code = error_code::not_leader_or_follower;
          if (version >= 16) name_current_leader(pd, *p, svc.config.broker_id);
        } else {
          pd.error_code = check_epoch(fp.current_leader_epoch, p->leader_epoch());
          if (version >= 16 && pd.error_code == error_code::fenced_leader_epoch)
            name_current_leader(pd, *p, svc.config.broker_id);
          if (pd.error_code == error_code::none) to_read = p;
        }
        const bool throttled = to_read && from_follower && svc.quotas != nullptr &&
                               replica_throttled(t->configs, leader_throttled_replicas_key, fp.partition, svc.config.broker_id);
        ordered.push_back({ti, pi, std::move(pd), std::move(to_read), where, throttled});
      }
    }
    auto by_run = [](const resolved& a, const resolved& b) { return a.where < b.where; };
    if (!std::is_sorted(ordered.begin(), ordered.end(), by_run))
      std::stable_sort(ordered.begin(), ordered.end(), by_run);  // request order kept
    // Topic entries first (sized, so that the slots' pointers into them stay valid), then the partitions.
    std::vector<size_t> entry_of(ordered.size());
    for (size_t i = 0; i < ordered.size(); ++i) {
      const auto& ft = req.topics[ordered[i].topic];
      if (i == 0 || topic_keys[ordered[i].topic] != topic_keys[ordered[i - 1].topic]) {
        response::fetchable_topic_response tr;
        if (version >= 13) tr.topic_id = ft.topic_id;
        else tr.topic = ft.topic;
        resp.responses.push_back(std::move(tr));
      }
      entry_of[i] = resp.responses.size() - 1;
    }
    std::vector<size_t> sizes(resp.responses.size());
    for (size_t e : entry_of) ++sizes[e];
    for (size_t e = 0; e < sizes.size(); ++e) resp.responses[e].partitions.reserve(sizes[e]);
    std::vector<slot> slots;
    for (size_t i = 0; i < ordered.size(); ++i) {
      auto& r = ordered[i];
      auto& placed = resp.responses[entry_of[i]].partitions;
      placed.push_back(std::move(r.data));
      if (r.p) {
        const auto& fp = req.topics[r.topic].partitions[r.partition_at];
        slots.push_back({std::move(r.p), &placed.back(), fp.fetch_offset, fp.partition_max_bytes, fp.current_leader_epoch,
                         version >= 12 ? fp.last_fetched_epoch : -1,
                         version >= 18 && from_follower ? fp.high_watermark : INT64_MAX,
                         from_follower ? fp.log_start_offset : -1, 0, r.throttled});
      }
    }

    for (;;) {
      int64_t budget = version >= 3 ? req.max_bytes : INT32_MAX;
      int64_t total = 0;
      bool min_one = true;  // the first partition with data returns at least one whole batch (KIP-74)
      bool any_error = false;
      bool follower_behind = false;  // KIP-1166: a follower whose high watermark is behind ours learns it at once
      bool redirected = false;       // KIP-392: a partition names a preferred read replica: answered at once
      for (auto& s : slots) {
        const int32_t limit = static_cast<int32_t>(std::min<int64_t>(s.partition_max_bytes, std::max<int64_t>(budget, 0)));
        std::optional<read_outcome> quick;
        if (!from_follower && !racks) quick = read_at_end(*s.p, s.fetch_offset, read_committed, s.last_fetched_epoch);
        std::optional<read_outcome> read;
        if (!quick) {  // the strand is asked only when the atomics could not answer
          // GCC 12 destroys temporaries of a co_await full-expression twice: build the operation first.
          const int64_t now_ms = svc.clock.now_ms();
          // Kafka's shouldLeaderThrottle: over the leader rate, a throttled follower not in the ISR gets no data.
          const bool hold = s.throttled && svc.quotas->replication_exceeded(quota_manager::replication_side::leader, now_ms);
          auto read_op = call_on(s.p->strand(), [p = s.p, offset = s.fetch_offset, limit, min_one, from_follower, replica_id,
                                                 now_ms, read_committed, hold, epoch = s.current_leader_epoch,
                                                 last_fetched = s.last_fetched_epoch, asked = s.partition_max_bytes,
                                                 reads_any_replica, racks, &client_rack = req.rack_id,
                                                 self = svc.config.broker_id,
                                                 follower_log_start = s.follower_log_start_offset] {
            if (!from_follower) {
              if (!p->is_leader() && !reads_any_replica) {  // it stopped leading during the long poll
                return read_outcome{error{partition_errc::not_leader, p->topic() + "-" + std::to_string(p->index()) +
                                                                          " is not led here"},
                                    -1, -1, {}, -1, {}};
              }
              if (racks && p->is_leader()) {
                // Kafka decides the read replica before reading; a named replica ends the fetch with no records.
                if (int32_t to = preferred_read_replica(*p, offset, client_rack, *racks, self, now_ms); to >= 0) {
                  return read_outcome{storage::read_result{}, p->high_watermark(), p->log_start_offset(), {},
                                      p->last_stable_offset(), {}, std::nullopt, to};
                }
              }
              if (auto ended = check_last_fetched_epoch(*p, offset, last_fetched)) return std::move(*ended);
              const int64_t end = read_committed ? p->last_stable_offset() : p->high_watermark();
              if (auto refused = check_negative_max_bytes(*p, offset, asked, end)) return std::move(*refused);
            }
            if (read_committed) {
              read_outcome out{storage::read_result{}, p->high_watermark(), p->log_start_offset(), {}, p->last_stable_offset(), {}};
              out.data = p->read_committed(offset, limit, min_one, out.aborted);
              return out;
            }
            if (!from_follower) {
              return read_outcome{p->read(offset, limit, min_one), p->high_watermark(), p->log_start_offset(), {},
                                  p->last_stable_offset(), {}};
            }
            if (!p->has_follower(replica_id)) {
              // Kafka's followerReplicaOrThrow: with a leader epoch in the request, UNKNOWN_LEADER_EPOCH (the replica
              // may not be known in that epoch yet); without one, NOT_LEADER_OR_FOLLOWER.
              const std::string why = "broker " + std::to_string(replica_id) + " is not a replica of " + p->topic() + "-" +
                                      std::to_string(p->index());
              return read_outcome{epoch >= 0 ? error{partition_errc::unknown_leader_epoch, why}
                                             : error{partition_errc::not_leader, why},
                                  -1, -1, {}, -1, {}};
            }
            if (auto ended = check_last_fetched_epoch(*p, offset, last_fetched)) return std::move(*ended);
            auto expansion = p->record_follower_fetch(replica_id, offset, now_ms, follower_log_start);
            if (auto refused = check_negative_max_bytes(*p, offset, asked, p->log_end_offset()))
              return read_outcome{std::move(refused->data), -1, -1, std::move(expansion), -1, {}, std::nullopt};
            if (hold) {
              const auto isr = p->isr();
              if (std::find(isr.begin(), isr.end(), replica_id) == isr.end())
                return read_outcome{storage::read_result{}, p->high_watermark(), p->log_start_offset(), std::move(expansion),
                                    p->last_stable_offset(), {}};
            }
            return read_outcome{p->read_for_follower(offset, limit, min_one), p->high_watermark(), p->log_start_offset(),
                                std::move(expansion), p->last_stable_offset(), {}};
          });
          read.emplace(co_await std::move(read_op));
        }
        auto& outcome = quick ? *quick : *read;
        if (outcome.isr_expansion && svc.replicas != nullptr) svc.replicas->submit_isr_change(s.p, std::move(*outcome.isr_expansion));
        s.out->high_watermark = outcome.high_watermark;
        if (outcome.high_watermark > s.follower_high_watermark) follower_behind = true;
        s.out->last_stable_offset = outcome.last_stable_offset;
        s.out->log_start_offset = outcome.log_start_offset;
        if (outcome.diverging) {
          s.out->diverging_epoch.epoch = outcome.diverging->epoch;
          s.out->diverging_epoch.end_offset = outcome.diverging->start_offset;
        }
        s.out->preferred_read_replica = outcome.preferred_read_replica;
        if (outcome.preferred_read_replica >= 0) redirected = true;
        if (read_committed && !outcome.diverging && outcome.preferred_read_replica < 0) {
          // a diverging epoch or a named read replica reads nothing: null, as Kafka
          std::vector<response::aborted_transaction> aborted;
          aborted.reserve(outcome.aborted.size());
          for (const auto& a : outcome.aborted) {
            response::aborted_transaction at;
            at.producer_id = a.producer_id;
            at.first_offset = a.first_offset;
            aborted.push_back(std::move(at));
          }
          s.out->aborted_transactions = std::move(aborted);
        } else {
          s.out->aborted_transactions = std::nullopt;  // Kafka: null for read_uncommitted (and nothing read)
        }
        if (!outcome.data) {
          s.bytes = 0;
          s.out->error_code = to_kafka(outcome.data.err());
          if (version >= 16 && (s.out->error_code == error_code::not_leader_or_follower ||
                                s.out->error_code == error_code::fenced_leader_epoch))
            name_current_leader(*s.out, *s.p, svc.config.broker_id);
          s.out->records_ = protocol::records{};
          s.out->high_watermark = -1;  // Kafka's error response for a partition: no offsets
          s.out->last_stable_offset = -1;
          s.out->log_start_offset = -1;
          s.out->aborted_transactions = std::nullopt;
          any_error = true;
          continue;
        }
        s.out->error_code = error_code::none;
        protocol::records rec;
        rec.file = outcome.data->region;
        s.out->records_ = std::move(rec);
        s.bytes = outcome.data->region.size;
        if (s.throttled && s.bytes > 0)
          svc.quotas->record_replication(quota_manager::replication_side::leader, static_cast<int64_t>(s.bytes),
                                         svc.clock.now_ms());
        total += outcome.data->region.size;
        budget -= outcome.data->region.size;
        if (outcome.data->region.size > 0) min_one = false;
      }
      if (total >= min_bytes || any_error || follower_behind || redirected || (slots.empty() && waiting_quiet == 0) ||
          until.passed()) {
        if (!from_follower) {
          throttle_for_quota(svc, rc, quota_manager::kind::fetch, total);  // KIP-13
          if (metrics::enabled())
            for (const auto& s : slots) s.p->bytes_out.add(s.bytes);
        }
        break;
      }

      // Long poll (Kafka's DelayedFetch): one waiter parked on every partition read, woken by the first
      // append (consumer: HW move) there, else ended by max_wait_ms on the injected clock; then read again.
      auto waiter = std::make_shared<purgatory_waiter>(rc.executor);
      for (const auto& q : quiet) {
        if (q.active) continue;
        if (read_committed) q.p->park_committed(waiter, q.fetch_offset);
        else q.p->park(waiter, q.fetch_offset);
      }
      for (auto& s : slots) {
        // A consumer parks from here (partition::park is thread-safe); a follower on the partition's strand.
        if (!from_follower) {
          if (read_committed) s.p->park_committed(waiter, s.fetch_offset);
          else s.p->park(waiter, s.fetch_offset);
          continue;
        }
        auto park_op = call_on(s.p->strand(), [p = s.p, waiter, offset = s.fetch_offset] {
          p->park_follower(waiter, offset);
          return true;
        });
        co_await std::move(park_op);
      }
      const int64_t parked_us = svc.clock.monotonic_us();
      static metrics::gauge& parked_fetches = purgatory_size("Fetch");
      parked_in_purgatory counted(parked_fetches);
      auto wait_op = waiter->wait(until);  // not inside co_await: GCC 12
      co_await std::move(wait_op);
      rc.waited_us += svc.clock.monotonic_us() - parked_us;  // not work: request_percentage leaves it out
      // A quiet partition that has something to tell now joins the fetch, which starts over (reads have no side
      // effect for a consumer).
      for (auto& q : quiet) {
        if (q.active || is_quiet(*q.p, q.fetch_offset, read_committed, q.last_fetched_epoch, q.last_hw, q.last_start))
          continue;
        q.active = true;
        restart = true;
      }
      if (restart) break;
    }
  }
  if (in_session.session) {
    svc.fetch_sessions->finish(in_session, resp);
  } else if (make_session) {
    // The new session holds what was answered, in the answer's order, with the request's parameters (Kafka's
    // FullFetchContext.createNewSession).
    std::vector<cached_fetch_partition> cached;
    for (const auto& tr : resp.responses) {
      const std::string key =
          version >= 13 ? std::string(tr.topic_id.bytes.begin(), tr.topic_id.bytes.end()) : tr.topic;
      for (const auto& pd : tr.partitions) {
        const auto [ti, pi] = last_entry[{key, pd.partition_index}];
        auto c = cached_from_request(req.topics[ti], req.topics[ti].partitions[pi]);
        c.high_watermark = pd.high_watermark;
        c.local_log_start_offset = pd.log_start_offset;
        cached.push_back(std::move(c));
      }
    }
    resp.session_id = svc.fetch_sessions->maybe_create(from_follower, uses_topic_ids, std::move(cached));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
