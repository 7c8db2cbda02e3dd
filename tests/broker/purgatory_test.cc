// The one purgatory (broker/purgatory.h, issue #13): a purgatory_waiter ends on a wake or when the injected clock
// reaches its deadline, never before. With the manual clock the tests move time by hand, so the long-poll Fetch,
// the acks=-1 Produce and the admin wait for the cluster snapshot are checked to the millisecond through their
// handlers, on a real single-node set of services (a temporary log dir, the test's io_context).
#include "broker/purgatory.h"

#include <gtest/gtest.h>

#include <chrono>

#include "broker/handlers/cluster_wait.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"
#include "storage/record_batch.h"
#include "tests/broker/single_node.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

/// Starts `f()` (a coroutine returning T) on `ex`; its result lands in the returned slot.
template <typename T, typename F>
std::shared_ptr<std::optional<T>> spawn(asio::any_io_executor ex, F f) {
  auto out = std::make_shared<std::optional<T>>();
  asio::co_spawn(ex, [out, f = std::move(f)]() mutable -> asio::awaitable<void> {
    auto op = f();
    *out = co_await std::move(op);
  }, asio::detached);
  return out;
}

class PurgatoryWaiterTest : public ::testing::Test {
 protected:
  void drain() {
    io_.restart();
    io_.poll();
  }
  /// Starts `w->wait(until)`; the flag turns true when it ends.
  std::shared_ptr<bool> start(const std::shared_ptr<purgatory_waiter>& w, wait_deadline until) {
    auto done = std::make_shared<bool>(false);
    asio::co_spawn(io_, [w, done, until]() -> asio::awaitable<void> {
      auto op = w->wait(until);
      co_await std::move(op);
      *done = true;
    }, asio::detached);
    drain();
    return done;
  }

  manual_clock clock_;
  asio::io_context io_;
};

TEST_F(PurgatoryWaiterTest, EndsWhenTheManualClockReachesTheDeadline) {
  auto w = std::make_shared<purgatory_waiter>(io_.get_executor());
  auto done = start(w, wait_deadline::after(clock_, 250));
  for (int i = 0; i < 249; ++i) {
    clock_.advance_ms(1);
    drain();
    ASSERT_FALSE(*done) << "ended " << 249 - i << " ms early";
  }
  clock_.advance_ms(1);
  drain();
  EXPECT_TRUE(*done);
  EXPECT_FALSE(w->woken());
}

TEST_F(PurgatoryWaiterTest, WakeEndsItBeforeTheDeadlineAndAWakeBeforeTheWaitEndsItAtOnce) {
  auto w = std::make_shared<purgatory_waiter>(io_.get_executor());
  auto done = start(w, wait_deadline::after(clock_, 1000));
  EXPECT_FALSE(*done);
  w->wake();
  w->wake();  // idempotent
  drain();
  EXPECT_TRUE(*done);

  auto early = std::make_shared<purgatory_waiter>(io_.get_executor());
  early->wake();
  EXPECT_TRUE(*start(early, wait_deadline::after(clock_, 1000)));
  // A deadline that has passed: at once too.
  EXPECT_TRUE(*start(std::make_shared<purgatory_waiter>(io_.get_executor()), wait_deadline::after(clock_, 0)));
}

TEST_F(PurgatoryWaiterTest, CallbackFormAndWakesFromTheListOnlyOnce) {
  waiter_list parked;
  int calls = 0;
  auto a = std::make_shared<purgatory_waiter>(io_.get_executor());
  auto b = std::make_shared<purgatory_waiter>(io_.get_executor());
  parked.add(a);
  parked.add(b);
  a->async_wait(wait_deadline::after(clock_, 50), [&] { ++calls; });
  b->async_wait(wait_deadline::after(clock_, 50), [&] { ++calls; });
  drain();
  EXPECT_EQ(calls, 0);
  parked.wake_all();
  EXPECT_EQ(parked.size(), 0u);
  drain();
  EXPECT_EQ(calls, 2);
  clock_.advance_ms(100);  // nothing left to fire
  drain();
  EXPECT_EQ(calls, 2);
}

// The broker's clock: an asio timer at the deadline (a real 30 ms, bounded by 10 s of io).
TEST_F(PurgatoryWaiterTest, RealClockEndsAtTheDeadlineThroughATimer) {
  auto& real = system_clock::instance();
  auto w = std::make_shared<purgatory_waiter>(io_.get_executor());
  const auto until = wait_deadline::after(real, 30);
  auto done = std::make_shared<bool>(false);
  asio::co_spawn(io_, [w, done, until]() -> asio::awaitable<void> {
    auto op = w->wait(until);
    co_await std::move(op);
    *done = true;
  }, asio::detached);
  const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!*done && std::chrono::steady_clock::now() < stop) {
    io_.restart();
    io_.run_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(*done);
  EXPECT_TRUE(until.passed());
}

/// The services broker::start builds on a single node, on the manual clock; handlers called directly.
class PurgatoryHandlerTest : public PurgatoryWaiterTest {
 protected:
  void SetUp() override {
    node_.open("sluice-purgatory-test", {{"broker.id", "1"}}, clock_, io_);
    ASSERT_FALSE(HasFatalFailure());
    topic_spec spec;
    spec.name = "t";
    ASSERT_TRUE(node_.topics->create(spec, false).ok());
    p_ = node_.topics->find("t")->partitions.at(0);
  }
  request_context context(int16_t api_key, int16_t version) {
    return request_context{protocol::request_header{api_key, version, 1, "purgatory-test"}, session_, strand_};
  }
  /// A consumer's Fetch v11 of t-0 from offset 0 wanting 1 byte within `max_wait_ms`.
  std::shared_ptr<std::optional<protocol::fetch_response>> start_fetch(int32_t max_wait_ms) {
    auto rc = std::make_shared<request_context>(context(1, 11));
    auto req = std::make_shared<protocol::fetch_request>();
    req->max_wait_ms = max_wait_ms;
    req->min_bytes = 1;
    req->topics.push_back({});
    req->topics[0].topic = "t";
    req->topics[0].partitions.push_back({});
    req->topics[0].partitions[0].partition_max_bytes = 1 << 20;
    auto out = spawn<protocol::fetch_response>(strand_, [this, rc, req] { return handlers::fetch(*node_.services, *rc, *req); });
    drain();
    return out;
  }
  /// Produce v9 of one record to t-0 with acks=-1 and `timeout_ms`.
  std::shared_ptr<std::optional<std::optional<protocol::produce_response>>> start_produce(int32_t timeout_ms) {
    storage::record_batch_builder b;
    b.add("k", "v", clock_.now_ms());
    auto bytes = std::make_shared<std::vector<uint8_t>>(b.build());
    auto rc = std::make_shared<request_context>(context(0, 9));
    auto req = std::make_shared<protocol::produce_request>();
    req->acks = -1;
    req->timeout_ms = timeout_ms;
    req->topic_data.push_back({});
    req->topic_data[0].name = "t";
    req->topic_data[0].partition_data.push_back({});
    req->topic_data[0].partition_data[0].records_ = protocol::records::from_memory(*bytes, bytes);
    auto out = spawn<std::optional<protocol::produce_response>>(
        strand_, [this, rc, req] { return handlers::produce(*node_.services, *rc, *req); });
    drain();
    return out;
  }
  /// t-0 led here at epoch 1 with broker 2 in its ISR: the high watermark waits for 2's fetches.
  void lead_with_a_follower() {
    asio::post(p_->strand(), [p = p_] { p->become_leader(1, 1, {1, 2}, {1, 2}, 0, 0); });
    drain();
  }

  asio::strand<asio::io_context::executor_type> strand_{asio::make_strand(io_)};
  testing::single_node node_;
  session session_;
  std::shared_ptr<partition> p_;
};

TEST_F(PurgatoryHandlerTest, LongPollFetchEndsAtMaxWaitOnTheInjectedClock) {
  auto fetched = start_fetch(500);
  clock_.advance_ms(499);
  drain();
  EXPECT_FALSE(fetched->has_value());
  clock_.advance_ms(1);
  drain();
  ASSERT_TRUE(fetched->has_value());
  const auto& pd = (*fetched)->responses.at(0).partitions.at(0);
  EXPECT_EQ(pd.error_code, error_code::none);
  EXPECT_EQ(pd.high_watermark, 0);
  EXPECT_EQ(pd.records_->size(), 0u);
}

TEST_F(PurgatoryHandlerTest, LongPollFetchEndsEarlyOnAppend) {
  auto fetched = start_fetch(500);
  clock_.advance_ms(100);
  drain();
  EXPECT_FALSE(fetched->has_value());
  storage::record_batch_builder b;
  b.add("k", "v", clock_.now_ms());
  auto bytes = b.build();
  asio::post(p_->strand(), [p = p_, &bytes] { ASSERT_TRUE(p->append(bytes).ok()); });
  drain();
  ASSERT_TRUE(fetched->has_value());
  const auto& pd = (*fetched)->responses.at(0).partitions.at(0);
  EXPECT_EQ(pd.error_code, error_code::none);
  EXPECT_EQ(pd.high_watermark, 1);
  EXPECT_GT(pd.records_->size(), 0u);
}

TEST_F(PurgatoryHandlerTest, AcksAllProduceTimesOutWhenTheClockReachesTheRequestTimeout) {
  lead_with_a_follower();
  auto produced = start_produce(1000);
  clock_.advance_ms(999);
  drain();
  EXPECT_FALSE(produced->has_value());
  clock_.advance_ms(1);
  drain();
  ASSERT_TRUE(produced->has_value() && (*produced)->has_value());
  const auto& pr = (**produced)->responses.at(0).partition_responses.at(0);
  EXPECT_EQ(pr.error_code, error_code::request_timed_out);
  EXPECT_EQ(pr.base_offset, -1);
}

TEST_F(PurgatoryHandlerTest, AcksAllProduceIsAnsweredWhenTheFollowerHasTheBatch) {
  lead_with_a_follower();
  auto produced = start_produce(1000);
  asio::post(p_->strand(), [p = p_] { p->record_follower_fetch(2, 1, 0); });
  drain();
  ASSERT_TRUE(produced->has_value() && (*produced)->has_value());
  const auto& pr = (**produced)->responses.at(0).partition_responses.at(0);
  EXPECT_EQ(pr.error_code, error_code::none);
  EXPECT_EQ(pr.base_offset, 0);
}

TEST_F(PurgatoryHandlerTest, AcksAllProduceAnswersNotLeaderWhenLeadershipMoves) {
  lead_with_a_follower();
  auto produced = start_produce(1000);
  asio::post(p_->strand(), [p = p_] { p->become_follower(2, 2); });
  drain();
  ASSERT_TRUE(produced->has_value() && (*produced)->has_value());
  EXPECT_EQ((**produced)->responses.at(0).partition_responses.at(0).error_code, error_code::not_leader_or_follower);
}

/// A cluster snapshot with topic `name` (one partition led by broker 2, no replica here).
std::shared_ptr<const coordination::cluster_snapshot> snapshot_with(const std::string& name, int32_t leader) {
  auto s = std::make_shared<coordination::cluster_snapshot>();
  coordination::topic_assignment a;
  a.name = name;
  a.id = coordination::topic_id{1, 2, 3};
  a.replicas = {{2}};
  s->topics.emplace(name, a);
  coordination::partition_state st;
  st.leader = leader;
  s->states[name] = {st};
  return s;
}

TEST_F(PurgatoryHandlerTest, SnapshotWaitIsWokenByTheNextSyncAndBoundedByTheClock) {
  auto rc = std::make_shared<request_context>(context(19, 5));
  auto wanted = [this, rc](int32_t timeout_ms) {
    return spawn<bool>(strand_, [this, rc, timeout_ms] {
      return handlers::wait_for_snapshot(*node_.services, *rc, [](const coordination::cluster_snapshot& s) {
        return handlers::has_leaders(s, "x", 1);
      }, timeout_ms);
    });
  };
  auto ready = wanted(1000);
  drain();
  EXPECT_FALSE(ready->has_value());
  // A snapshot without a leader for x wakes it; it parks again.
  auto leaderless = snapshot_with("x", -1);
  node_.topics->set_cluster(leaderless);
  node_.topics->sync(*leaderless, 1);
  drain();
  EXPECT_FALSE(ready->has_value());
  auto led = snapshot_with("x", 2);
  node_.topics->set_cluster(led);
  node_.topics->sync(*led, 1);
  drain();
  ASSERT_TRUE(ready->has_value());
  EXPECT_TRUE(**ready);

  auto never = [this, rc] {
    return spawn<bool>(strand_, [this, rc] {
      return handlers::wait_for_snapshot(*node_.services, *rc, [](const coordination::cluster_snapshot&) { return false; }, 300);
    });
  }();
  drain();
  clock_.advance_ms(299);
  drain();
  EXPECT_FALSE(never->has_value());
  clock_.advance_ms(1);
  drain();
  ASSERT_TRUE(never->has_value());
  EXPECT_FALSE(**never);
}

}  // namespace
}  // namespace sluice::broker
