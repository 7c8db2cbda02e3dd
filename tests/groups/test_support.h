#pragma once
// Shared fixture of the group coordinator tests: a manual clock, the runtime's appends in memory, and helpers
// that run the JoinGroup / SyncGroup dance.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "broker/groups/group_coordinator.h"
#include "broker/groups/record_codec.h"

namespace sluice::groups::test {

/// The coordinator runtime's part, in memory (broker/coordinator/runtime.h does it over the log): takes the
/// coordinator's queued writes and the records of its results, "appends" them (kept in records()), replays them
/// into the coordinator and completes them. By default at once; `hold` keeps them until complete(); `fail_with`
/// makes them fail (nothing replayed).
class memory_log {
 public:
  /// Appends what `gc` queued since the last call (the runtime does this after every call into a shard).
  void pump(group_coordinator& gc) {
    for (auto& w : gc.take_writes()) append(gc, std::move(w.records), std::move(w.done));
  }
  /// Runs a result as coordinator_runtime::write does: `answer` gets the response after the append (at once
  /// without records), or `failed(error)`.
  template <typename R>
  void run(group_coordinator& gc, coordinator_result<R> res, std::function<void(R)> answer) {
    if (res.records.empty()) {
      answer(std::move(res.response));
    } else {
      append(gc, std::move(res.records),
             [answer, response = std::move(res.response), failed = std::move(res.failed)](group_error e) mutable {
               answer(e == group_error::none ? std::move(response) : failed(e));
             });
    }
    pump(gc);
  }
  void complete(group_error e = group_error::none) {
    auto h = std::move(held);
    held.clear();
    for (auto& w : h) finish(*w.gc, std::move(w.records), std::move(w.done), e);
  }
  const std::vector<group_record>& records() const { return records_; }

  bool hold = false;
  group_error fail_with = group_error::none;
  int appends = 0;

 private:
  struct pending {
    group_coordinator* gc;
    std::vector<group_record> records;
    std::function<void(group_error)> done;
  };
  void append(group_coordinator& gc, std::vector<group_record> records, std::function<void(group_error)> done) {
    ++appends;
    if (hold) {
      held.push_back({&gc, std::move(records), std::move(done)});
      return;
    }
    finish(gc, std::move(records), std::move(done), fail_with);
  }
  void finish(group_coordinator& gc, std::vector<group_record> records, std::function<void(group_error)> done,
              group_error e) {
    if (e == group_error::none) {
      records_.insert(records_.end(), records.begin(), records.end());
      for (const auto& r : records) gc.replay(r.key, r.value);
    }
    done(e);
    pump(gc);
  }
  std::vector<pending> held;
  std::vector<group_record> records_;
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
