// The transaction coordinator as a state machine on the manual clock, with the runtime's part done in memory
// (append = keep the record, replay it, then answer): every transition of Kafka's TransactionCoordinator that a
// client drives (InitProducerId, AddPartitionsToTxn, EndTxn), fencing, timeouts, expiry, and a coordinator
// rebuilt from the log holding what the live one held.
#include "broker/txn/transaction_coordinator.h"

#include <gtest/gtest.h>

#include <memory>

namespace sluice::txn {
namespace {

using te = txn_error;

class txn_coordinator_test : public ::testing::Test {
 protected:
  void SetUp() override { make(); }

  std::unique_ptr<transaction_coordinator> build() {
    return std::make_unique<transaction_coordinator>(
        0, config, clock, [this]() -> result<int64_t> { return next_pid++; }, [] { return 5; },
        [this](marker_job j) { markers.push_back(std::move(j)); });
  }
  void make() {
    tc = build();
    tc->begin_loading();
    tc->finish_loading();
  }

  /// coordinator_runtime::write in memory: appends (unless `fail_with`), replays, answers; then the queued writes.
  template <typename R>
  R run(coordinator_result<R> res) {
    if (res.records.empty()) return res.response;
    if (fail_with != te::none) return res.failed(fail_with);
    commit(res.records);
    pump();
    return res.response;
  }
  void commit(const std::vector<txn_record>& records) {
    for (const auto& r : records) {
      log.push_back(r);
      tc->replay(r.key, r.value);
    }
  }
  void pump() {
    for (int round = 0; round < 10; ++round) {
      auto writes = tc->take_writes();
      if (writes.empty()) return;
      for (auto& w : writes) {
        commit(w.records);
        w.done(te::none);
      }
    }
  }

  init_producer_id_result init(const std::string& id, int32_t timeout = 60000, int64_t pid = -1, int16_t epoch = -1) {
    return run(tc->init_producer_id({id, timeout, pid, epoch}));
  }
  te add(const std::string& id, int64_t pid, int16_t epoch, std::vector<topic_partition> parts) {
    return run(tc->add_partitions({id, pid, epoch, std::move(parts)})).error;
  }
  te end(const std::string& id, int64_t pid, int16_t epoch, bool commit_it) {
    return run(tc->end_txn({id, pid, epoch, commit_it})).error;
  }
  txn_state state(const std::string& id) { return tc->find(id)->state; }
  void finish_markers() {
    auto jobs = std::move(markers);
    markers.clear();
    for (const auto& j : jobs) tc->markers_written(j);
    pump();
  }

  manual_clock clock;
  txn_config config;
  int64_t next_pid = 1000;
  te fail_with = te::none;
  std::vector<marker_job> markers;
  std::vector<txn_record> log;
  std::unique_ptr<transaction_coordinator> tc;
};

TEST_F(txn_coordinator_test, new_id_gets_a_producer_id_and_each_init_bumps_the_epoch) {
  auto a = init("tx");
  EXPECT_EQ(a.error, te::none);
  EXPECT_EQ(a.producer_id, 1000);
  EXPECT_EQ(a.producer_epoch, 0);
  EXPECT_EQ(state("tx"), txn_state::empty);
  ASSERT_EQ(log.size(), 1u);
  auto b = init("tx");
  EXPECT_EQ(b.producer_id, 1000);
  EXPECT_EQ(b.producer_epoch, 1);
  EXPECT_EQ(init("other").producer_id, 1001);
  EXPECT_EQ(init("tx", 0).error, te::invalid_transaction_timeout);
  EXPECT_EQ(init("tx", 900001).error, te::invalid_transaction_timeout);
  EXPECT_EQ(init("", 1000).error, te::invalid_request);
}

TEST_F(txn_coordinator_test, commit_goes_through_prepare_markers_and_complete) {
  auto p = init("tx");
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 0}, {"t", 1}}), te::none);
  EXPECT_EQ(state("tx"), txn_state::ongoing);
  const auto appended = log.size();
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 1}}), te::none);
  EXPECT_EQ(log.size(), appended) << "a partition already in the transaction writes nothing";
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"u", 0}}), te::none);
  EXPECT_EQ(tc->find("tx")->partitions.size(), 3u);

  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::none);
  EXPECT_EQ(state("tx"), txn_state::prepare_commit);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_TRUE(markers[0].commit);
  EXPECT_EQ(markers[0].producer_id, p.producer_id);
  EXPECT_EQ(markers[0].producer_epoch, p.producer_epoch);
  EXPECT_EQ(markers[0].coordinator_epoch, 5);
  EXPECT_EQ(markers[0].partitions, (std::vector<topic_partition>{{"t", 0}, {"t", 1}, {"u", 0}}));
  // Still completing: a retry waits, the opposite is refused, a new transaction waits.
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::concurrent_transactions);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::invalid_txn_state);
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 0}}), te::concurrent_transactions);
  EXPECT_EQ(init("tx").error, te::concurrent_transactions);

  finish_markers();
  EXPECT_EQ(state("tx"), txn_state::complete_commit);
  EXPECT_TRUE(tc->find("tx")->partitions.empty());
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::none) << "a retried commit";
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::invalid_txn_state);
  // The next transaction starts with the same producer id and epoch.
  clock.advance_ms(50);
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"v", 2}}), te::none);
  EXPECT_EQ(tc->find("tx")->partitions, (std::set<topic_partition>{{"v", 2}}));
  EXPECT_EQ(tc->find("tx")->start_timestamp_ms, clock.now_ms());
}

TEST_F(txn_coordinator_test, abort_completes_as_complete_abort) {
  auto p = init("tx");
  ASSERT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 0}}), te::none);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::none);
  EXPECT_EQ(state("tx"), txn_state::prepare_abort);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_FALSE(markers[0].commit);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::concurrent_transactions);
  finish_markers();
  EXPECT_EQ(state("tx"), txn_state::complete_abort);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::none);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::invalid_txn_state);
}

TEST_F(txn_coordinator_test, id_and_epoch_errors) {
  EXPECT_EQ(add("nobody", 1, 0, {{"t", 0}}), te::invalid_producer_id_mapping);
  EXPECT_EQ(end("nobody", 1, 0, true), te::invalid_producer_id_mapping);
  auto p = init("tx");
  EXPECT_EQ(add("tx", p.producer_id + 1, p.producer_epoch, {{"t", 0}}), te::invalid_producer_id_mapping);
  EXPECT_EQ(add("tx", p.producer_id, static_cast<int16_t>(p.producer_epoch + 1), {{"t", 0}}), te::producer_fenced);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::invalid_txn_state) << "no transaction (Empty)";
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, false), te::invalid_txn_state);
}

TEST_F(txn_coordinator_test, a_new_producer_instance_fences_and_aborts_the_ongoing_transaction) {
  auto old = init("tx");
  ASSERT_EQ(add("tx", old.producer_id, old.producer_epoch, {{"t", 0}}), te::none);
  auto again = init("tx");
  EXPECT_EQ(again.error, te::concurrent_transactions);
  EXPECT_EQ(state("tx"), txn_state::prepare_abort);
  EXPECT_EQ(tc->find("tx")->producer_epoch, old.producer_epoch + 1) << "the abort fences the old epoch";
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_FALSE(markers[0].commit);
  EXPECT_EQ(markers[0].producer_epoch, old.producer_epoch + 1);
  EXPECT_EQ(end("tx", old.producer_id, old.producer_epoch, true), te::producer_fenced);
  EXPECT_EQ(init("tx").error, te::concurrent_transactions) << "until the abort completes";
  finish_markers();
  auto fresh = init("tx");
  EXPECT_EQ(fresh.error, te::none);
  EXPECT_EQ(fresh.producer_id, old.producer_id);
  EXPECT_EQ(fresh.producer_epoch, old.producer_epoch + 2);
  EXPECT_EQ(add("tx", old.producer_id, old.producer_epoch, {{"t", 0}}), te::producer_fenced);
}

TEST_F(txn_coordinator_test, a_transaction_older_than_its_timeout_is_aborted_with_an_epoch_bump) {
  auto p = init("tx", 20000);
  ASSERT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 0}}), te::none);
  ASSERT_TRUE(tc->next_deadline());
  EXPECT_EQ(*tc->next_deadline(), clock.monotonic_ms() + config.abort_timed_out_check_interval_ms);
  clock.advance_ms(10000);
  tc->on_timer();
  pump();
  EXPECT_EQ(state("tx"), txn_state::ongoing) << "10 s of a 20 s timeout";
  clock.advance_ms(10000);
  tc->on_timer();
  pump();
  EXPECT_EQ(state("tx"), txn_state::prepare_abort);
  EXPECT_EQ(tc->find("tx")->producer_epoch, p.producer_epoch + 1);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_FALSE(markers[0].commit);
  finish_markers();
  EXPECT_EQ(state("tx"), txn_state::complete_abort);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::producer_fenced) << "the late producer is fenced";
}

TEST_F(txn_coordinator_test, a_failed_append_changes_nothing) {
  auto p = init("tx");
  fail_with = te::not_enough_replicas;
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 0}}), te::coordinator_not_available);
  EXPECT_EQ(state("tx"), txn_state::empty);
  EXPECT_FALSE(tc->find("tx")->pending);
  fail_with = te::not_leader_or_follower;
  EXPECT_EQ(init("new").error, te::not_coordinator);
  EXPECT_EQ(tc->find("new"), nullptr) << "an id whose first record was not written does not exist";
  fail_with = te::none;
  // A write in flight: the id answers CONCURRENT_TRANSACTIONS until it is replayed.
  auto held = tc->add_partitions({"tx", p.producer_id, p.producer_epoch, {{"t", 0}}});
  ASSERT_EQ(held.records.size(), 1u);
  EXPECT_EQ(add("tx", p.producer_id, p.producer_epoch, {{"t", 1}}), te::concurrent_transactions);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::concurrent_transactions);
  EXPECT_EQ(state("tx"), txn_state::empty) << "not replayed yet";
  commit(held.records);
  EXPECT_EQ(state("tx"), txn_state::ongoing);
  EXPECT_EQ(end("tx", p.producer_id, p.producer_epoch, true), te::none);
}

TEST_F(txn_coordinator_test, kip_360_expected_producer_id_and_epoch) {
  auto p = init("tx");
  auto bumped = init("tx", 60000, p.producer_id, p.producer_epoch);
  EXPECT_EQ(bumped.error, te::none);
  EXPECT_EQ(bumped.producer_epoch, p.producer_epoch + 1);
  // The same request again (its answer was lost): the epoch it already got.
  auto retried = init("tx", 60000, p.producer_id, p.producer_epoch);
  EXPECT_EQ(retried.error, te::none);
  EXPECT_EQ(retried.producer_epoch, bumped.producer_epoch);
  EXPECT_EQ(init("tx", 60000, p.producer_id, 40).error, te::producer_fenced);
  EXPECT_EQ(init("tx", 60000, 424242, 0).error, te::producer_fenced);
}

TEST_F(txn_coordinator_test, an_exhausted_epoch_rotates_the_producer_id) {
  txn_log_value v;
  v.producer_id = 77;
  v.producer_epoch = 32766;
  v.timeout_ms = 60000;
  v.state = txn_state::complete_commit;
  v.last_update_timestamp_ms = clock.now_ms();
  commit({{encode_key("tx"), encode_value(v)}});
  auto r = init("tx", 60000, 77, 32766);
  EXPECT_EQ(r.error, te::none);
  EXPECT_EQ(r.producer_id, 1000);
  EXPECT_EQ(r.producer_epoch, 0);
  EXPECT_EQ(tc->find("tx")->previous_producer_id, 77);
}

TEST_F(txn_coordinator_test, idle_ids_expire_after_transactional_id_expiration_ms) {
  config.transactional_id_expiration_ms = 60000;
  config.remove_expired_check_interval_ms = 30000;
  make();
  auto p = init("idle");
  auto q = init("busy");
  ASSERT_EQ(add("busy", q.producer_id, q.producer_epoch, {{"t", 0}}), te::none);
  (void)p;
  for (int i = 0; i < 3; ++i) {
    clock.advance_ms(30000);
    tc->on_timer();
    pump();
  }
  EXPECT_EQ(tc->find("idle"), nullptr);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().key, encode_key("idle"));
  EXPECT_FALSE(log.back().value.has_value()) << "removed by a tombstone";
  EXPECT_NE(tc->find("busy"), nullptr) << "an ongoing transaction does not expire (it times out instead)";
}

TEST_F(txn_coordinator_test, a_coordinator_rebuilt_from_the_log_holds_the_same_and_completes_prepared_ones) {
  auto a = init("a");
  ASSERT_EQ(add("a", a.producer_id, a.producer_epoch, {{"t", 0}}), te::none);
  auto b = init("b");
  ASSERT_EQ(add("b", b.producer_id, b.producer_epoch, {{"t", 1}}), te::none);
  ASSERT_EQ(end("b", b.producer_id, b.producer_epoch, true), te::none);  // prepared, markers not written
  auto c = init("c");
  ASSERT_EQ(add("c", c.producer_id, c.producer_epoch, {{"t", 2}}), te::none);
  ASSERT_EQ(end("c", c.producer_id, c.producer_epoch, false), te::none);
  finish_markers();  // completes b and c; then b starts another transaction and prepares it
  ASSERT_EQ(state("b"), txn_state::complete_commit);
  ASSERT_EQ(add("b", b.producer_id, b.producer_epoch, {{"t", 3}}), te::none);
  ASSERT_EQ(end("b", b.producer_id, b.producer_epoch, true), te::none);
  markers.clear();

  auto fresh = build();
  fresh->begin_loading();
  EXPECT_EQ(fresh->add_partitions({"a", a.producer_id, a.producer_epoch, {}}).response.error,
            te::coordinator_load_in_progress);
  for (const auto& r : log) fresh->replay(r.key, r.value);
  fresh->finish_loading();
  for (const std::string id : {"a", "b", "c"}) {
    const auto* live = tc->find(id);
    const auto* loaded = fresh->find(id);
    ASSERT_NE(loaded, nullptr) << id;
    EXPECT_EQ(loaded->producer_id, live->producer_id) << id;
    EXPECT_EQ(loaded->producer_epoch, live->producer_epoch) << id;
    EXPECT_EQ(loaded->state, live->state) << id;
    EXPECT_EQ(loaded->partitions, live->partitions) << id;
    EXPECT_EQ(loaded->start_timestamp_ms, live->start_timestamp_ms) << id;
  }
  ASSERT_EQ(markers.size(), 1u) << "the prepared transaction's markers are written again after the load";
  EXPECT_EQ(markers[0].transactional_id, "b");
  EXPECT_TRUE(markers[0].commit);
  EXPECT_EQ(markers[0].partitions, (std::vector<topic_partition>{{"t", 3}}));
}

TEST_F(txn_coordinator_test, not_serving_while_inactive_or_loading) {
  auto other = build();
  EXPECT_EQ(other->init_producer_id({"tx", 1000, -1, -1}).response.error, te::not_coordinator);
  EXPECT_EQ(other->describe({"tx"}).at(0).error, te::not_coordinator);
  other->begin_loading();
  EXPECT_EQ(other->end_txn({"tx", 1, 0, true}).response.error, te::coordinator_load_in_progress);
  std::vector<transaction_listing> listed;
  EXPECT_EQ(other->list({}, listed), te::coordinator_load_in_progress);
  other->finish_loading();
  other->unload();
  EXPECT_EQ(other->add_partitions({"tx", 1, 0, {}}).response.error, te::not_coordinator);
}

TEST_F(txn_coordinator_test, describe_and_list) {
  auto a = init("a");
  ASSERT_EQ(add("a", a.producer_id, a.producer_epoch, {{"t", 0}, {"t", 1}}), te::none);
  const int64_t started = clock.now_ms();
  clock.advance_ms(5000);
  auto b = init("b");
  auto d = tc->describe({"a", "b", "nope"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].error, te::none);
  EXPECT_EQ(d[0].state, txn_state::ongoing);
  EXPECT_EQ(d[0].start_timestamp_ms, started);
  EXPECT_EQ(d[0].partitions.size(), 2u);
  EXPECT_EQ(d[1].state, txn_state::empty);
  EXPECT_EQ(d[1].producer_id, b.producer_id);
  EXPECT_EQ(d[2].error, te::transactional_id_not_found);

  std::vector<transaction_listing> all, ongoing, by_pid, long_running;
  EXPECT_EQ(tc->list({}, all), te::none);
  EXPECT_EQ(all.size(), 2u);
  tc->list({{txn_state::ongoing}, {}, -1}, ongoing);
  ASSERT_EQ(ongoing.size(), 1u);
  EXPECT_EQ(ongoing[0].transactional_id, "a");
  tc->list({{}, {b.producer_id}, -1}, by_pid);
  ASSERT_EQ(by_pid.size(), 1u);
  EXPECT_EQ(by_pid[0].transactional_id, "b");
  tc->list({{txn_state::ongoing}, {}, 6000}, long_running);
  EXPECT_TRUE(long_running.empty()) << "running 5 s, filter 6 s";
  EXPECT_EQ(to_string(txn_state::prepare_commit), "PrepareCommit");
  EXPECT_EQ(txn_state_from_string("CompleteAbort"), txn_state::complete_abort);
  EXPECT_FALSE(txn_state_from_string("ongoing"));
}

}  // namespace
}  // namespace sluice::txn
