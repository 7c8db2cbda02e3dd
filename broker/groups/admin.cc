// group_coordinator, administration: DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, and
// cleanup_group (offset and group tombstones, also used by offset retention).
#include <algorithm>
#include <cctype>

#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

namespace {

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
  if (!g) {
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
    auto state = to_string(g->state);
    if (!matches(states, state) || !matches(types, "classic")) continue;
    out.groups.push_back({id, g->protocol_type.value_or(""), std::string(state)});
  }
  return out;
}

void group_coordinator::delete_groups(const std::vector<std::string>& group_ids, delete_groups_callback done) {
  auto results = std::make_shared<std::vector<group_deletion_result>>();
  std::vector<std::shared_ptr<group>> eligible;
  for (const auto& id : group_ids) {
    if (auto e = validate(id, api::del)) {
      results->push_back({id, *e});
      continue;
    }
    auto g = get_group(id);
    if (!g || g->is(group_state::dead)) {
      results->push_back({id, group_error::group_id_not_found});
    } else if (g->is(group_state::empty)) {
      results->push_back({id, group_error::none});
      eligible.push_back(g);
    } else {
      results->push_back({id, group_error::non_empty_group});
    }
  }
  auto remaining = std::make_shared<size_t>(eligible.size() + 1);
  auto finish = [this, results, remaining, done = std::move(done)]() mutable {
    if (--*remaining == 0) reply(done, std::move(*results));
  };
  for (auto& g : eligible) {
    g->transition_to(group_state::dead, wall());
    cleanup_group(g, [](group& gg) {
      std::vector<topic_partition> all;
      for (const auto& [tp, c] : gg.offsets) all.push_back(tp);
      return all;
    }, [finish, id = g->id](group_error e) mutable {
      // Kafka answers NONE once the group is gone from memory, whatever the append's outcome.
      if (e != group_error::none) log::warn("groups: tombstones of deleted group {} failed: {}", id, to_string(e));
      finish();
    });
  }
  finish();
  flush();
}

void group_coordinator::offset_delete(const std::string& group_id, const std::vector<topic_partition>& partitions,
                                      offset_delete_callback done) {
  offset_delete_result out;
  if (auto e = validate(group_id, api::offset_delete)) {
    out.error = *e;
    reply(done, std::move(out));
    flush();
    return;
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
  if (eligible.empty()) {
    reply(done, std::move(out));
    flush();
    return;
  }
  for (const auto& tp : eligible) out.partitions.push_back({tp, group_error::none});
  // Answer in request order.
  std::vector<partition_error> ordered;
  for (const auto& tp : partitions) {
    auto it = std::find_if(out.partitions.begin(), out.partitions.end(), [&](const auto& p) { return p.tp == tp; });
    ordered.push_back(*it);
  }
  out.partitions = std::move(ordered);
  cleanup_group(g, [eligible](group& gg) {
    std::vector<topic_partition> removed;
    for (const auto& tp : eligible) {
      if (gg.offsets.count(tp)) removed.push_back(tp);
    }
    return removed;
  }, [this, out = std::move(out), done = std::move(done)](group_error e) mutable {
    if (e != group_error::none) log::warn("groups: offset tombstones failed: {}", to_string(e));
    reply(done, std::move(out));
  });
  flush();
}

std::vector<topic_partition> group_coordinator::cleanup_group(
    const std::shared_ptr<group>& g, const std::function<std::vector<topic_partition>(group&)>& selector,
    std::function<void(group_error)> done) {
  auto removed = selector(*g);
  std::vector<group_record> records;
  for (const auto& tp : removed) {
    g->offsets.erase(tp);
    records.push_back({encode_key(offset_commit_key{g->id, tp.topic, tp.partition}), std::nullopt});
  }
  if (g->is(group_state::empty) && !g->has_offsets()) {
    log::info("groups: group {} transitioned to Dead in generation {}", g->id, g->generation_id);
    g->transition_to(group_state::dead, wall());
  }
  if (g->is(group_state::dead)) {
    groups_.erase(g->id);
    // A group that never completed a generation has no metadata record to delete.
    if (g->generation_id > 0) records.push_back({encode_key(group_metadata_key{g->id}), std::nullopt});
  }
  if (records.empty()) {
    done(group_error::none);
    return removed;
  }
  std::weak_ptr<int> alive = alive_;
  log_.append(std::move(records), [this, alive, done = std::move(done)](group_error e) {
    if (alive.expired()) return;
    done(e);
    flush();
  });
  return removed;
}

}  // namespace sluice::groups
