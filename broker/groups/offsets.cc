// group_coordinator, committed offsets: OffsetCommit, OffsetFetch, and offset retention (KIP-211).
#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

namespace {

// Kafka's GroupMetadataManager.storeOffsets error mapping of the append result.
group_error map_offset_append_error(group_error e) {
  switch (e) {
    case group_error::unknown_topic_or_partition:
    case group_error::not_enough_replicas:
    case group_error::not_enough_replicas_after_append:
      return group_error::coordinator_not_available;
    case group_error::not_leader_or_follower:
    case group_error::kafka_storage_error:
      return group_error::not_coordinator;
    case group_error::message_too_large:
    case group_error::record_list_too_large:
    case group_error::invalid_fetch_size:
      return group_error::invalid_commit_offset_size;
    default:
      return e;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// OffsetCommit, OffsetFetch

void group_coordinator::offset_commit(offset_commit_request r, offset_commit_callback done) {
  auto all = [&](group_error e) {
    offset_commit_result res;
    for (const auto& p : r.partitions) res.partitions.push_back({p.tp, e});
    reply(done, std::move(res));
  };
  if (auto e = validate(r.group_id, api::offset_commit)) {
    all(*e);
    flush();
    return;
  }
  auto g = get_group(r.group_id);
  if (!g) {
    if (r.generation_id < 0) {
      // Not using Kafka's group management ("simple" consumer): the commit creates an Empty group.
      g = get_or_create(r.group_id, true);
    } else {
      // Kafka 4.x (OffsetMetadataManager.validateOffsetCommit): GROUP_ID_NOT_FOUND from v9, which works
      // for classic and KIP-848 groups alike; ILLEGAL_GENERATION before, for compatibility.
      all(r.api_version >= 9 ? group_error::group_id_not_found : group_error::illegal_generation);
      flush();
      return;
    }
  }
  std::optional<group_error> v;
  if (g->is(group_state::dead)) {
    v = group_error::coordinator_not_available;
  } else if (r.generation_id < 0 && g->is(group_state::empty)) {
    // Kafka 4.x ClassicGroup.validateOffsetCommit: generation -1 into an Empty group comes from the admin
    // client or a consumer not using group management; accepted whatever member id or group instance id
    // it carries (a static member cannot exist in an Empty group).
  } else if (r.generation_id >= 0 || !r.member_id.empty() || r.group_instance_id) {
    if (g->is_static_member_fenced(r.group_instance_id, r.member_id)) {
      v = group_error::fenced_instance_id;
    } else if (!g->has(r.member_id)) {
      v = group_error::unknown_member_id;
    } else if (r.generation_id != g->generation_id) {
      v = group_error::illegal_generation;
    }
  } else if (!g->is(group_state::empty)) {
    v = group_error::unknown_member_id;  // only members may commit for a group with members
  }
  if (v) {
    all(*v);
  } else {
    switch (g->state) {
      case group_state::empty:
        store_offsets(g, r, std::move(done));
        break;
      case group_state::stable:
      case group_state::preparing_rebalance: {
        // During PreparingRebalance commits are still allowed: the heartbeat tells of the rebalance.
        schedule_heartbeat(*g, *g->find(r.member_id));
        store_offsets(g, r, std::move(done));
        break;
      }
      case group_state::completing_rebalance:
        all(group_error::rebalance_in_progress);
        break;
      case group_state::dead:
        all(group_error::coordinator_not_available);
        break;
    }
  }
  flush();
}

void group_coordinator::store_offsets(const std::shared_ptr<group>& g, offset_commit_request& r,
                                      offset_commit_callback cb) {
  int64_t now_wall = wall();
  std::vector<bool> valid(r.partitions.size());
  std::vector<group_record> records;
  std::vector<std::pair<topic_partition, committed_offset>> pending;
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    const auto& p = r.partitions[i];
    std::string metadata = p.metadata.value_or("");
    valid[i] = static_cast<int64_t>(metadata.size()) <= config_.offset_metadata_max_bytes;
    if (!valid[i]) continue;
    committed_offset c;
    c.offset = p.offset;
    c.leader_epoch = p.leader_epoch;
    c.metadata = std::move(metadata);
    c.commit_timestamp = p.commit_timestamp_ms == -1 ? now_wall : p.commit_timestamp_ms;
    if (r.retention_time_ms != -1) c.expire_timestamp = now_wall + r.retention_time_ms;
    records.push_back({encode_key(offset_commit_key{g->id, p.tp.topic, p.tp.partition}),
                       encode_value(offset_commit_value{c.offset, c.leader_epoch, c.metadata,
                                                        c.commit_timestamp, c.expire_timestamp})});
    pending.emplace_back(p.tp, std::move(c));
  }
  auto answer = [valid, tps = [&] {
    std::vector<topic_partition> v;
    for (const auto& p : r.partitions) v.push_back(p.tp);
    return v;
  }()](group_error e) {
    offset_commit_result res;
    for (size_t i = 0; i < tps.size(); ++i) {
      res.partitions.push_back({tps[i], valid[i] ? e : group_error::offset_metadata_too_large});
    }
    return res;
  };
  if (records.empty()) {
    reply(cb, answer(group_error::none));
    return;
  }
  for (const auto& [tp, c] : pending) g->pending_offset_commits[tp] += 1;
  std::weak_ptr<int> alive = alive_;
  log_.append(std::move(records), [this, alive, g, pending = std::move(pending), answer = std::move(answer),
                                   cb = std::move(cb)](group_error e) mutable {
    if (alive.expired()) return;
    for (const auto& [tp, c] : pending) {
      auto it = g->pending_offset_commits.find(tp);
      if (it != g->pending_offset_commits.end() && --it->second <= 0) g->pending_offset_commits.erase(it);
      if (e == group_error::none && !g->is(group_state::dead)) g->offsets[tp] = c;
    }
    reply(cb, answer(map_offset_append_error(e)));
    flush();
  });
}

offset_fetch_result group_coordinator::offset_fetch(const std::string& group_id,
                                                    const std::optional<std::vector<topic_partition>>& partitions,
                                                    bool require_stable) {
  offset_fetch_result out;
  if (auto e = validate(group_id, api::offset_fetch)) {
    out.error = *e;
    return out;
  }
  // Offsets are returned whatever the group's state: it may use Kafka for offsets only.
  auto g = get_group(group_id);
  bool live = g && !g->is(group_state::dead);
  auto entry = [&](const topic_partition& tp) {
    offset_fetch_partition p;
    p.tp = tp;
    if (!live) return p;
    if (require_stable && g->pending_offset_commits.count(tp)) {
      // KIP-447 (OffsetFetch v7+): a commit for it is not yet acknowledged.
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
    auto removed = cleanup_group(g, [&](group& gg) { return expired_offsets(gg, now_wall); },
                                 [id = g->id](group_error e) {
                                   if (e != group_error::none) {
                                     log::warn("groups: expiration tombstones of group {} failed: {}", id, to_string(e));
                                   }
                                 });
    if (!removed.empty()) log::info("groups: removed {} expired offsets of group {}", removed.size(), g->id);
  }
}

}  // namespace sluice::groups
