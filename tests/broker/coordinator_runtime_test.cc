// broker::coordinator::coordinator_runtime with a toy shard, on the manual clock: a shard is built per partition of
// its internal topic and loaded by replaying the log when led here; its deadline fires when the clock reaches it
// and not before; a write completes when the high watermark passes it (or times out at the commit timeout);
// leadership leaving unloads the shard and ends its timer; coming back replays again; a shard's records (returned
// with a response, or queued) are appended, replayed into it only once committed, then answered.
#include "broker/coordinator/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

/// A toy shard with the transaction extras: records come with their offset and producer, markers are replayed.
struct txn_toy_shard : toy_shard {
  using record_context = coordinator::record_context;
  using toy_shard::replay;
  void replay(const record_bytes& key, const std::optional<record_bytes>& value, const record_context& ctx) {
    std::string r(key.begin(), key.end());
    if (!value) r += " (tombstone)";
    r += "@" + std::to_string(ctx.offset);
    if (ctx.producer_id >= 0) r += " pid " + std::to_string(ctx.producer_id) + "/" + std::to_string(ctx.producer_epoch);
    if (ctx.transactional) r += " txn";
    replayed.push_back(std::move(r));
  }
  void replay_end_txn(int64_t producer_id, bool commit) {
    replayed.push_back((commit ? "COMMIT " : "ABORT ") + std::to_string(producer_id));
  }
};
using txn_toy_runtime = coordinator_runtime<txn_toy_shard>;

/// A write result with a producer stamp (the shape of groups::coordinator_result from TxnOffsetCommit).
struct toy_txn_result {
  std::vector<internal_record> records;
  std::string response;
  std::function<std::string(toy_shard::error_type)> failed;
  std::optional<producer_stamp> producer;
};

/// What a toy write operation returns (the shape of groups::coordinator_result).
struct toy_result {
  std::vector<internal_record> records;
  std::string response;
  std::function<std::string(toy_shard::error_type)> failed;
};

/// The bytes of `p`'s log from offset 0 (what a follower fetch would send), empty when the read fails.
std::vector<uint8_t> log_bytes(partition& p) {
  auto read = p.read_for_follower(0, 1 << 20, true);
  if (!read.ok()) return {};
  std::vector<uint8_t> buf(static_cast<size_t>(read->region.size));
  if (::pread(read->region.file->fd(), buf.data(), buf.size(), read->region.position) != static_cast<ssize_t>(buf.size()))
    return {};
  return buf;
}

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

// Kafka's CoordinatorRuntime stamps __consumer_offsets batches with base sequence 0 and no producer
// (group_service sets it); the default is NO_SEQUENCE, as __transaction_state is written.
TEST_F(CoordinatorRuntimeTest, WriterStampsTheBaseSequenceItWasGiven) {
  ASSERT_TRUE(runtime_->load());
  drain();
  auto p = part(0);
  auto s = runtime_->slot_for(0);
  std::vector<protocol::error_code> outcomes;
  asio::post(s->strand(), [&] {
    s->writer->append({{{'a'}, record_bytes{'1'}}}, [&](protocol::error_code e) { outcomes.push_back(e); });
    s->writer->set_base_sequence(0);
    s->writer->append({{{'b'}, record_bytes{'2'}}, {{'c'}, std::nullopt}},
                      [&](protocol::error_code e) { outcomes.push_back(e); });
  });
  drain();
  ASSERT_EQ(outcomes, (std::vector<protocol::error_code>{protocol::error_code::none, protocol::error_code::none}));
  const std::vector<uint8_t> buf = log_bytes(*p);
  ASSERT_FALSE(buf.empty());
  auto first = storage::parse_record_batch_header(buf);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->base_sequence, -1);
  EXPECT_EQ(first->producer_id, -1);
  auto second = storage::parse_record_batch_header(std::span<const uint8_t>(buf).subspan(static_cast<size_t>(first->size_bytes())));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->base_sequence, 0);
  EXPECT_EQ(second->producer_id, -1);
  EXPECT_EQ(second->producer_epoch, -1);
  EXPECT_FALSE(second->is_transactional());
  EXPECT_EQ(second->base_offset, 1);
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

class CoordinatorRuntimeTxnTest : public CoordinatorRuntimeTest {
 protected:
  void SetUp() override {
    CoordinatorRuntimeTest::SetUp();
    topic_spec spec;
    spec.name = "__txntoy";
    spec.num_partitions = 1;
    ASSERT_TRUE(node_.topics->create(spec, false).ok());
    txn_runtime_ = std::make_unique<txn_toy_runtime>("__txntoy", *node_.topics, clock_, 1000, [] { return 1; },
                                                     [](txn_toy_runtime::slot&) { return std::make_unique<txn_toy_shard>(); });
  }
  std::shared_ptr<partition> txn_part() { return node_.topics->find("__txntoy")->partitions[0]; }
  template <typename F>
  auto txn_run(F f) {
    using R = std::invoke_result_t<F&, txn_toy_shard&>;
    auto done = asio::co_spawn(io_, txn_runtime_->run(txn_runtime_->slot_for(0), std::move(f)), asio::use_future);
    drain();
    EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    return R(done.get());
  }
  std::vector<std::string> replayed() {
    return txn_run([](txn_toy_shard& s) { return s.replayed; });
  }
  std::unique_ptr<txn_toy_runtime> txn_runtime_;
};

TEST_F(CoordinatorRuntimeTxnTest, LoadReplaysOffsetsProducersAndTransactionMarkers) {
  auto p = txn_part();
  storage::record_batch_builder plain;
  plain.add("a", "1", clock_.now_ms());
  auto plain_bytes = plain.build();
  ASSERT_TRUE(p->append(plain_bytes).ok());
  storage::record_batch_builder txn;
  txn.set_producer(7, 2, -1).set_transactional();
  txn.add("b", "2", clock_.now_ms());
  txn.add("c", std::nullopt, clock_.now_ms());
  auto txn_bytes = txn.build();
  ASSERT_TRUE(p->append(txn_bytes, storage::append_origin::coordinator).ok());
  ASSERT_TRUE(p->append_marker(7, 2, {false, 0}).ok());  // offset 3
  ASSERT_TRUE(p->append_marker(8, 0, {true, 0}).ok());   // a producer that wrote nothing here
  ASSERT_TRUE(txn_runtime_->load());
  drain();
  EXPECT_EQ(replayed(), (std::vector<std::string>{"a@0", "b@1 pid 7/2 txn", "c (tombstone)@2 pid 7/2 txn",
                                                   "ABORT 7", "COMMIT 8"}));
  // The shard without the extras saw the records of its own topic only, and skips markers.
  ASSERT_TRUE(runtime_->load());
  drain();
  append_keys(0, {{"z", "1"}});
  ASSERT_TRUE(part(0)->append_marker(3, 0, {true, 0}).ok());
  runtime_->on_leadership_change(part(0), true);
  drain();
  runtime_->on_txn_marker(0, 3, true);  // no replay_end_txn: nothing
  drain();
  EXPECT_EQ(run(0, [](toy_shard& s) { return s.replayed; }), (std::vector<std::string>{"z"}));
}

TEST_F(CoordinatorRuntimeTxnTest, TransactionalWriteIsTheProducersBatchAndAMarkerFollowsEarlierAppends) {
  ASSERT_TRUE(txn_runtime_->load());
  drain();
  auto p = txn_part();
  p->become_leader(0, 1, {0, 1}, {0, 1}, 0, 0);  // a follower in the ISR: the HW waits for it
  auto op = [](txn_toy_shard&) {
    return toy_txn_result{{{{'w'}, record_bytes{'1'}}, {{'x'}, record_bytes{'2'}}},
                          "answer",
                          [](toy_shard::error_type e) { return "failed " + std::to_string(static_cast<int>(e)); },
                          producer_stamp{9, 3}};
  };
  auto answer = asio::co_spawn(io_, txn_runtime_->write<std::string>(txn_runtime_->slot_for(0), op), asio::use_future);
  drain();
  ASSERT_EQ(p->log_end_offset(), 2);
  // The batch as written: transactional, the producer's id and epoch, no sequence.
  const std::vector<uint8_t> buf = log_bytes(*p);
  ASSERT_FALSE(buf.empty());
  auto h = storage::parse_record_batch_header(buf);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->is_transactional());
  EXPECT_FALSE(h->is_control());
  EXPECT_EQ(h->producer_id, 9);
  EXPECT_EQ(h->producer_epoch, 3);
  EXPECT_EQ(h->base_sequence, -1);
  // The marker lands while the write still waits for the follower: it is replayed after the write's records.
  ASSERT_TRUE(p->append_marker(9, 3, {true, 0}).ok());
  txn_runtime_->on_txn_marker(0, 9, true);
  txn_runtime_->on_txn_marker(5, 9, true);  // no such partition: ignored
  drain();
  EXPECT_TRUE(replayed().empty());
  p->record_follower_fetch(1, 3, 0);  // HW 3: the write and the marker are committed
  drain();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(answer.get(), "answer");
  EXPECT_EQ(replayed(), (std::vector<std::string>{"w@0 pid 9/3 txn", "x@1 pid 9/3 txn", "COMMIT 9"}));
  // A stale epoch is refused by the log: INVALID_PRODUCER_EPOCH (47), nothing replayed.
  auto stale = [](txn_toy_shard&) {
    return toy_txn_result{{{{'y'}, record_bytes{'3'}}}, "answer",
                          [](toy_shard::error_type e) { return "failed " + std::to_string(static_cast<int>(e)); },
                          producer_stamp{9, 2}};
  };
  auto refused = asio::co_spawn(io_, txn_runtime_->write<std::string>(txn_runtime_->slot_for(0), stale), asio::use_future);
  drain();
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(refused.get(), "failed 47");
  EXPECT_EQ(replayed().size(), 3u);
}

}  // namespace
}  // namespace sluice::broker::coordinator
