// group_coordinator: construction, the shared plumbing (validation, group lookup, answer delivery,
// group metadata records) and ownership of the partition (load, replay, unload). Each phase of the
// protocol has its own file: join_phase.cc, sync_phase.cc, leave.cc, offsets.cc, admin.cc, timers.cc.
#include "broker/groups/group_coordinator.h"

#include <cstdio>
#include <random>

#include "base/logging.h"
#include "broker/groups/partition_for_group.h"

namespace sluice::groups {

namespace {

std::string random_uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng(), lo = rng();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                     // version 4
  lo = (lo & ~(0xC0ULL << 56)) | (0x80ULL << 56);          // IETF variant
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

}  // namespace

std::string_view to_string(group_coordinator::load_state s) {
  switch (s) {
    case group_coordinator::load_state::inactive: return "inactive";
    case group_coordinator::load_state::loading: return "loading";
    case group_coordinator::load_state::active: return "active";
  }
  return "inactive";
}

group_coordinator::group_coordinator(int32_t partition, group_config config, const sluice::clock& clock,
                                     std::function<std::string()> uuid)
    : partition_(partition), config_(config), clock_(clock),
      uuid_(uuid ? std::move(uuid) : std::function<std::string()>(random_uuid)) {}

group_coordinator::~group_coordinator() = default;

// ---------------------------------------------------------------------------------------------------
// Plumbing

void group_coordinator::flush() {
  if (flushing_) return;  // the outer flush delivers what a nested call queued
  flushing_ = true;
  while (!out_.empty()) {
    auto batch = std::move(out_);
    out_.clear();
    for (auto& f : batch) f();
  }
  flushing_ = false;
}

join_group_result group_coordinator::join_error(const std::string& member_id, group_error e) {
  join_group_result r;
  r.error = e;
  r.member_id = member_id;
  return r;
}

std::optional<group_error> group_coordinator::validate(const std::string& group_id, api a) const {
  // Kafka's isValidGroupId: the offset APIs, DescribeGroups and DeleteGroups accept "" for
  // compatibility; group membership needs a non-empty id.
  bool empty_ok = a == api::offset_commit || a == api::offset_fetch || a == api::describe || a == api::del;
  if (group_id.empty() && !empty_ok) return group_error::invalid_group_id;
  if (state_ == load_state::inactive) return group_error::not_coordinator;
  if (partition_ >= 0 && partition_for_group(group_id, config_.offsets_topic_num_partitions) != partition_) {
    return group_error::not_coordinator;
  }
  if (state_ == load_state::loading) return group_error::coordinator_load_in_progress;
  return std::nullopt;
}

std::shared_ptr<group> group_coordinator::get_group(const std::string& group_id) const {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second;
}

std::shared_ptr<group> group_coordinator::get_or_create(const std::string& group_id, bool create) {
  auto g = get_group(group_id);
  if (!g && create) {
    g = std::make_shared<group>(group_id, wall());
    groups_[group_id] = g;
  }
  return g;
}

const group* group_coordinator::find_group(const std::string& group_id) const {
  return get_group(group_id).get();
}

std::string group_coordinator::new_member_id(const std::string& prefix) { return prefix + "-" + uuid_(); }

// ---------------------------------------------------------------------------------------------------
// Ownership

void group_coordinator::begin_loading() {
  if (state_ == load_state::active) unload();
  state_ = load_state::loading;
  replay_groups_.clear();
  replay_offsets_.clear();
  replay_txn_offsets_.clear();
  replay_consumer_.clear();
}

void group_coordinator::replay(const bytes& key, const std::optional<bytes>& value, const record_context& ctx) {
  if (state_ == load_state::inactive) return;  // a write that completed after unload(): the next load reads it
  auto k = decode_key(key);
  if (!k) {
    log::warn("groups[{}]: skipping undecodable __consumer_offsets key: {}", partition_, k.err().message);
    return;
  }
  if (state_ == load_state::active) {
    if (auto* ok = std::get_if<offset_commit_key>(&*k)) {
      const topic_partition tp{ok->topic, ok->partition};
      if (value && ctx.transactional) {
        replay_txn_offset(ok->group, tp, *value, ctx);
      } else {
        replay_offset(ok->group, tp, value, ctx);
      }
    } else if (auto* gk = std::get_if<group_metadata_key>(&*k); gk && !value) {
      replay_group_tombstone(gk->group, false);
    } else if (std::holds_alternative<other_key>(*k) && !value) {
      auto ck = decode_consumer_key(key);
      if (ck && *ck && (*ck)->type == consumer_record_type::group_metadata) replay_group_tombstone((*ck)->group, true);
    }
    // A group metadata value (classic or KIP-848) is the snapshot of a live group that already holds it.
    return;
  }
  if (std::holds_alternative<other_key>(*k)) {
    auto ck = decode_consumer_key(key);
    if (!ck) {
      log::warn("groups[{}]: skipping undecodable consumer group key: {}", partition_, ck.err().message);
    } else if (*ck) {
      load_consumer_record(**ck, value);
    }
    return;
  }
  if (auto* ok = std::get_if<offset_commit_key>(&*k)) {
    load_offset(ok->group, topic_partition{ok->topic, ok->partition}, value, ctx);
  } else if (auto* gk = std::get_if<group_metadata_key>(&*k)) {
    if (!value) {
      replay_groups_.erase(gk->group);
      return;
    }
    auto v = decode_group_metadata_value(*value);
    if (!v) {
      log::warn("groups[{}]: skipping metadata record of group {}: {}", partition_, gk->group, v.err().message);
      return;
    }
    replay_groups_[gk->group] = std::move(*v);
    replay_consumer_.erase(gk->group);  // a classic group replaces a consumer group of the same id
  }
}

void group_coordinator::load_offset(const std::string& group_id, const topic_partition& tp,
                                    const std::optional<bytes>& value, const record_context& ctx) {
  if (!value) {
    auto it = replay_offsets_.find(group_id);
    if (it != replay_offsets_.end()) {
      it->second.erase(tp);
      if (it->second.empty()) replay_offsets_.erase(it);
    }
    // The tombstone also removes the partition's pending transactional offsets (Kafka's replay of a tombstone).
    for (auto pit = replay_txn_offsets_.begin(); pit != replay_txn_offsets_.end();) {
      auto git = pit->second.find(group_id);
      if (git != pit->second.end()) {
        git->second.erase(tp);
        if (git->second.empty()) pit->second.erase(git);
      }
      pit = pit->second.empty() ? replay_txn_offsets_.erase(pit) : std::next(pit);
    }
    return;
  }
  auto v = decode_offset_commit_value(*value);
  if (!v) {
    log::warn("groups[{}]: skipping offset record of group {}: {}", partition_, group_id, v.err().message);
    return;
  }
  committed_offset c{v->offset, v->leader_epoch, v->metadata, v->commit_timestamp, v->expire_timestamp, ctx.offset};
  if (ctx.transactional) {
    replay_txn_offsets_[ctx.producer_id][group_id][tp] = std::move(c);
    replay_offsets_.try_emplace(group_id);  // the group exists from its first commit, as Kafka's replay creates it
  } else {
    replay_offsets_[group_id][tp] = std::move(c);
  }
}

void group_coordinator::replay_end_txn(int64_t producer_id, bool commit) {
  // A transaction's offset is committed only where it is newer than the committed one (Kafka: "We always keep the
  // most recent committed offset when we have a mix of transactional and regular offset commits").
  auto newer = [](const committed_offset& pending, const committed_offset& current) {
    return pending.record_offset < 0 || current.record_offset < 0 || pending.record_offset > current.record_offset;
  };
  if (state_ == load_state::loading) {
    auto it = replay_txn_offsets_.find(producer_id);
    if (it == replay_txn_offsets_.end()) return;
    if (commit) {
      for (auto& [group_id, offsets] : it->second) {
        auto& committed = replay_offsets_[group_id];
        for (auto& [tp, c] : offsets) {
          auto cur = committed.find(tp);
          if (cur == committed.end() || newer(c, cur->second)) committed[tp] = std::move(c);
        }
      }
    }
    replay_txn_offsets_.erase(it);
    return;
  }
  if (state_ != load_state::active) return;
  auto it = txn_groups_.find(producer_id);
  if (it == txn_groups_.end()) return;
  size_t applied = 0;
  for (const auto& group_id : it->second) {
    auto g = get_group(group_id);
    if (!g) continue;
    auto pit = g->pending_txn_offsets.find(producer_id);
    if (pit == g->pending_txn_offsets.end()) continue;
    if (commit) {
      for (auto& [tp, c] : pit->second) {
        auto cur = g->offsets.find(tp);
        if (cur == g->offsets.end() || newer(c, cur->second)) {
          g->offsets[tp] = std::move(c);
          ++applied;
        } else {
          log::info("groups[{}]: transactional offset of producer {} for {} {}-{} (record {}) is older than the "
                    "committed one (record {}): not materialized",
                    partition_, producer_id, group_id, tp.topic, tp.partition, c.record_offset,
                    cur->second.record_offset);
        }
      }
    }
    g->pending_txn_offsets.erase(pit);
  }
  log::debug("groups[{}]: {} marker of producer {}: {} offsets committed", partition_, commit ? "COMMIT" : "ABORT",
             producer_id, applied);
  txn_groups_.erase(it);
}

void group_coordinator::finish_loading() {
  groups_.clear();
  int64_t now_wall = wall();
  for (auto& [id, v] : replay_groups_) {
    auto g = std::make_shared<group>(id, v.current_state_timestamp);
    g->generation_id = v.generation;
    g->protocol_type = v.protocol_type;
    g->protocol_name = v.protocol;
    for (auto& rm : v.members) {
      member m;
      m.member_id = rm.member_id;
      m.group_instance_id = rm.group_instance_id;
      m.client_id = rm.client_id;
      m.client_host = rm.client_host;
      m.rebalance_timeout_ms = rm.rebalance_timeout;
      m.session_timeout_ms = rm.session_timeout;
      m.protocol_type = v.protocol_type;
      if (v.protocol) m.protocols.push_back({*v.protocol, rm.subscription});
      m.assignment = rm.assignment;
      g->add(std::move(m), nullptr);
    }
    g->leader_id = v.leader;
    if (g->leader_id && !g->has(*g->leader_id)) {
      g->leader_id = g->members.empty() ? std::nullopt : std::optional<std::string>(g->members.front().member_id);
    }
    g->state = g->members.empty() ? group_state::empty : group_state::stable;
    g->compute_subscribed_topics();
    for (auto& m : g->members) schedule_heartbeat(*g, m);
    groups_[id] = g;
  }
  for (auto& [id, offsets] : replay_offsets_) {
    auto& g = groups_[id];
    if (!g) g = std::make_shared<group>(id, now_wall);  // a "simple" group: offsets only
    g->offsets = std::move(offsets);
  }
  txn_groups_.clear();
  for (auto& [producer_id, by_group] : replay_txn_offsets_) {
    for (auto& [id, offsets] : by_group) {
      auto& g = groups_[id];
      if (!g) g = std::make_shared<group>(id, now_wall);
      g->pending_txn_offsets[producer_id] = std::move(offsets);
      txn_groups_[producer_id].insert(id);
    }
  }
  finish_loading_consumer_groups();
  replay_groups_.clear();
  replay_offsets_.clear();
  replay_txn_offsets_.clear();
  state_ = load_state::active;
  next_expiration_check_ = mono() + config_.offsets_retention_check_interval_ms;
  log::info("groups[{}]: loaded {} groups", partition_, groups_.size());
}

void group_coordinator::unload() {
  for (auto& [id, g] : groups_) {
    g->transition_to(group_state::dead, wall());
    for (auto& m : g->members) {
      g->invoke_join_callback(m, join_error(m.member_id, group_error::not_coordinator), out_);
      g->invoke_sync_callback(m, sync_group_result{group_error::not_coordinator, {}, {}, {}}, out_);
    }
  }
  groups_.clear();
  replay_groups_.clear();
  replay_offsets_.clear();
  replay_txn_offsets_.clear();
  replay_consumer_.clear();
  txn_groups_.clear();
  next_expiration_check_.reset();
  state_ = load_state::inactive;
  flush();
}

// ---------------------------------------------------------------------------------------------------
// Group metadata records (written by the join phase, the sync phase and static member replacement)

group_record group_coordinator::group_metadata_record(const group& g,
                                                      const std::map<std::string, bytes>& assignment) const {
  group_metadata_value v;
  v.protocol_type = g.protocol_type.value_or("");
  v.generation = g.generation_id;
  v.protocol = g.protocol_name;
  v.leader = g.leader_id;
  v.current_state_timestamp = g.current_state_timestamp;
  for (const auto& m : g.members) {
    member_metadata_record rm;
    rm.member_id = m.member_id;
    rm.group_instance_id = m.group_instance_id;
    rm.client_id = m.client_id;
    rm.client_host = m.client_host;
    rm.rebalance_timeout = m.rebalance_timeout_ms;
    rm.session_timeout = m.session_timeout_ms;
    rm.subscription = m.metadata_for(g.protocol_name.value_or(""));
    auto it = assignment.find(m.member_id);
    if (it != assignment.end()) rm.assignment = it->second;
    v.members.push_back(std::move(rm));
  }
  return group_record{encode_key(group_metadata_key{g.id}), encode_value(v)};
}

void group_coordinator::write(std::vector<group_record> records, std::function<void(group_error)> done) {
  writes_.push_back({std::move(records), [this, done = std::move(done)](group_error e) {
                       done(e);
                       flush();
                     }});
}

std::vector<group_write> group_coordinator::take_writes() {
  auto out = std::move(writes_);
  writes_.clear();
  return out;
}

void group_coordinator::store_new_group(const std::shared_ptr<group>& g) {
  group_metadata_value v;
  v.protocol_type = "";
  v.generation = 0;
  v.current_state_timestamp = g->current_state_timestamp;
  std::vector<group_record> records;
  records.push_back(group_record{encode_key(group_metadata_key{g->id}), encode_value(v)});
  write(std::move(records), [this, g](group_error e) {
    if (e == group_error::none) return;
    log::warn("groups[{}]: could not write the empty metadata of new group {}: {}", partition_, g->id,
              to_string(e));
    auto it = groups_.find(g->id);
    if (it != groups_.end() && it->second == g && g->is(group_state::empty) && g->members.empty() &&
        g->pending_members.empty() && !g->has_offsets())
      groups_.erase(it);
  });
}

void group_coordinator::store_group(const std::shared_ptr<group>& g, const std::map<std::string, bytes>& assignment,
                                    std::function<void(group_error)> done) {
  std::vector<group_record> records;
  records.push_back(group_metadata_record(*g, assignment));
  write(std::move(records), [done = std::move(done)](group_error e) { done(map_group_append_error(e)); });
}

// ---------------------------------------------------------------------------------------------------
// Live replay: committed records this coordinator asked for

void group_coordinator::replay_offset(const std::string& group_id, const topic_partition& tp,
                                      const std::optional<bytes>& value, const record_context& ctx) {
  if (!value) {
    auto g = get_group(group_id);
    if (!g) return;
    g->offsets.erase(tp);
    // Kafka: "Remove all the pending offset commits related to the tombstone."
    for (auto pit = g->pending_txn_offsets.begin(); pit != g->pending_txn_offsets.end();) {
      pit->second.erase(tp);
      if (!pit->second.empty()) {
        ++pit;
        continue;
      }
      if (auto t = txn_groups_.find(pit->first); t != txn_groups_.end()) {
        t->second.erase(group_id);
        if (t->second.empty()) txn_groups_.erase(t);
      }
      pit = g->pending_txn_offsets.erase(pit);
    }
    return;
  }
  auto v = decode_offset_commit_value(*value);
  if (!v) {
    log::warn("groups[{}]: skipping offset record of group {}: {}", partition_, group_id, v.err().message);
    return;
  }
  // A commit for a group no longer in memory makes an offsets-only group, as a reload would.
  auto g = get_or_create(group_id, true);
  g->offsets[tp] =
      committed_offset{v->offset, v->leader_epoch, v->metadata, v->commit_timestamp, v->expire_timestamp, ctx.offset};
  auto it = g->pending_offset_commits.find(tp);
  if (it != g->pending_offset_commits.end() && --it->second <= 0) g->pending_offset_commits.erase(it);
}

void group_coordinator::replay_txn_offset(const std::string& group_id, const topic_partition& tp, const bytes& value,
                                          const record_context& ctx) {
  auto v = decode_offset_commit_value(value);
  auto g = get_or_create(group_id, true);  // Kafka creates the simple group at replay, as a reload does
  auto it = g->pending_offset_commits.find(tp);
  if (it != g->pending_offset_commits.end() && --it->second <= 0) g->pending_offset_commits.erase(it);
  if (!v) {
    log::warn("groups[{}]: skipping transactional offset record of group {}: {}", partition_, group_id,
              v.err().message);
    return;
  }
  g->pending_txn_offsets[ctx.producer_id][tp] =
      committed_offset{v->offset, v->leader_epoch, v->metadata, v->commit_timestamp, v->expire_timestamp, ctx.offset};
  txn_groups_[ctx.producer_id].insert(group_id);
}

void group_coordinator::replay_group_tombstone(const std::string& group_id, bool consumer) {
  auto g = get_group(group_id);
  // Only the tombstone of the group's own type removes it: converting a group between the classic and the consumer
  // type writes the other type's tombstone.
  if (!g || !g->members.empty() || g->is_consumer() != consumer) return;
  if (g->is_consumer() && !g->consumer->members.empty()) return;
  if (!g->has_offsets()) {
    groups_.erase(group_id);
    return;
  }
  // Offsets committed while the deletion was on its way outlive it, as a reload would keep them: they make
  // an offsets-only group.
  auto fresh = std::make_shared<group>(group_id, wall());
  fresh->offsets = std::move(g->offsets);
  fresh->pending_offset_commits = std::move(g->pending_offset_commits);
  fresh->pending_txn_offsets = std::move(g->pending_txn_offsets);
  groups_[group_id] = fresh;
}

}  // namespace sluice::groups
