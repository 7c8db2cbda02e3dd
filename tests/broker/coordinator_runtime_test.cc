// broker::coordinator::coordinator_runtime with a toy shard, on the manual clock: a shard is built per partition of
// its internal topic and loaded by replaying the log when led here; its deadline fires when the clock reaches it
// and not before; a write completes when the high watermark passes it (or times out at the commit timeout);
// leadership leaving unloads the shard and ends its timer; coming back replays again; a shard's records (returned
// with a response, or queued) are appended, replayed into it only once committed, then answered.
#include "broker/coordinator/runtime.h"

#include <gtest/gtest.h>


#include "storage/record_batch.h"
#include "tests/broker/single_node.h"

namespace sluice::broker::coordinator {
namespace {

/// Remembers what it replayed; its one deadline counts the times it ran; `queued` appends go to take_writes().
struct toy_shard {
  enum class error_type : int16_t { none = 0 };  // Kafka's numbers
  struct write {
    std::vector<internal_record> records;
    std::function<void(error_type)> done;
  };
  std::vector<write> queued;
  std::vector<write> take_writes() {
    auto out = std::move(queued);
    queued.clear();
    return out;
  }

  const sluice::clock* clock = nullptr;
  std::vector<std::string> replayed;
  bool active = false;
  int unloads = 0;
  std::optional<int64_t> deadline;
  int timer_runs = 0;

  void begin_loading() { replayed.clear(); }
  void replay(const record_bytes& key, const std::optional<record_bytes>& value) {
    replayed.emplace_back(key.begin(), key.end());
    if (!value) replayed.back() += " (tombstone)";
  }
  void finish_loading() { active = true; }
  void unload() {
    active = false;
    ++unloads;
    deadline.reset();
  }
  std::optional<int64_t> next_deadline() const { return deadline; }
  void on_timer() {
    if (deadline && clock->monotonic_ms() >= *deadline) {
      ++timer_runs;
      deadline.reset();
    }
  }
};

using toy_runtime = coordinator_runtime<toy_shard>;

/// What a toy write operation returns (the shape of groups::coordinator_result).
struct toy_result {
  std::vector<internal_record> records;
  std::string response;
  std::function<std::string(toy_shard::error_type)> failed;
};

class CoordinatorRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.open("sluice-runtime-test", {}, clock_, io_);
    ASSERT_FALSE(HasFatalFailure());
    topic_spec spec;
    spec.name = "__toy";
    spec.num_partitions = 2;
    ASSERT_TRUE(node_.topics->create(spec, false).ok());
    runtime_ = std::make_unique<toy_runtime>(
        "__toy", *node_.topics, clock_, 1000, [] { return 1; },
        [this](toy_runtime::slot&) {
          auto shard = std::make_unique<toy_shard>();
          shard->clock = &clock_;
          return shard;
        });
  }
  void drain() {
    io_.restart();
    io_.poll();
  }
  std::shared_ptr<partition> part(int32_t index) { return node_.topics->find("__toy")->partitions[static_cast<size_t>(index)]; }
  void append_keys(int32_t index, std::vector<std::pair<std::string, std::optional<std::string>>> records) {
    storage::record_batch_builder b;
    for (auto& [k, v] : records) b.add(k, v ? std::optional<std::string_view>(*v) : std::nullopt, clock_.now_ms());
    auto bytes = b.build();
    ASSERT_TRUE(part(index)->append(bytes, 1, 1).ok());
  }
  /// Runs f(shard) on the slot's strand through the runtime and returns its value once the io has drained.
  template <typename F>
  auto run(int32_t index, F f) {
    using R = std::invoke_result_t<F&, toy_shard&>;
    auto done = asio::co_spawn(io_, runtime_->run(runtime_->slot_for(index), std::move(f)), asio::use_future);
    drain();
    EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    return R(done.get());
  }

  manual_clock clock_;
  asio::io_context io_;
  testing::single_node node_;
  std::unique_ptr<toy_runtime> runtime_;
};

TEST_F(CoordinatorRuntimeTest, LoadBuildsOneShardPerPartitionAndReplaysEachLog) {
  append_keys(0, {{"a", "1"}, {"b", std::nullopt}});
  append_keys(0, {{"c", "3"}});
  append_keys(1, {{"z", "9"}});
  EXPECT_FALSE(runtime_->loaded());
  ASSERT_TRUE(runtime_->load());
  EXPECT_EQ(runtime_->partition_count(), 2);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.replayed; }),
            (std::vector<std::string>{"a", "b (tombstone)", "c"}));
  EXPECT_EQ(run(1, [](toy_shard& s) { return s.replayed; }), (std::vector<std::string>{"z"}));
  EXPECT_TRUE(run(0, [](toy_shard& s) { return s.active; }));
  EXPECT_EQ(runtime_->slot_for(2), nullptr);
}

TEST_F(CoordinatorRuntimeTest, TimerFiresWhenTheClockReachesTheDeadlineNotBefore) {
  ASSERT_TRUE(runtime_->load());
  drain();
  const int64_t at = clock_.monotonic_ms() + 100;
  run(0, [at](toy_shard& s) { return s.deadline = at; });  // the runtime re-arms after every call
  clock_.advance_ms(99);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.timer_runs; }), 0);
  clock_.advance_ms(1);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.timer_runs; }), 1);
  // A deadline moved earlier replaces the armed one.
  run(0, [this](toy_shard& s) { return s.deadline = clock_.monotonic_ms() + 500; });
  run(0, [this](toy_shard& s) { return s.deadline = clock_.monotonic_ms() + 10; });
  clock_.advance_ms(10);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.timer_runs; }), 2);
}

TEST_F(CoordinatorRuntimeTest, WriteCompletesWhenTheHighWatermarkPassesItOrTimesOut) {
  ASSERT_TRUE(runtime_->load());
  drain();
  auto p = part(0);
  p->become_leader(0, 1, {0, 1}, {0, 1}, 0, 0);  // a follower in the ISR: the HW waits for it
  std::optional<protocol::error_code> first, second;
  auto s = runtime_->slot_for(0);
  asio::post(s->strand(), [&] {
    s->writer->append({{{'k'}, record_bytes{'v'}}}, [&](protocol::error_code e) { first = e; });
  });
  drain();
  EXPECT_FALSE(first.has_value());
  EXPECT_EQ(p->log_end_offset(), 1);
  p->record_follower_fetch(1, 1, 0);  // the follower has it: HW 1
  drain();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, protocol::error_code::none);
  asio::post(s->strand(), [&] {
    s->writer->append({{{'k'}, std::nullopt}}, [&](protocol::error_code e) { second = e; });
  });
  drain();
  clock_.advance_ms(999);
  drain();
  EXPECT_FALSE(second.has_value());
  clock_.advance_ms(1);  // offsets.commit.timeout.ms of this runtime: 1000
  drain();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, protocol::error_code::request_timed_out);
}

TEST_F(CoordinatorRuntimeTest, WriteReplaysTheRecordsOnlyOnceCommittedThenAnswers) {
  ASSERT_TRUE(runtime_->load());
  drain();
  auto p = part(0);
  p->become_leader(0, 1, {0, 1}, {0, 1}, 0, 0);  // a follower in the ISR: the HW waits for it
  auto op = [](toy_shard& s) {
    // The operation also queues an append of its own (what a timer or another member would start).
    s.queued.push_back({{{{'q'}, record_bytes{'1'}}}, [&s](toy_shard::error_type e) {
                          s.replayed.push_back(e == toy_shard::error_type::none ? "queued done" : "queued failed");
                        }});
    return toy_result{{{{'w'}, record_bytes{'2'}}, {{'x'}, std::nullopt}}, "answer",
                      [](toy_shard::error_type e) { return "failed " + std::to_string(static_cast<int>(e)); }};
  };
  auto answer = asio::co_spawn(io_, runtime_->write<std::string>(runtime_->slot_for(0), op), asio::use_future);
  drain();
  EXPECT_NE(answer.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(p->log_end_offset(), 3) << "both batches appended";
  EXPECT_TRUE(run(0, [](toy_shard& s) { return s.replayed; }).empty()) << "nothing replayed before the commit";
  p->record_follower_fetch(1, 3, 0);  // HW 3
  drain();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(answer.get(), "answer");
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.replayed; }),
            (std::vector<std::string>{"w", "x (tombstone)", "q", "queued done"}));

  // Not committed within the commit timeout: `failed` answers and nothing is replayed.
  auto late = asio::co_spawn(io_, runtime_->write<std::string>(runtime_->slot_for(0), [](toy_shard&) {
    return toy_result{{{{'y'}, record_bytes{'3'}}}, "answer", [](toy_shard::error_type e) {
                        return "failed " + std::to_string(static_cast<int>(e));
                      }};
  }), asio::use_future);
  drain();
  clock_.advance_ms(1000);
  drain();
  ASSERT_EQ(late.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(late.get(), "failed 7") << "REQUEST_TIMED_OUT";
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.replayed.size(); }), 4u);
}

TEST_F(CoordinatorRuntimeTest, LeadershipLeavingUnloadsAndComingBackReplays) {
  append_keys(0, {{"a", "1"}});
  ASSERT_TRUE(runtime_->load());
  drain();
  auto p = part(0);
  run(0, [this](toy_shard& s) { return s.deadline = clock_.monotonic_ms() + 50; });
  p->become_follower(1, 2);
  runtime_->on_leadership_change(p, false);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.unloads; }), 1);
  EXPECT_FALSE(run(0, [](toy_shard& s) { return s.active; }));
  clock_.advance_ms(50);
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.timer_runs; }), 0);  // the unloaded shard's timer ended
  p->become_leader(0, 3, {0}, {0}, 0, 0);
  append_keys(0, {{"b", "2"}});
  runtime_->on_leadership_change(p, true);
  drain();
  EXPECT_TRUE(run(0, [](toy_shard& s) { return s.active; }));
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.replayed; }), (std::vector<std::string>{"a", "b"}));
  // Partition 1 leaving unloads its shard only.
  runtime_->on_leadership_change(part(1), false);
  drain();
  EXPECT_EQ(run(1, [](toy_shard& s) { return s.unloads; }), 1);
  EXPECT_TRUE(run(0, [](toy_shard& s) { return s.active; }));
}

}  // namespace
}  // namespace sluice::broker::coordinator
