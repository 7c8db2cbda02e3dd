#pragma once
// Shared fixture of the group coordinator tests: a manual clock, the runtime's appends in memory, and helpers
// that run the JoinGroup / SyncGroup dance.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "broker/groups/group_coordinator.h"
#include "broker/groups/record_codec.h"

namespace sluice::groups::test {

/// The coordinator runtime's part, in memory (broker/coordinator/runtime.h does it over the log): takes the
/// coordinator's queued writes and the records of its results, "appends" them (kept in records(); each record gets
/// the next offset when appended, and a result with a producer is that producer's transactional batch), replays them
/// into the coordinator with their context and completes them. By default at once; `hold` keeps them until
/// complete(); `fail_with` makes them fail (nothing replayed). marker() appends a transaction marker and replays it.
class memory_log {
 public:
  /// Appends what `gc` queued since the last call (the runtime does this after every call into a shard).
  void pump(group_coordinator& gc) {
    for (auto& w : gc.take_writes()) append(gc, std::move(w.records), std::nullopt, std::move(w.done));
  }
  /// Runs a result as coordinator_runtime::write does: `answer` gets the response after the append (at once
  /// without records), or `failed(error)`.
  template <typename R>
  void run(group_coordinator& gc, coordinator_result<R> res, std::function<void(R)> answer) {
    if (res.records.empty()) {
      answer(std::move(res.response));
    } else {
      append(gc, std::move(res.records), res.producer,
             [answer, response = std::move(res.response), failed = std::move(res.failed)](group_error e) mutable {
               answer(e == group_error::none ? std::move(response) : failed(e));
             });
    }
    pump(gc);
  }
  void complete(group_error e = group_error::none) {
    auto h = std::move(held);
    held.clear();
    for (auto& w : h) {
      if (w.marker) {
        w.gc->replay_end_txn(w.marker->first, w.marker->second);
      } else {
        finish(*w.gc, std::move(w), e);
      }
    }
  }
  /// A COMMIT or ABORT marker of `producer_id` appended (the next offset) and committed: replayed at once, or, as
  /// coordinator_runtime::on_txn_marker does, after the held appends made before it.
  void marker(group_coordinator& gc, int64_t producer_id, bool commit) {
    entries_.push_back({std::nullopt, {next_offset_++, producer_id, 0, true}, commit});
    if (!held.empty()) {
      held.push_back({&gc, {}, std::nullopt, -1, {}, std::make_pair(producer_id, commit)});
      return;
    }
    gc.replay_end_txn(producer_id, commit);
    pump(gc);
  }
  const std::vector<group_record>& records() const { return records_; }
  /// Replays the whole log into `gc` as a load does (begin_loading, records and markers in offset order,
  /// finish_loading).
  void load(group_coordinator& gc) const {
    auto sorted = entries_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const entry& a, const entry& b) { return a.ctx.offset < b.ctx.offset; });
    gc.begin_loading();
    for (const auto& e : sorted) {
      if (e.record) {
        gc.replay(e.record->key, e.record->value, e.ctx);
      } else {
        gc.replay_end_txn(e.ctx.producer_id, e.commit);
      }
    }
    gc.finish_loading();
  }

  bool hold = false;
  group_error fail_with = group_error::none;
  int appends = 0;

 private:
  struct pending {
    group_coordinator* gc;
    std::vector<group_record> records;
    std::optional<producer_stamp> producer;
    int64_t base_offset;
    std::function<void(group_error)> done;
    std::optional<std::pair<int64_t, bool>> marker;  // a marker queued behind held appends
  };
  struct entry {
    std::optional<group_record> record;  // none: a marker
    record_context ctx;
    bool commit = false;
  };
  void append(group_coordinator& gc, std::vector<group_record> records, std::optional<producer_stamp> producer,
              std::function<void(group_error)> done) {
    ++appends;
    pending w{&gc, std::move(records), producer, next_offset_, std::move(done), std::nullopt};
    next_offset_ += static_cast<int64_t>(w.records.size());
    if (hold) {
      held.push_back(std::move(w));
      return;
    }
    finish(gc, std::move(w), fail_with);
  }
  void finish(group_coordinator& gc, pending w, group_error e) {
    if (e == group_error::none) {
      records_.insert(records_.end(), w.records.begin(), w.records.end());
      for (size_t i = 0; i < w.records.size(); ++i) {
        record_context ctx;
        ctx.offset = w.base_offset + static_cast<int64_t>(i);
        if (w.producer) {
          ctx.producer_id = w.producer->producer_id;
          ctx.producer_epoch = w.producer->producer_epoch;
          ctx.transactional = true;
        }
        entries_.push_back({w.records[i], ctx, false});
        gc.replay(w.records[i].key, w.records[i].value, ctx);
      }
    }
    w.done(e);
    pump(gc);
  }
  std::vector<pending> held;
  std::vector<group_record> records_;
  std::vector<entry> entries_;
  int64_t next_offset_ = 0;
};

/// A coordinator whose every call is followed by the runtime's pump: `gc->f(...)` calls f, then appends what it
/// queued (the guard's destructor runs at the end of the full expression).
class pumped_coordinator {
 public:
  struct guard {
    pumped_coordinator* owner;
    group_coordinator* operator->() const { return owner->gc_.get(); }
    ~guard() { owner->log_->pump(*owner->gc_); }
  };
  explicit pumped_coordinator(memory_log& log) : log_(&log) {}
  void reset(std::unique_ptr<group_coordinator> gc) { gc_ = std::move(gc); }
  guard operator->() { return guard{this}; }
  const group_coordinator* operator->() const { return gc_.get(); }  // reads queue nothing
  group_coordinator& get() { return *gc_; }

 private:
  memory_log* log_;
  std::unique_ptr<group_coordinator> gc_;
};

/// A ConsumerProtocolSubscription v0: int16 version, [string] topics, nullable bytes user data.
inline bytes subscription(const std::vector<std::string>& topics) {
  kafka_writer w;
  w.int16(0);
  w.int32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) w.string(t);
  w.int32(-1);
  return w.take();
}

inline bytes b(std::string_view s) { return bytes(s.begin(), s.end()); }

template <typename T>
using slot = std::shared_ptr<std::optional<T>>;

class coordinator_test : public ::testing::Test {
 protected:
  void SetUp() override {
    config.initial_rebalance_delay_ms = 0;
    make();
  }

  void make() {
    gc.reset(std::make_unique<group_coordinator>(-1, config, clock,
                                                 [this] { return "uuid" + std::to_string(++uuid_counter); }));
    gc->begin_loading();
    gc->finish_loading();
  }

  join_group_request jreq(const std::string& member_id, const std::string& group = "g",
                          std::optional<std::string> instance = std::nullopt,
                          std::vector<protocol_metadata> protocols = {}) {
    join_group_request r;
    r.group_id = group;
    r.member_id = member_id;
    r.group_instance_id = std::move(instance);
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    r.session_timeout_ms = 10000;
    r.rebalance_timeout_ms = 30000;
    r.protocol_type = "consumer";
    r.protocols = protocols.empty()
                      ? std::vector<protocol_metadata>{{"range", subscription({"t"})}, {"roundrobin", subscription({"t"})}}
                      : std::move(protocols);
    r.require_known_member_id = true;
    return r;
  }

  slot<join_group_result> join(join_group_request r) {
    auto s = std::make_shared<std::optional<join_group_result>>();
    gc->join_group(std::move(r), [s](join_group_result res) { *s = std::move(res); });
    return s;
  }

  /// A dynamic member's first join (v4+): the MEMBER_ID_REQUIRED round, then the join that waits.
  slot<join_group_result> join_new(const std::string& group = "g") {
    auto first = join(jreq("", group));
    EXPECT_TRUE(first->has_value());
    EXPECT_EQ((*first)->error, group_error::member_id_required);
    return join(jreq((*first)->member_id, group));
  }

  slot<sync_group_result> sync(const std::string& member_id, int32_t generation,
                               std::vector<sync_group_assignment> assignments = {},
                               const std::string& group = "g",
                               std::optional<std::string> instance = std::nullopt) {
    sync_group_request r;
    r.group_id = group;
    r.generation_id = generation;
    r.member_id = member_id;
    r.group_instance_id = std::move(instance);
    r.assignments = std::move(assignments);
    auto s = std::make_shared<std::optional<sync_group_result>>();
    gc->sync_group(std::move(r), [s](sync_group_result res) { *s = std::move(res); });
    return s;
  }

  group_error heartbeat(const std::string& member_id, int32_t generation, const std::string& group = "g",
                        std::optional<std::string> instance = std::nullopt) {
    return gc->heartbeat({group, generation, member_id, std::move(instance)});
  }

  slot<offset_commit_result> commit(offset_commit_request r) {
    auto s = std::make_shared<std::optional<offset_commit_result>>();
    log.run<offset_commit_result>(gc.get(), gc.get().offset_commit(std::move(r)),
                                  [s](offset_commit_result res) { *s = std::move(res); });
    return s;
  }

  slot<offset_commit_result> txn_commit(txn_offset_commit_request r) {
    auto s = std::make_shared<std::optional<offset_commit_result>>();
    log.run<offset_commit_result>(gc.get(), gc.get().txn_offset_commit(std::move(r)),
                                  [s](offset_commit_result res) { *s = std::move(res); });
    return s;
  }

  /// The transaction side wrote a COMMIT/ABORT marker of `producer_id` into this partition.
  void marker(int64_t producer_id, bool commit) { log.marker(gc.get(), producer_id, commit); }

  slot<std::vector<group_deletion_result>> delete_groups(const std::vector<std::string>& ids) {
    auto s = std::make_shared<std::optional<std::vector<group_deletion_result>>>();
    log.run<std::vector<group_deletion_result>>(gc.get(), gc.get().delete_groups(ids),
                                                [s](std::vector<group_deletion_result> res) { *s = std::move(res); });
    return s;
  }

  slot<offset_delete_result> offset_delete(const std::string& id, const std::vector<topic_partition>& parts) {
    auto s = std::make_shared<std::optional<offset_delete_result>>();
    log.run<offset_delete_result>(gc.get(), gc.get().offset_delete(id, parts),
                                  [s](offset_delete_result res) { *s = std::move(res); });
    return s;
  }

  group_state state(const std::string& group_id = "g") const {
    const group* g = gc->find_group(group_id);
    return g ? g->state : group_state::dead;
  }

  /// Moves time and runs the timer.
  void advance(int64_t ms) {
    clock.advance_ms(ms);
    gc->on_timer();
  }

  /// One member joined and synced with `assignment`: returns its member id (generation 1).
  std::string single_stable_member(const std::string& group = "g", bytes assignment = b("A")) {
    auto j = join_new(group);
    gc->on_timer();
    EXPECT_TRUE(j->has_value());
    std::string id = (*j)->member_id;
    auto s = sync(id, (*j)->generation_id, {{id, assignment}}, group);
    EXPECT_TRUE(s->has_value());
    return id;
  }

  manual_clock clock;
  memory_log log;
  group_config config;
  pumped_coordinator gc{log};
  int uuid_counter = 0;
};

}  // namespace sluice::groups::test
