// group_coordinator, committed offsets: OffsetCommit, OffsetFetch, and offset retention (KIP-211).
#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

namespace {

/// Kafka 4.x ClassicGroup.validateOffsetCommit: COORDINATOR_NOT_AVAILABLE for a dead group; generation -1 into an
/// Empty group comes from the admin client, a consumer not using group management or its producer, and is
/// accepted whatever member id or group instance id it carries (a static member cannot exist in an Empty group);
/// with member fields: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION; without them, only
/// `transactional` commits (TxnOffsetCommit v0-2 carries none) are accepted into a group with members.
std::optional<group_error> validate_commit(const group& g, int32_t generation_id, const std::string& member_id,
                                           const std::optional<std::string>& group_instance_id, bool transactional) {
  if (g.is(group_state::dead)) return group_error::coordinator_not_available;
  if (generation_id < 0 && g.is(group_state::empty)) return std::nullopt;
  if (generation_id >= 0 || !member_id.empty() || group_instance_id) {
    if (auto invalid = g.validate_member(member_id, group_instance_id)) return invalid;
    if (generation_id != g.generation_id) return group_error::illegal_generation;
    return std::nullopt;
  }
  if (!transactional && !g.is(group_state::empty)) return group_error::unknown_member_id;  // members only
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// OffsetCommit, OffsetFetch

coordinator_result<offset_commit_result> group_coordinator::offset_commit(offset_commit_request r) {
  auto all = [&](group_error e) {
    coordinator_result<offset_commit_result> res;
    for (const auto& p : r.partitions) res.response.partitions.push_back({p.tp, e});
    return res;
  };
  if (auto e = validate(r.group_id, api::offset_commit)) return all(*e);
  auto g = get_group(r.group_id);
  if (!g) {
    if (r.generation_id < 0) {
      // Not using Kafka's group management ("simple" consumer): the commit creates an Empty group.
      g = get_or_create(r.group_id, true);
    } else {
      // Kafka 4.x (OffsetMetadataManager.validateOffsetCommit): GROUP_ID_NOT_FOUND from v9, which works
      // for classic and KIP-848 groups alike; ILLEGAL_GENERATION before, for compatibility.
      return all(r.api_version >= 9 ? group_error::group_id_not_found : group_error::illegal_generation);
    }
  }
  if (g->is_consumer() && !g->is(group_state::dead)) {
    // KIP-848: the member's epoch instead of a generation (Kafka's ConsumerGroup.validateOffsetCommit).
    return store_offsets(g, r, map_offset_append_error, consumer_commit_errors(*g, r));
  }
  if (auto v = validate_commit(*g, r.generation_id, r.member_id, r.group_instance_id, false)) return all(*v);
  switch (g->state) {
    case group_state::empty:
      return store_offsets(g, r);
    case group_state::stable:
    case group_state::preparing_rebalance:
      // During PreparingRebalance commits are still allowed: the heartbeat tells of the rebalance.
      schedule_heartbeat(*g, *g->find(r.member_id));
      return store_offsets(g, r);
    case group_state::completing_rebalance:
      return all(group_error::rebalance_in_progress);
    case group_state::dead:
      break;
  }
  return all(group_error::coordinator_not_available);
}

coordinator_result<offset_commit_result> group_coordinator::txn_offset_commit(txn_offset_commit_request r) {
  auto all = [&](group_error e) {
    coordinator_result<offset_commit_result> res;
    for (const auto& p : r.partitions) res.response.partitions.push_back({p.tp, e});
    return res;
  };
  if (auto e = validate(r.group_id, api::txn_offset_commit)) return all(*e);
  auto g = get_group(r.group_id);
  if (!g) {
    // Kafka 4.x OffsetMetadataManager.validateTransactionalOffsetCommit: without a generation the request comes
    // from a producer whose consumer does not use group management, and a simple group is created; with one,
    // ILLEGAL_GENERATION.
    if (r.generation_id >= 0) return all(group_error::illegal_generation);
    g = get_or_create(r.group_id, true);
  }
  // Kafka 4.x ClassicGroup.validateOffsetCommit(isTransactional = true). Unlike OffsetCommit, no
  // REBALANCE_IN_PROGRESS while CompletingRebalance and no session refresh.
  if (g->is_consumer() && !g->is(group_state::dead)) {
    if (auto v = validate_consumer_txn_commit(*g, r.generation_id, r.member_id)) return all(*v);
  } else if (auto v = validate_commit(*g, r.generation_id, r.member_id, r.group_instance_id, true)) {
    return all(*v);
  }
  offset_commit_request c;
  c.group_id = r.group_id;
  c.generation_id = r.generation_id;
  c.member_id = r.member_id;
  c.group_instance_id = r.group_instance_id;
  c.partitions = std::move(r.partitions);
  for (auto& p : c.partitions) p.commit_timestamp_ms = -1;  // the broker's time (OffsetAndMetadata.fromRequest)
  auto out = store_offsets(g, c, map_txn_offset_append_error);
  out.producer = producer_stamp{r.producer_id, r.producer_epoch};
  return out;
}

coordinator_result<offset_commit_result> group_coordinator::store_offsets(const std::shared_ptr<group>& g,
                                                                          offset_commit_request& r,
                                                                          group_error (*map_error)(group_error),
                                                                          const std::vector<group_error>& refused) {
  int64_t now_wall = wall();
  std::vector<group_error> own(r.partitions.size(), group_error::none);  // an error of its own: not stored
  std::vector<topic_partition> tps;
  coordinator_result<offset_commit_result> out;
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    const auto& p = r.partitions[i];
    tps.push_back(p.tp);
    std::string metadata = p.metadata.value_or("");
    if (i < refused.size() && refused[i] != group_error::none) {
      own[i] = refused[i];
    } else if (static_cast<int64_t>(metadata.size()) > config_.offset_metadata_max_bytes) {
      own[i] = group_error::offset_metadata_too_large;
    }
    out.response.partitions.push_back({p.tp, own[i]});
    if (own[i] != group_error::none) continue;
    const int64_t commit_timestamp = p.commit_timestamp_ms == -1 ? now_wall : p.commit_timestamp_ms;
    std::optional<int64_t> expire_timestamp;
    if (r.retention_time_ms != -1) expire_timestamp = now_wall + r.retention_time_ms;
    out.records.push_back({encode_key(offset_commit_key{g->id, p.tp.topic, p.tp.partition}),
                           encode_value(offset_commit_value{p.offset, p.leader_epoch, std::move(metadata),
                                                            commit_timestamp, expire_timestamp, p.topic_id})});
    // Until replayed (or failed), OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for it.
    g->pending_offset_commits[p.tp] += 1;
  }
  if (out.records.empty()) return out;
  out.failed = [g, own = std::move(own), tps = std::move(tps), map_error](group_error e) {
    offset_commit_result res;
    for (size_t i = 0; i < tps.size(); ++i) {
      const bool stored = own[i] == group_error::none;
      if (stored) {
        auto it = g->pending_offset_commits.find(tps[i]);
        if (it != g->pending_offset_commits.end() && --it->second <= 0) g->pending_offset_commits.erase(it);
      }
      res.partitions.push_back({tps[i], stored ? map_error(e) : own[i]});
    }
    return res;
  };
  return out;
}

offset_fetch_result group_coordinator::offset_fetch(const std::string& group_id,
                                                    const std::optional<std::vector<topic_partition>>& partitions,
                                                    bool require_stable, const std::optional<std::string>& member_id,
                                                    int32_t member_epoch) {
  offset_fetch_result out;
  if (auto e = validate(group_id, api::offset_fetch)) {
    out.error = *e;
    return out;
  }
  // Offsets are returned whatever the group's state: it may use Kafka for offsets only.
  auto g = get_group(group_id);
  if (g && g->is_consumer() && !g->is(group_state::dead) && (member_id || member_epoch >= 0)) {
    // Kafka's ConsumerGroup.validateOffsetFetch: a named member must be one, at its current epoch.
    auto it = g->consumer->members.find(member_id.value_or(""));
    if (it == g->consumer->members.end()) {
      out.error = group_error::unknown_member_id;
      return out;
    }
    if (it->second.member_epoch != member_epoch) {
      out.error = group_error::stale_member_epoch;
      return out;
    }
  }
  bool live = g && !g->is(group_state::dead);
  auto entry = [&](const topic_partition& tp) {
    offset_fetch_partition p;
    p.tp = tp;
    if (!live) return p;
    if (require_stable && (g->pending_offset_commits.count(tp) || g->has_pending_txn_offset(tp))) {
      // KIP-447 (OffsetFetch v7+): a commit for it is not yet acknowledged, or an open transaction holds an offset
      // for it (Kafka's hasPendingTransactionalOffsets): offset -1, the client retries.
      p.error = group_error::unstable_offset_commit;
      return p;
    }
    auto it = g->offsets.find(tp);
    if (it != g->offsets.end()) {
      p.offset = it->second.offset;
      p.leader_epoch = it->second.leader_epoch;
      p.metadata = it->second.metadata;
    }
    return p;
  };
  if (partitions) {
    for (const auto& tp : *partitions) out.partitions.push_back(entry(tp));
  } else if (live) {
    for (const auto& [tp, c] : g->offsets) out.partitions.push_back(entry(tp));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Offset retention (run by on_timer every offsets.retention.check.interval.ms)

std::vector<topic_partition> group_coordinator::expired_offsets(group& g, int64_t now_wall) const {
  // Kafka's GroupMetadata.removeExpiredOffsets (KIP-211).
  auto collect = [&](auto base_timestamp, const std::set<std::string>* subscribed) {
    std::vector<topic_partition> out;
    for (const auto& [tp, c] : g.offsets) {
      if (subscribed && subscribed->count(tp.topic)) continue;
      if (g.pending_offset_commits.count(tp)) continue;
      if (g.has_pending_txn_offset(tp)) continue;  // Kafka: not expired while a transaction holds an offset for it
      bool expired = c.expire_timestamp ? now_wall >= *c.expire_timestamp
                                        : now_wall - base_timestamp(c) >= config_.offsets_retention_ms;
      if (expired) out.push_back(tp);
    }
    return out;
  };
  if (g.protocol_type && g.is(group_state::empty)) {
    // No member: the retention runs from when the group became Empty.
    int64_t since = g.current_state_timestamp;
    return collect([since](const committed_offset& c) { return since >= 0 ? since : c.commit_timestamp; }, nullptr);
  }
  if (g.protocol_type == "consumer" && g.subscribed_topics && g.is(group_state::stable)) {
    // Offsets of topics nobody subscribes to any more expire from their commit time.
    return collect([](const committed_offset& c) { return c.commit_timestamp; }, &*g.subscribed_topics);
  }
  if (!g.protocol_type) {
    // A "simple" group: each offset expires from its commit time.
    return collect([](const committed_offset& c) { return c.commit_timestamp; }, nullptr);
  }
  return {};
}

void group_coordinator::expire_offsets() {
  int64_t now_wall = wall();
  std::vector<std::shared_ptr<group>> all;
  for (const auto& [id, g] : groups_) all.push_back(g);
  for (auto& g : all) {
    if (g->is(group_state::dead)) continue;  // its tombstones are on their way
    auto removed = expired_offsets(*g, now_wall);
    bool deleted = false;
    auto records = tombstones(g, removed, &deleted);
    if (records.empty()) continue;
    log::info("groups: removing {} expired offsets of group {}{}", removed.size(), g->id,
              deleted ? " and the group" : "");
    write(std::move(records), [this, g, deleted](group_error e) {
      if (e == group_error::none) return;
      log::warn("groups: expiration tombstones of group {} failed: {}", g->id, to_string(e));
      if (deleted) revive(g);
    });
  }
}

}  // namespace sluice::groups
