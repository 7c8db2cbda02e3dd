#pragma once
// Shared fixture of the group coordinator tests: a manual clock, an in-memory group_log, and helpers
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

/// group_log in memory. By default appends succeed at once; `hold` keeps them until complete();
/// `fail_with` makes them fail.
class memory_log final : public group_log {
 public:
  void append(std::vector<group_record> records, std::function<void(group_error)> done) override {
    ++appends;
    if (hold) {
      held.push_back({std::move(records), std::move(done)});
      return;
    }
    if (fail_with == group_error::none) records_.insert(records_.end(), records.begin(), records.end());
    done(fail_with);
  }
  void complete(group_error e = group_error::none) {
    auto h = std::move(held);
    held.clear();
    for (auto& [records, done] : h) {
      if (e == group_error::none) records_.insert(records_.end(), records.begin(), records.end());
      done(e);
    }
  }
  const std::vector<group_record>& records() const { return records_; }

  bool hold = false;
  group_error fail_with = group_error::none;
  int appends = 0;
  std::vector<std::pair<std::vector<group_record>, std::function<void(group_error)>>> held;

 private:
  std::vector<group_record> records_;
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
    gc = std::make_unique<group_coordinator>(-1, config, clock, log,
                                             [this] { return "uuid" + std::to_string(++uuid_counter); });
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
    gc->offset_commit(std::move(r), [s](offset_commit_result res) { *s = std::move(res); });
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
  std::unique_ptr<group_coordinator> gc;
  int uuid_counter = 0;
};

}  // namespace sluice::groups::test
