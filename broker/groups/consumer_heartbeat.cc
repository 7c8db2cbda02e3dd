// group_coordinator, KIP-848 consumer groups: ConsumerGroupHeartbeat (join, heartbeat, leave), the group epoch,
// the target assignment, each member's reconciliation, their records, ConsumerGroupDescribe, loading, and the
// session and revocation deadlines. Kafka 4.x's GroupMetadataManager is the specification.
#include <algorithm>

#include "base/logging.h"
#include "broker/groups/group_coordinator.h"

namespace sluice::groups {

namespace {

using heartbeat_result = coordinator_result<consumer_heartbeat_result>;

/// The epoch a new consumer group starts from: its first member's join bumps it to 2, the epoch Kafka 4.4 gives
/// a new group's first member (compat/diff's consumer_group_heartbeat scenarios).
constexpr int32_t first_group_epoch = 1;

heartbeat_result heartbeat_error(group_error e, std::string message = {}) {
  heartbeat_result out;
  out.response.error = e;
  if (!message.empty()) out.response.error_message = std::move(message);
  return out;
}

/// The answer when a heartbeat's records could not be appended: the append's error as Kafka's coordinator service
/// normalises write errors (the same mapping as TxnOffsetCommit's).
consumer_heartbeat_result heartbeat_append_failed(group_error e) {
  consumer_heartbeat_result res;
  res.error = map_txn_offset_append_error(e);
  return res;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (request shape only); the message is Kafka's.
std::optional<std::pair<group_error, std::string>> invalid_heartbeat(const consumer_heartbeat_request& r,
                                                                     const group_config& config) {
  auto bad = [](std::string m) { return std::make_optional(std::make_pair(group_error::invalid_request, std::move(m))); };
  if (r.group_id.empty()) return bad("GroupId can't be empty.");
  if (r.instance_id && r.instance_id->empty()) return bad("InstanceId can't be empty.");
  if (r.rack_id && r.rack_id->empty()) return bad("RackId can't be empty.");
  if (r.api_version >= 1 && r.member_id.empty()) return bad("MemberId can't be empty.");
  if (r.member_epoch > 0 || r.member_epoch == leave_epoch) {
    if (r.member_id.empty()) return bad("MemberId can't be empty.");
  } else if (r.member_epoch == join_epoch) {
    if (r.rebalance_timeout_ms == -1) return bad("RebalanceTimeoutMs must be provided in first request.");
    if (!r.owned || !r.owned->empty()) return bad("TopicPartitions must be empty when (re-)joining.");
    if (!r.subscribed_topic_names && !r.subscribed_topic_regex) {
      return bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.");
    }
  } else if (r.member_epoch == static_leave_epoch) {
    if (r.member_id.empty()) return bad("MemberId can't be empty.");
    if (!r.instance_id) return bad("InstanceId can't be null.");
  } else {
    return bad("MemberEpoch is invalid.");
  }
  if (r.server_assignor &&
      std::find(config.consumer_assignors.begin(), config.consumer_assignors.end(), *r.server_assignor) ==
          config.consumer_assignors.end()) {
    return std::make_pair(group_error::unsupported_assignor,
                          "ServerAssignor " + *r.server_assignor + " is not supported. Supported assignors: " +
                              join_names(config.consumer_assignors) + ".");
  }
  return std::nullopt;
}

/// Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a greater epoch is fenced; a smaller one only passes when it
/// is the previous epoch and the member owns no more than it is assigned (the answer with the bump was lost).
std::optional<group_error> invalid_epoch(const consumer_member& m, int32_t received,
                                         const std::optional<partition_map>& owned) {
  if (received > m.member_epoch) return group_error::fenced_member_epoch;
  if (received < m.member_epoch) {
    if (received != m.previous_member_epoch || (owned && !is_subset(*owned, m.assigned))) {
      return group_error::fenced_member_epoch;
    }
  }
  return std::nullopt;
}

/// GROUP_ID_NOT_FOUND for a heartbeat or describe that names an unknown group, or one that is not a consumer group.
std::string not_consumer_group(const std::string& group_id, bool exists) {
  return "Group " + group_id + (exists ? " is not a consumer group." : " not found.");
}

/// Makes `g` a consumer group starting at Kafka's first epoch (a new group, or an Empty classic one converted).
void make_consumer_group(group& g) {
  g.consumer = std::make_unique<consumer_group_state>();
  g.consumer->group_epoch = g.consumer->assignment_epoch = first_group_epoch;
  g.protocol_type = "consumer";
}

std::string fenced_message(const consumer_member& m, int32_t received) {
  return "The consumer group member has a " + std::string(received > m.member_epoch ? "greater" : "smaller") +
         " member epoch (" + std::to_string(received) + ") than the one known by the group coordinator (" +
         std::to_string(m.member_epoch) + "). The member must abandon all its partitions and rejoin.";
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// ConsumerGroupHeartbeat

std::shared_ptr<group> group_coordinator::consumer_group_for(const consumer_heartbeat_request& r,
                                                             std::vector<group_record>& records, group_error& err,
                                                             std::string& message) {
  auto g = get_group(r.group_id);
  const bool joining = r.member_epoch == join_epoch;
  if (g && g->is(group_state::dead)) {
    err = group_error::coordinator_not_available;  // being deleted: the client retries
    return nullptr;
  }
  if (!g) {
    if (!joining) {
      err = group_error::group_id_not_found;
      message = not_consumer_group(r.group_id, false);
      return nullptr;
    }
    g = get_or_create(r.group_id, true);
    make_consumer_group(*g);
    log::info("groups: created consumer group {}", r.group_id);
    return g;
  }
  if (g->is_consumer()) return g;
  // A classic group: an Empty one becomes a consumer group when a member joins (Kafka 4.0's upgrade of an empty
  // classic group); its offsets stay, its classic metadata record goes.
  if (joining && g->members.empty() && g->pending_members.empty() && g->is(group_state::empty)) {
    records.push_back({encode_key(group_metadata_key{g->id}), std::nullopt});
    make_consumer_group(*g);
    g->protocol_name.reset();
    g->leader_id.reset();
    g->generation_id = 0;
    g->subscribed_topics.reset();
    log::info("groups: empty classic group {} converted to a consumer group", g->id);
    return g;
  }
  err = group_error::group_id_not_found;
  message = not_consumer_group(r.group_id, true);
  return nullptr;
}

heartbeat_result group_coordinator::consumer_group_heartbeat(consumer_heartbeat_request r) {
  if (auto bad = invalid_heartbeat(r, config_)) return heartbeat_error(bad->first, bad->second);
  if (r.subscribed_topic_regex && !r.subscribed_topic_regex->empty()) {
    std::string why;
    auto& cached = regex_cache_[*r.subscribed_topic_regex];
    if (!cached) cached = topic_regex::compile(*r.subscribed_topic_regex, &why);
    if (!cached) {
      regex_cache_.erase(*r.subscribed_topic_regex);
      return heartbeat_error(group_error::invalid_regular_expression,
                             "SubscribedTopicRegex `" + *r.subscribed_topic_regex + "` is not a valid regular expression: " + why + ".");
    }
  }
  if (auto e = validate(r.group_id, api::heartbeat)) return heartbeat_error(*e);

  if (r.member_epoch == leave_epoch || r.member_epoch == static_leave_epoch) {
    auto g = get_group(r.group_id);
    if (!g || !g->is_consumer() || g->is(group_state::dead)) {
      return heartbeat_error(group_error::group_id_not_found,
                             not_consumer_group(r.group_id, g != nullptr));
    }
    return consumer_leave(*g, r);
  }

  const bool joining = r.member_epoch == join_epoch;
  std::vector<group_record> records;
  // Validate everything against the current state before changing any of it.
  {
    auto g = get_group(r.group_id);
    if (g && g->is_consumer()) {
      const auto& cg = *g->consumer;
      const bool known = cg.members.count(r.member_id) || (r.instance_id && cg.static_members.count(*r.instance_id));
      if (static_cast<int64_t>(cg.members.size()) >= config_.consumer_max_size && !known) {
        return heartbeat_error(group_error::group_max_size_reached,
                               "The consumer group has reached its maximum capacity of " +
                                   std::to_string(config_.consumer_max_size) + " members.");
      }
      const consumer_member* existing = nullptr;
      if (r.instance_id) {
        auto sit = cg.static_members.find(*r.instance_id);
        if (sit != cg.static_members.end()) existing = &cg.members.at(sit->second);
        if (joining) {
          if (existing && existing->member_epoch != static_leave_epoch && existing->member_id != r.member_id) {
            return heartbeat_error(group_error::unreleased_instance_id,
                                   "Static member " + r.member_id + " with instance id " + *r.instance_id +
                                       " cannot join the group because the instance id is owned by member " +
                                       existing->member_id + ".");
          }
        } else {
          if (!existing) return heartbeat_error(group_error::unknown_member_id, "Instance id " + *r.instance_id + " is unknown.");
          if (existing->member_id != r.member_id) {
            return heartbeat_error(group_error::fenced_instance_id,
                                   "Static member " + r.member_id + " with instance id " + *r.instance_id +
                                       " was fenced by member " + existing->member_id + ".");
          }
        }
      } else {
        auto mit = cg.members.find(r.member_id);
        if (mit != cg.members.end()) existing = &mit->second;
        if (!existing && !joining) {
          return heartbeat_error(group_error::unknown_member_id,
                                 "Member " + r.member_id + " is not a member of group " + r.group_id + ".");
        }
      }
      if (existing && !joining) {
        if (auto e = invalid_epoch(*existing, r.member_epoch, r.owned)) return heartbeat_error(*e, fenced_message(*existing, r.member_epoch));
        // Kafka's CurrentAssignmentBuilder: a member in an unknown state must rejoin owning nothing.
        if (existing->state == member_state::unknown && (!r.owned || partition_count(*r.owned) != 0)) {
          return heartbeat_error(group_error::fenced_member_epoch,
                                 "The consumer group member is in a unknown state. The member must abandon all its "
                                 "partitions and rejoin.");
        }
      }
    } else if (!joining) {
      return heartbeat_error(group_error::group_id_not_found,
                             not_consumer_group(r.group_id, g != nullptr));
    }
  }
  group_error err = group_error::none;
  std::string message;
  auto g = consumer_group_for(r, records, err, message);
  if (!g) return heartbeat_error(err, message);
  auto& cg = *g->consumer;

  if (r.member_id.empty()) r.member_id = uuid_();  // v0: the coordinator names a joining member
  // The member as it was (none: new), and the one this heartbeat makes.
  std::optional<consumer_member> before;
  if (r.instance_id && joining) {
    auto sit = cg.static_members.find(*r.instance_id);
    if (sit != cg.static_members.end() && sit->second != r.member_id) {
      // A static member comes back under a new member id: it takes over the old member's assignment (Kafka's
      // replaceMember); the group epoch does not move.
      consumer_member replaced = cg.members.at(sit->second);
      const std::string old_id = replaced.member_id;
      partition_map old_target = cg.target.count(old_id) ? cg.target.at(old_id) : partition_map{};
      records.push_back(current_assignment_tombstone(g->id, old_id));
      records.push_back(target_assignment_tombstone(g->id, old_id));
      records.push_back(member_subscription_tombstone(g->id, old_id));
      cg.members.erase(old_id);
      cg.target.erase(old_id);
      replaced.member_id = r.member_id;
      replaced.member_epoch = 0;
      replaced.previous_member_epoch = 0;
      replaced.pending_revocation.clear();
      replaced.revocation_deadline.reset();
      cg.members[r.member_id] = replaced;
      cg.target[r.member_id] = old_target;
      records.push_back(target_assignment_record(g->id, r.member_id, old_target));
      records.push_back(member_subscription_record(g->id, replaced));  // the id changed: a new metadata record
      before = replaced;
      log::info("groups: static member {} of group {} replaced member {} by {}", *r.instance_id, g->id, old_id,
                r.member_id);
    } else if (sit != cg.static_members.end()) {
      before = cg.members.at(sit->second);
    }
  } else {
    auto mit = cg.members.find(r.member_id);
    if (mit != cg.members.end()) before = mit->second;
  }
  if (joining && before && before->member_epoch == static_leave_epoch) {
    // A static member back after a temporary leave: it starts again from epoch 0 with its partitions.
    before->member_epoch = 0;
    before->previous_member_epoch = 0;
  }

  consumer_member m = before ? *before : consumer_member{};
  m.member_id = r.member_id;
  if (r.instance_id) m.instance_id = r.instance_id;
  if (r.rack_id) m.rack_id = r.rack_id;
  if (r.rebalance_timeout_ms != -1) m.rebalance_timeout_ms = r.rebalance_timeout_ms;
  if (r.server_assignor) m.server_assignor = r.server_assignor;
  if (r.subscribed_topic_names) {
    auto names = *r.subscribed_topic_names;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    m.subscribed_topic_names = std::move(names);
  }
  if (r.subscribed_topic_regex) {
    m.subscribed_topic_regex = r.subscribed_topic_regex->empty() ? std::nullopt : r.subscribed_topic_regex;
  }
  m.client_id = r.client_id;
  m.client_host = r.client_host;

  bool bump = !before || !m.same_subscription(*before);
  if (!before || !m.same_metadata(*before)) records.push_back(member_subscription_record(g->id, m));
  if (!before) log::info("groups: member {} joined consumer group {}", m.member_id, g->id);
  cg.members[m.member_id] = m;
  if (m.instance_id) cg.static_members[*m.instance_id] = m.member_id;
  g->state = group_state::stable;  // has members (see group.h)

  refresh_regexes(*g, records);
  if (refresh_subscription(*g)) bump = true;
  if (bump) {
    ++cg.group_epoch;
    records.push_back(group_epoch_record(g->id, cg.group_epoch));
    log::info("groups: consumer group {} epoch bumped to {}", g->id, cg.group_epoch);
  }
  if (cg.group_epoch > cg.assignment_epoch) update_target_assignment(*g, records);

  consumer_member& cur = cg.members[m.member_id];
  const partition_map assigned_before = before ? before->assigned : partition_map{};
  if (!cur.is_reconciled_to(cg.assignment_epoch)) {
    static const partition_map none;
    auto tit = cg.target.find(cur.member_id);
    const std::string self = cur.member_id;
    auto next = reconcile(cur, cg.assignment_epoch, tit == cg.target.end() ? none : tit->second, r.owned,
                          [&](const topic_uuid& t, int32_t p) { return cg.partition_owner_epoch(t, p, self); });
    // The unknown-state refusal was checked above, before any change; a joining member is never in that state.
    if (next && !next->same_assignment_state(cur)) {
      records.push_back(current_assignment_record(g->id, *next));
      if (next->state == member_state::unrevoked_partitions) {
        next->revocation_deadline = mono() + std::max(next->rebalance_timeout_ms, 0);
      } else {
        next->revocation_deadline.reset();
      }
      cur = std::move(*next);
    }
  }
  cur.session_deadline = mono() + config_.consumer_session_timeout_ms;

  heartbeat_result out;
  out.records = std::move(records);
  out.failed = heartbeat_append_failed;
  out.response.member_id = cur.member_id;
  out.response.member_epoch = cur.member_epoch;
  out.response.heartbeat_interval_ms = config_.consumer_heartbeat_interval_ms;
  const bool full = joining || (r.rebalance_timeout_ms != -1 && r.subscribed_topic_names && r.owned);
  if (full || cur.assigned != assigned_before) out.response.assignment = cur.assigned;
  return out;
}

heartbeat_result group_coordinator::consumer_leave(group& g, const consumer_heartbeat_request& r) {
  auto& cg = *g.consumer;
  std::string member_id = r.member_id;
  if (r.instance_id) {
    auto sit = cg.static_members.find(*r.instance_id);
    if (sit == cg.static_members.end()) {
      return heartbeat_error(group_error::unknown_member_id, "Instance id " + *r.instance_id + " is unknown.");
    }
    if (sit->second != r.member_id) {
      return heartbeat_error(group_error::fenced_instance_id, "Static member " + r.member_id + " with instance id " +
                                                                  *r.instance_id + " was fenced by member " +
                                                                  sit->second + ".");
    }
    if (r.member_epoch == static_leave_epoch) {
      // Kafka's consumerGroupStaticMemberGroupLeave: the member keeps its assignment until its session expires
      // or it comes back; epoch -2 marks the instance id as released.
      auto& m = cg.members.at(member_id);
      m.previous_member_epoch = m.member_epoch;
      m.member_epoch = static_leave_epoch;
      m.pending_revocation.clear();
      m.revocation_deadline.reset();
      heartbeat_result out;
      out.records.push_back(current_assignment_record(g.id, m));
      out.response.member_id = member_id;
      out.response.member_epoch = static_leave_epoch;
      out.failed = heartbeat_append_failed;
      log::info("groups: static member {} (instance {}) of group {} left temporarily", member_id, *r.instance_id, g.id);
      return out;
    }
  } else if (!cg.members.count(member_id)) {
    return heartbeat_error(group_error::unknown_member_id,
                           "Member " + member_id + " is not a member of group " + g.id + ".");
  }
  heartbeat_result out;
  fence_consumer_member(g, member_id, out.records);
  out.response.member_id = member_id;
  out.response.member_epoch = r.member_epoch;
  out.failed = heartbeat_append_failed;
  log::info("groups: member {} left consumer group {}", member_id, g.id);
  return out;
}

void group_coordinator::fence_consumer_member(group& g, const std::string& member_id,
                                              std::vector<group_record>& records) {
  auto& cg = *g.consumer;
  auto it = cg.members.find(member_id);
  if (it == cg.members.end()) return;
  records.push_back(current_assignment_tombstone(g.id, member_id));
  records.push_back(target_assignment_tombstone(g.id, member_id));
  records.push_back(member_subscription_tombstone(g.id, member_id));
  if (it->second.instance_id) {
    auto sit = cg.static_members.find(*it->second.instance_id);
    if (sit != cg.static_members.end() && sit->second == member_id) cg.static_members.erase(sit);
  }
  cg.members.erase(it);
  cg.target.erase(member_id);
  refresh_regexes(g, records);
  refresh_subscription(g);
  ++cg.group_epoch;
  records.push_back(group_epoch_record(g.id, cg.group_epoch));
  if (cg.members.empty()) g.transition_to(group_state::empty, wall());
}

// ---------------------------------------------------------------------------------------------------
// Subscriptions and the target assignment

std::set<std::string> group_coordinator::member_topics(const consumer_group_state& cg, const consumer_member& m) const {
  std::set<std::string> out(m.subscribed_topic_names.begin(), m.subscribed_topic_names.end());
  if (m.subscribed_topic_regex) {
    auto it = cg.regexes.find(*m.subscribed_topic_regex);
    if (it != cg.regexes.end()) out.insert(it->second.topics.begin(), it->second.topics.end());
  }
  return out;
}

void group_coordinator::refresh_regexes(group& g, std::vector<group_record>& records, bool resolve_new) {
  auto& cg = *g.consumer;
  std::set<std::string> in_use;
  for (const auto& [id, m] : cg.members) {
    if (m.subscribed_topic_regex) in_use.insert(*m.subscribed_topic_regex);
  }
  for (auto it = cg.regexes.begin(); it != cg.regexes.end();) {
    if (in_use.count(it->first)) {
      ++it;
      continue;
    }
    records.push_back(regex_tombstone(g.id, it->first));
    it = cg.regexes.erase(it);
  }
  if (in_use.empty() || !topics_.all) return;
  const auto all = topics_.all();
  for (const auto& pattern : in_use) {
    if (!resolve_new && !cg.regexes.count(pattern)) {
      if (!cg.regex_resolution_due) cg.regex_resolution_due = mono();
      continue;
    }
    auto& compiled = regex_cache_[pattern];
    if (!compiled) compiled = topic_regex::compile(pattern, nullptr);
    if (!compiled) continue;
    std::set<std::string> matched;
    for (const auto& t : all) {
      if (compiled->matches(t.name)) matched.insert(t.name);
    }
    auto [rit, fresh] = cg.regexes.try_emplace(pattern);
    if (!fresh && rit->second.topics == matched) continue;
    rit->second.topics = std::move(matched);
    rit->second.version += 1;
    rit->second.timestamp = wall();
    records.push_back(regex_record(g.id, pattern, rit->second));
  }
}

bool group_coordinator::refresh_subscription(group& g) {
  auto& cg = *g.consumer;
  std::map<std::string, subscribed_topic> next;
  std::set<std::string> names;  // for the offset rules shared with classic groups (OffsetDelete, retention)
  for (const auto& [id, m] : cg.members) {
    for (const auto& name : member_topics(cg, m)) {
      names.insert(name);
      if (next.count(name) || !topics_.by_name) continue;
      if (auto t = topics_.by_name(name)) next[name] = subscribed_topic{t->id, t->partitions};
    }
  }
  g.subscribed_topics = std::move(names);
  if (next == cg.subscription) return false;
  cg.subscription = std::move(next);
  return true;
}

void group_coordinator::update_target_assignment(group& g, std::vector<group_record>& records) {
  auto& cg = *g.consumer;
  std::vector<assignor_member> members;
  std::map<topic_uuid, int32_t> partitions;
  for (const auto& [name, t] : cg.subscription) partitions[t.id] = t.partitions;
  for (const auto& [id, m] : cg.members) {
    assignor_member am{id, {}};
    for (const auto& name : member_topics(cg, m)) {
      auto it = cg.subscription.find(name);
      if (it != cg.subscription.end()) am.topics.insert(it->second.id);
    }
    members.push_back(std::move(am));
  }
  const std::string assignor = cg.assignor(config_.consumer_assignors.empty() ? std::string(uniform_assignor)
                                                                              : config_.consumer_assignors.front());
  auto next = assignor == range_assignor ? assign_range(members, partitions)
                                         : assign_uniform(members, partitions, cg.target);
  for (const auto& [id, target] : next) {
    auto old = cg.target.find(id);
    if (old == cg.target.end() || old->second != target) records.push_back(target_assignment_record(g.id, id, target));
  }
  cg.target = std::move(next);
  cg.assignment_epoch = cg.group_epoch;
  records.push_back(target_assignment_epoch_record(g.id, cg.assignment_epoch));
  log::info("groups: consumer group {} target assignment at epoch {} ({} members, assignor {})", g.id,
            cg.assignment_epoch, cg.members.size(), assignor);
}

// ---------------------------------------------------------------------------------------------------
// Offsets of consumer groups

std::optional<group_error> group_coordinator::validate_consumer_txn_commit(const group& g, int32_t member_epoch,
                                                                           const std::string& member_id) const {
  const auto& cg = *g.consumer;
  // Epoch -1: a producer whose consumer does not use group management, accepted while the group is empty.
  if (member_epoch < 0 && cg.members.empty()) return std::nullopt;
  auto it = cg.members.find(member_id);
  if (it == cg.members.end()) return group_error::unknown_member_id;
  if (member_epoch != it->second.member_epoch) return group_error::illegal_generation;  // Kafka's transactional rule
  return std::nullopt;
}

std::vector<group_error> group_coordinator::consumer_commit_errors(const group& g, const offset_commit_request& r) const {
  std::vector<group_error> out(r.partitions.size(), group_error::none);
  auto all = [&](group_error e) {
    std::fill(out.begin(), out.end(), e);
    return out;
  };
  const auto& cg = *g.consumer;
  if (r.generation_id < 0 && cg.members.empty()) return out;
  auto it = cg.members.find(r.member_id);
  if (it == cg.members.end()) return all(group_error::unknown_member_id);
  const consumer_member& m = it->second;
  if (r.api_version < 9) return all(group_error::unsupported_version);
  if (r.generation_id == m.member_epoch) return out;
  if (r.generation_id > m.member_epoch) return all(group_error::stale_member_epoch);
  // KIP-1251 (Kafka 4.4): an older epoch may commit a partition the member held at that epoch already (assigned,
  // or pending revocation), so a commit racing an epoch bump is not refused.
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    auto since = m.assignment_epoch_of(r.partitions[i].topic_id, r.partitions[i].tp.partition);
    if (!since || r.generation_id < *since) out[i] = group_error::stale_member_epoch;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// ConsumerGroupDescribe

consumer_group_description group_coordinator::describe_consumer_group(const std::string& group_id) const {
  consumer_group_description d;
  d.group_id = group_id;
  if (auto e = validate(group_id, api::describe)) {
    d.error = *e;
    return d;
  }
  auto g = get_group(group_id);
  if (!g || g->is(group_state::dead) || !g->is_consumer()) {
    d.error = group_error::group_id_not_found;
    d.error_message = not_consumer_group(group_id, g && !g->is(group_state::dead));
    return d;
  }
  const auto& cg = *g->consumer;
  d.state = std::string(cg.state_name());
  d.group_epoch = cg.group_epoch;
  d.assignment_epoch = cg.assignment_epoch;
  d.assignor = cg.assignor(config_.consumer_assignors.empty() ? std::string(uniform_assignor)
                                                              : config_.consumer_assignors.front());
  for (const auto& [id, m] : cg.members) d.members.push_back(m);
  d.target = cg.target;
  return d;
}

// ---------------------------------------------------------------------------------------------------
// Loading

void group_coordinator::load_consumer_record(const consumer_record_key& k, const std::optional<bytes>& value) {
  auto warn = [&](const error& e) {
    log::warn("groups[{}]: skipping consumer group record (type {}) of group {}: {}", partition_,
              static_cast<int>(k.type), k.group, e.message);
  };
  if (k.type == consumer_record_type::group_metadata) {
    if (!value) {
      replay_consumer_.erase(k.group);
      return;
    }
    auto epoch = decode_epoch_value(*value);
    if (!epoch) return warn(epoch.err());
    replay_consumer_[k.group].group_epoch = *epoch;
    replay_groups_.erase(k.group);  // a consumer group replaces a classic one of the same id
    return;
  }
  auto& lg = replay_consumer_[k.group];
  switch (k.type) {
    case consumer_record_type::member_metadata: {
      if (!value) {
        lg.members.erase(k.sub);
        lg.with_metadata.erase(k.sub);
        return;
      }
      auto& m = lg.members[k.sub];
      m.member_id = k.sub;
      if (auto ok = decode_member_metadata_value(*value, m); !ok) return warn(ok.err());
      lg.with_metadata.insert(k.sub);
      return;
    }
    case consumer_record_type::current_member_assignment: {
      if (!value) {
        auto it = lg.members.find(k.sub);
        if (it != lg.members.end()) {
          it->second.assigned.clear();
          it->second.pending_revocation.clear();
        }
        return;
      }
      auto& m = lg.members[k.sub];
      m.member_id = k.sub;
      if (auto ok = decode_current_assignment_value(*value, m); !ok) return warn(ok.err());
      return;
    }
    case consumer_record_type::target_assignment_member: {
      if (!value) {
        lg.target.erase(k.sub);
        return;
      }
      auto t = decode_target_assignment_value(*value);
      if (!t) return warn(t.err());
      lg.target[k.sub] = std::move(*t);
      return;
    }
    case consumer_record_type::target_assignment_metadata: {
      if (!value) {
        lg.assignment_epoch = 0;
        return;
      }
      auto epoch = decode_epoch_value(*value);
      if (!epoch) return warn(epoch.err());
      lg.assignment_epoch = *epoch;
      return;
    }
    case consumer_record_type::regular_expression: {
      if (!value) {
        lg.regexes.erase(k.sub);
        return;
      }
      auto r = decode_regex_value(*value);
      if (!r) return warn(r.err());
      lg.regexes[k.sub] = std::move(*r);
      return;
    }
    case consumer_record_type::group_metadata:
      return;
  }
}

void group_coordinator::finish_loading_consumer_groups() {
  const int64_t now = mono();
  for (auto& [id, lg] : replay_consumer_) {
    if (!lg.group_epoch) continue;  // members' records without the group's own: a deleted group's leftovers
    auto& g = groups_[id];
    if (!g) g = std::make_shared<group>(id, wall());
    g->consumer = std::make_unique<consumer_group_state>();
    g->protocol_type = "consumer";
    auto& cg = *g->consumer;
    cg.group_epoch = *lg.group_epoch;
    cg.assignment_epoch = lg.assignment_epoch;
    cg.regexes = std::move(lg.regexes);
    for (auto& [mid, m] : lg.members) {
      if (!lg.with_metadata.count(mid)) continue;
      m.session_deadline = now + config_.consumer_session_timeout_ms;
      if (m.state == member_state::unrevoked_partitions) m.revocation_deadline = now + std::max(m.rebalance_timeout_ms, 0);
      if (m.instance_id) cg.static_members[*m.instance_id] = mid;
      for (const partition_map* owned : {&m.assigned, &m.pending_revocation}) {
        for (const auto& [t, ps] : *owned) {
          for (int32_t p : ps) m.partition_epochs[t][p] = m.member_epoch;  // assignment epochs are not persisted
        }
      }
      cg.members[mid] = std::move(m);
    }
    for (auto& [mid, t] : lg.target) {
      if (cg.members.count(mid)) cg.target[mid] = std::move(t);
    }
    refresh_subscription(*g);  // as the topics are now (no bump: the next change bumps)
    g->state = cg.members.empty() ? group_state::empty : group_state::stable;
  }
  replay_consumer_.clear();
}

// ---------------------------------------------------------------------------------------------------
// Deadlines

void group_coordinator::process_consumer_deadlines(const std::shared_ptr<group>& g, int64_t now) {
  if (!g->is_consumer() || g->is(group_state::dead)) return;
  auto& cg = *g->consumer;
  if (cg.regex_resolution_due && *cg.regex_resolution_due <= now) {
    // New regexes resolved: a change of the subscribed topics bumps the group epoch; the next heartbeat of each
    // member computes and receives the new target.
    cg.regex_resolution_due.reset();
    std::vector<group_record> records;
    refresh_regexes(*g, records, true);
    if (refresh_subscription(*g)) {
      ++cg.group_epoch;
      records.push_back(group_epoch_record(g->id, cg.group_epoch));
      log::info("groups: consumer group {} epoch bumped to {} (regular expressions resolved)", g->id, cg.group_epoch);
    }
    if (!records.empty()) write(std::move(records), [](group_error) {});
  }
  std::vector<std::pair<std::string, const char*>> expired;
  for (const auto& [id, m] : cg.members) {
    if (m.session_deadline && *m.session_deadline <= now) {
      expired.emplace_back(id, "the member session expired");
    } else if (m.revocation_deadline && *m.revocation_deadline <= now && m.state == member_state::unrevoked_partitions) {
      expired.emplace_back(id, "the member failed to revoke partitions within the rebalance timeout");
    }
  }
  if (expired.empty()) return;
  std::vector<group_record> records;
  for (const auto& [id, why] : expired) {
    log::info("groups: member {} of consumer group {} fenced: {}", id, g->id, why);
    fence_consumer_member(*g, id, records);
  }
  write(std::move(records), [](group_error) {});
}

}  // namespace sluice::groups
