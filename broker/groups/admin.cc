// group_coordinator, administration: DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, and
// tombstones (offset and group tombstones, also used by offset retention).
#include <algorithm>
#include <cctype>
#include <set>

#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

namespace {

/// The tombstone of one committed offset (OffsetCommitKey, no value).
group_record offset_tombstone(const std::string& group_id, const topic_partition& tp) {
  return {encode_key(offset_commit_key{group_id, tp.topic, tp.partition}), std::nullopt};
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// DescribeGroups, ListGroups, DeleteGroups, OffsetDelete

group_description group_coordinator::describe_group(const std::string& group_id) const {
  group_description d;
  d.group_id = group_id;
  if (auto e = validate(group_id, api::describe)) {
    d.error = *e;
    return d;
  }
  auto g = get_group(group_id);
  // Unknown, deleted and on its way out, or a KIP-848 group (Kafka's classicGroup() lookup fails for it; from v6
  // the handler answers GROUP_ID_NOT_FOUND).
  if (!g || g->is(group_state::dead) || g->is_consumer()) {
    d.state = "Dead";
    return d;
  }
  d.state = std::string(to_string(g->state));
  d.protocol_type = g->protocol_type.value_or("");
  bool stable = g->is(group_state::stable);
  // Kafka's GroupMetadata.summary: protocol, metadata and assignments only for a Stable group.
  if (stable) d.protocol = g->protocol_name.value_or("");
  for (const auto& m : g->members) {
    described_member dm{m.member_id, m.group_instance_id, m.client_id, m.client_host, {}, {}};
    if (stable) {
      dm.metadata = m.metadata_for(d.protocol);
      dm.assignment = m.assignment;
    }
    d.members.push_back(std::move(dm));
  }
  return d;
}

list_groups_result group_coordinator::list_groups(const std::vector<std::string>& states,
                                                  const std::vector<std::string>& types) const {
  list_groups_result out;
  if (state_ == load_state::inactive) return out;
  if (state_ == load_state::loading) out.error = group_error::coordinator_load_in_progress;
  auto matches = [](const std::vector<std::string>& filter, std::string_view v) {
    if (filter.empty()) return true;
    return std::any_of(filter.begin(), filter.end(), [&](const std::string& f) { return iequals(f, v); });
  };
  for (const auto& [id, g] : groups_) {
    if (g->is(group_state::dead)) continue;
    auto state = g->is_consumer() ? g->consumer->state_name() : to_string(g->state);
    if (!matches(states, state) || !matches(types, g->is_consumer() ? "consumer" : "classic")) continue;
    out.groups.push_back({id, g->protocol_type.value_or(""), std::string(state), g->is_consumer() ? "consumer" : "classic"});
  }
  return out;
}

coordinator_result<std::vector<group_deletion_result>> group_coordinator::delete_groups(
    const std::vector<std::string>& group_ids) {
  coordinator_result<std::vector<group_deletion_result>> out;
  std::vector<std::shared_ptr<group>> deleted;
  for (const auto& id : group_ids) {
    if (auto e = validate(id, api::del)) {
      out.response.push_back({id, *e});
      continue;
    }
    auto g = get_group(id);
    if (!g || g->is(group_state::dead)) {
      out.response.push_back({id, group_error::group_id_not_found});
    } else if (g->is(group_state::empty)) {
      out.response.push_back({id, group_error::none});
      std::vector<topic_partition> all;
      for (const auto& [tp, c] : g->offsets) all.push_back(tp);
      // Kafka 4.x deleteAllOffsets: a tombstone also for each partition only an open transaction holds an offset
      // for (its replay drops the pending offsets).
      std::set<topic_partition> pending_only;
      for (const auto& [pid, offsets] : g->pending_txn_offsets)
        for (const auto& [tp, c] : offsets)
          if (!g->offsets.count(tp)) pending_only.insert(tp);
      all.insert(all.end(), pending_only.begin(), pending_only.end());
      g->transition_to(group_state::dead, wall());  // whatever its pending commits: it is deleted
      bool gone = false;
      auto records = tombstones(g, all, &gone);
      out.records.insert(out.records.end(), std::make_move_iterator(records.begin()),
                         std::make_move_iterator(records.end()));
      deleted.push_back(g);
    } else {
      out.response.push_back({id, group_error::non_empty_group});
    }
  }
  if (out.records.empty()) return out;
  out.failed = [this, deleted, response = out.response](group_error e) mutable {
    // Nothing was deleted: the groups are Empty again and their entries carry the error.
    for (auto& g : deleted) {
      revive(g);
      for (auto& r : response) {
        if (r.group_id == g->id) r.error = map_group_append_error(e);
      }
    }
    return response;
  };
  return out;
}

coordinator_result<offset_delete_result> group_coordinator::offset_delete(const std::string& group_id,
                                                                          const std::vector<topic_partition>& partitions) {
  coordinator_result<offset_delete_result> result;
  offset_delete_result& out = result.response;
  if (auto e = validate(group_id, api::offset_delete)) {
    out.error = *e;
    return result;
  }
  auto g = get_group(group_id);
  std::vector<topic_partition> eligible;
  if (!g || g->is(group_state::dead)) {
    out.error = group_error::group_id_not_found;
  } else if (g->is(group_state::empty)) {
    eligible = partitions;
  } else if (g->protocol_type == "consumer") {
    for (const auto& tp : partitions) {
      if (g->is_subscribed_to(tp.topic)) {
        out.partitions.push_back({tp, group_error::group_subscribed_to_topic});
      } else {
        eligible.push_back(tp);
      }
    }
  } else {
    out.error = group_error::non_empty_group;
  }
  if (eligible.empty()) return result;
  for (const auto& tp : eligible) out.partitions.push_back({tp, group_error::none});
  // Answer in request order.
  std::vector<partition_error> ordered;
  for (const auto& tp : partitions) {
    auto it = std::find_if(out.partitions.begin(), out.partitions.end(), [&](const auto& p) { return p.tp == tp; });
    ordered.push_back(*it);
  }
  out.partitions = std::move(ordered);
  std::vector<topic_partition> removed;
  for (const auto& tp : eligible) {
    // Kafka 4.x: a tombstone when a committed or a pending transactional offset exists.
    if (g->offsets.count(tp) || g->has_pending_txn_offset(tp)) removed.push_back(tp);
  }
  // Kafka 4.x (OffsetMetadataManager.deleteOffsets) writes offset tombstones only: an Empty group left without
  // offsets stays, and goes at the next retention check (offsets.retention.check.interval.ms).
  std::vector<group_record> records;
  for (const auto& tp : removed) {
    records.push_back(offset_tombstone(g->id, tp));
  }
  result.records = std::move(records);
  if (result.records.empty()) return result;
  result.failed = [this](group_error e) {
    // Kafka answers the partitions' NONE once they are gone from memory; they are not, so say why.
    offset_delete_result r;
    r.error = map_group_append_error(e);
    return r;
  };
  return result;
}

size_t group_coordinator::on_partitions_deleted(const std::string& topic, int32_t partition_count) {
  if (state_ != load_state::active || partition_count <= 0) return 0;
  auto deleted = [&](const topic_partition& tp) {
    return tp.topic == topic && tp.partition >= 0 && tp.partition < partition_count;
  };
  std::vector<group_record> records;
  // Kafka's order: the committed offsets of every group, then each open transaction's pending ones.
  for (const auto& [id, g] : groups_) {
    if (g->is(group_state::dead)) continue;
    std::set<topic_partition> committed;
    for (const auto& [tp, c] : g->offsets)
      if (deleted(tp)) committed.insert(tp);
    for (const auto& [tp, n] : g->pending_offset_commits)
      if (deleted(tp)) committed.insert(tp);
    for (const auto& tp : committed) records.push_back(offset_tombstone(id, tp));
  }
  for (const auto& [id, g] : groups_) {
    if (g->is(group_state::dead)) continue;
    for (const auto& [pid, offsets] : g->pending_txn_offsets)
      for (const auto& [tp, c] : offsets)
        if (deleted(tp)) records.push_back(offset_tombstone(id, tp));
  }
  const size_t n = records.size();
  if (n == 0) return 0;
  log::info("groups[{}]: topic {} was deleted: removing {} offsets", partition_, topic, n);
  write(std::move(records), [this, topic](group_error e) {
    if (e != group_error::none)
      log::warn("groups[{}]: the offset tombstones of deleted topic {} failed: {}", partition_, topic, to_string(e));
  });
  return n;
}

std::vector<group_record> group_coordinator::tombstones(const std::shared_ptr<group>& g,
                                                        const std::vector<topic_partition>& removed, bool* deleted) {
  std::vector<group_record> records;
  for (const auto& tp : removed) {
    records.push_back(offset_tombstone(g->id, tp));
  }
  // Kafka 4.x cleanupExpiredOffsets: a group with open transactions' offsets is not removed.
  const bool offsets_left =
      !g->pending_offset_commits.empty() || !g->pending_txn_offsets.empty() || g->offsets.size() > removed.size();
  *deleted = (g->is(group_state::empty) || g->is(group_state::dead)) && (!offsets_left || g->is(group_state::dead));
  if (*deleted) {
    if (!g->is(group_state::dead)) {
      log::info("groups: group {} transitioned to Dead in generation {}", g->id, g->generation_id);
      g->transition_to(group_state::dead, wall());
    }
    if (g->is_consumer()) {
      // Kafka's consumer group deletion: the regular expressions, the assignment epoch and the group epoch.
      auto ends = consumer_group_tombstones(g->id, *g->consumer);
      records.insert(records.end(), std::make_move_iterator(ends.begin()), std::make_move_iterator(ends.end()));
    } else {
      records.push_back({encode_key(group_metadata_key{g->id}), std::nullopt});
    }
  }
  return records;
}

void group_coordinator::revive(const std::shared_ptr<group>& g) {
  auto it = groups_.find(g->id);
  if (it == groups_.end() || it->second != g || !g->is(group_state::dead)) return;
  g->transition_to(group_state::empty, wall());
}

}  // namespace sluice::groups
