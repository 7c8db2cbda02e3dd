// zk_cluster on the fake ZooKeeper: registration, controller election and failover, leader election from
// the ISR, offline partitions and unclean election, ISR updates, session expiry, topic deletion, preferred
// leader election, controlled shutdown. Several brokers share one fake, each with its own session.
#include "coordination/zk/zk_cluster.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "coordination/zk/fake_zookeeper.h"

namespace sluice::coordination::zk {
namespace {

template <typename P>
bool eventually(P pred, int ms = 5000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

broker_registration reg(int32_t id, int32_t port) { return {id, "127.0.0.1", port, "PLAINTEXT", {}, std::nullopt}; }

std::string show(const partition_state* s) {
  if (s == nullptr) return "(none)";
  std::string isr;
  for (int32_t b : s->isr) isr += (isr.empty() ? "" : ",") + std::to_string(b);
  return "leader " + std::to_string(s->leader) + " epoch " + std::to_string(s->leader_epoch) + " isr [" + isr +
         "] version " + std::to_string(s->version);
}

class zk_cluster_test : public ::testing::Test {
 protected:
  void SetUp() override {
    opts.connect = "fake";
    opts.session_timeout_ms = 6000;
    opts.auto_leader_rebalance = false;
  }

  zk_cluster& start(int32_t id) {
    auto c = zk_cluster::open(opts, zk);
    EXPECT_TRUE(c.ok()) << c.err().message;
    auto r = (*c)->start(reg(id, 9090 + id));
    EXPECT_TRUE(r.ok()) << r.err().message;
    brokers[id] = std::move(*c);
    return *brokers[id];
  }

  void stop(int32_t id) {
    brokers[id]->stop();
    brokers.erase(id);
  }

  zk_cluster* controller() {
    zk_cluster* found = nullptr;
    for (auto& [id, b] : brokers)
      if (b->is_controller()) found = b.get();
    return found;
  }
  int32_t controller_id() {
    for (auto& [id, b] : brokers)
      if (b->is_controller()) return id;
    return -1;
  }

  // True when every running broker's snapshot satisfies `pred`.
  template <typename P>
  bool all_see(P pred, int ms = 5000) {
    return eventually([&] {
      for (auto& [id, b] : brokers)
        if (!pred(*b->snapshot())) return false;
      return true;
    }, ms);
  }

  // Waits until every broker sees `topic`-`p` as (leader, isr, epoch).
  ::testing::AssertionResult state_is(const std::string& topic, int32_t p, int32_t leader, std::vector<int32_t> isr,
                                      int32_t epoch) {
    bool ok = all_see([&](const cluster_snapshot& s) {
      auto* st = s.state(topic, p);
      return st && st->version >= 0 && st->leader == leader && st->isr == isr && st->leader_epoch == epoch;
    });
    if (ok) return ::testing::AssertionSuccess();
    auto any = brokers.begin()->second->snapshot();
    return ::testing::AssertionFailure() << topic << "-" << p << " is " << show(any->state(topic, p));
  }

  std::shared_ptr<fake_zookeeper> zk = std::make_shared<fake_zookeeper>();
  zk_options opts;
  std::map<int32_t, std::unique_ptr<zk_cluster>> brokers;
};

TEST_F(zk_cluster_test, registers_and_rejects_a_taken_broker_id) {
  auto& b1 = start(1);
  EXPECT_TRUE(zk->data("/brokers/ids/1").has_value());
  EXPECT_EQ(zk->ephemeral_owner("/brokers/ids/1"), b1.session_id());
  auto other = zk_cluster::open(opts, zk);
  ASSERT_TRUE(other.ok());
  auto r = (*other)->start(reg(1, 9999));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, zk_errc::registration_conflict);
  EXPECT_NE(r.err().message.find("already registered"), std::string::npos) << r.err().message;
  (*other)->stop();
  auto snap = b1.snapshot();
  EXPECT_TRUE(snap->registered);
  EXPECT_EQ(snap->brokers.size(), 1u);
  EXPECT_EQ(snap->brokers.at(1).port, 9091);
  EXPECT_GT(snap->brokers.at(1).epoch, 0);
  EXPECT_EQ(snap->cluster_id.size(), 22u);
  EXPECT_EQ(snap->controller_id, 1);
}

TEST_F(zk_cluster_test, controller_election_and_failover) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3 && s.controller_id >= 0; }));
  int first = controller_id();
  ASSERT_EQ(first, brokers.begin()->second->snapshot()->controller_id);
  EXPECT_EQ(controller()->controller_epoch(), 1);
  EXPECT_EQ(zk->data("/controller_epoch"), "1");
  int controllers = 0;
  for (auto& [id, b] : brokers) controllers += b->is_controller() ? 1 : 0;
  EXPECT_EQ(controllers, 1);

  // The controller stops: another broker wins with the next epoch.
  stop(first);
  ASSERT_TRUE(eventually([&] { return controller_id() >= 0; }));
  int second = controller_id();
  EXPECT_NE(second, first);
  EXPECT_EQ(controller()->controller_epoch(), 2);
  ASSERT_TRUE(all_see([&](const cluster_snapshot& s) { return s.controller_id == second && s.brokers.size() == 2; }));

  // Its session expires: the other broker takes over; it re-registers as a follower.
  zk->expire(brokers[second]->session_id());
  ASSERT_TRUE(eventually([&] { return controller() != nullptr && controller()->controller_epoch() == 3; }));
  ASSERT_TRUE(all_see([&](const cluster_snapshot& s) {
    return s.registered && s.brokers.size() == 2 && s.controller_id >= 0;
  }));
  EXPECT_EQ(zk->data("/controller_epoch"), "3");
}

TEST_F(zk_cluster_test, new_topic_gets_states_and_leaders_move_to_the_isr_on_broker_loss) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3; }));
  topic_assignment t{"t", random_topic_id(), {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, {}};
  ASSERT_TRUE(brokers[1]->create_topic(t).ok());
  EXPECT_TRUE(state_is("t", 0, 1, {1, 2, 3}, 0));
  EXPECT_TRUE(state_is("t", 1, 2, {2, 3, 1}, 0));
  EXPECT_TRUE(state_is("t", 2, 3, {3, 1, 2}, 0));
  auto again = brokers[2]->create_topic(t);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.err().code, errc::topic_exists);

  stop(2);  // possibly the controller: the next one acts
  // Partition 1 was led by 2: the first replica in assignment order alive and in the ISR is 3.
  EXPECT_TRUE(state_is("t", 1, 3, {3, 1}, 1));
  // Where 2 was a follower it leaves the ISR; Kafka bumps the leader epoch on every controller change.
  EXPECT_TRUE(state_is("t", 0, 1, {1, 3}, 1));
  EXPECT_TRUE(state_is("t", 2, 3, {3, 1}, 1));
  auto snap = brokers[1]->snapshot();
  EXPECT_GE(snap->state("t", 1)->controller_epoch, 1);
}

TEST_F(zk_cluster_test, offline_partition_and_unclean_leader_election) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3; }));
  ASSERT_TRUE(brokers[1]->create_topic({"clean", random_topic_id(), {{2, 3}}, {}}).ok());
  ASSERT_TRUE(
      brokers[1]->create_topic({"unclean", random_topic_id(), {{2, 3}}, {{"unclean.leader.election.enable", "true"}}}).ok());
  ASSERT_TRUE(state_is("clean", 0, 2, {2, 3}, 0));
  ASSERT_TRUE(state_is("unclean", 0, 2, {2, 3}, 0));
  stop(2);
  ASSERT_TRUE(state_is("clean", 0, 3, {3}, 1));
  stop(3);
  // No live ISR member: offline, the ISR keeps its last member.
  ASSERT_TRUE(state_is("clean", 0, -1, {3}, 2));
  ASSERT_TRUE(state_is("unclean", 0, -1, {3}, 2));
  // Broker 2 returns: not in the ISR, so only the unclean topic may elect it.
  start(2);
  ASSERT_TRUE(state_is("unclean", 0, 2, {2}, 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(state_is("clean", 0, -1, {3}, 2));
  // Broker 3, the last in-sync replica, returns and leads again.
  start(3);
  EXPECT_TRUE(state_is("clean", 0, 3, {3}, 3));
}

TEST_F(zk_cluster_test, isr_update_is_conditional_on_the_version) {
  start(1);
  start(2);
  ASSERT_TRUE(brokers[1]->create_topic({"i", random_topic_id(), {{2, 1}}, {}}).ok());
  ASSERT_TRUE(state_is("i", 0, 2, {2, 1}, 0));
  partition_state next = *brokers[2]->snapshot()->state("i", 0);
  next.isr = {2};
  auto stored = brokers[2]->update_isr("i", 0, next);
  ASSERT_TRUE(stored.ok()) << stored.err().message;
  EXPECT_EQ(stored->version, next.version + 1);
  EXPECT_EQ(stored->isr, std::vector<int32_t>{2});
  auto stale = brokers[2]->update_isr("i", 0, next);  // the old version again
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.err().code, view_errc::version_conflict);
  EXPECT_TRUE(state_is("i", 0, 2, {2}, 0));
  auto missing = brokers[2]->update_isr("nope", 0, next);
  EXPECT_EQ(missing.err().code, view_errc::version_conflict);
}

TEST_F(zk_cluster_test, session_expiry_unregisters_then_registers_again) {
  start(1);
  auto& b2 = start(2);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 2; }));
  // Outlives the test body: the brokers (fixture members) call the subscriber until they stop.
  auto seen = std::make_shared<std::pair<std::mutex, std::vector<bool>>>();
  auto& m = seen->first;
  auto& registered = seen->second;
  b2.subscribe([seen](std::shared_ptr<const cluster_snapshot> s) {
    std::lock_guard lock(seen->first);
    seen->second.push_back(s->registered);
  });
  const int64_t old_session = b2.session_id();
  zk->expire(old_session);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(m);
    return registered.size() >= 2 && registered.back();
  }));
  {
    std::lock_guard lock(m);
    EXPECT_FALSE(registered.front()) << "registered=false is published first";
  }
  EXPECT_NE(b2.session_id(), old_session);
  EXPECT_EQ(zk->ephemeral_owner("/brokers/ids/2"), b2.session_id());
  EXPECT_TRUE(all_see([](const cluster_snapshot& s) { return s.registered && s.brokers.size() == 2; }));
  // Writes through the new session work.
  EXPECT_TRUE(b2.create_topic({"after", random_topic_id(), {{2}}, {}}).ok());
  EXPECT_TRUE(state_is("after", 0, 2, {2}, 0));
}

TEST_F(zk_cluster_test, topic_deletion_is_done_by_the_controller) {
  start(1);
  start(2);
  ASSERT_TRUE(brokers[1]->create_topic({"d", random_topic_id(), {{1, 2}, {2, 1}}, {{"retention.ms", "5"}}}).ok());
  ASSERT_TRUE(state_is("d", 1, 2, {2, 1}, 0));
  ASSERT_TRUE(zk->data("/config/topics/d").has_value());
  ASSERT_TRUE(brokers[2]->delete_topic("d").ok());
  EXPECT_TRUE(all_see([](const cluster_snapshot& s) { return !s.topics.contains("d") && s.deleting_topics.empty(); }));
  EXPECT_FALSE(zk->data("/brokers/topics/d").has_value());
  EXPECT_FALSE(zk->data("/config/topics/d").has_value());
  EXPECT_FALSE(zk->data("/admin/delete_topics/d").has_value());
  EXPECT_EQ(brokers[1]->delete_topic("d").err().code, errc::unknown_topic);
  // The name can be used again.
  ASSERT_TRUE(brokers[1]->create_topic({"d", random_topic_id(), {{2}}, {}}).ok());
  EXPECT_TRUE(state_is("d", 0, 2, {2}, 0));
}

TEST_F(zk_cluster_test, admin_calls_partitions_configs_producer_ids) {
  start(1);
  start(2);
  EXPECT_EQ(brokers[1]->cluster_id(), brokers[2]->cluster_id());
  ASSERT_TRUE(brokers[1]->create_topic({"a", random_topic_id(), {{1}}, {{"segment.bytes", "1000"}}}).ok());
  ASSERT_TRUE(brokers[2]->add_partitions("a", {{2}, {1}}).ok());
  EXPECT_TRUE(state_is("a", 1, 2, {2}, 0));
  EXPECT_TRUE(state_is("a", 2, 1, {1}, 0));
  ASSERT_TRUE(brokers[2]->set_topic_configs("a", {{"retention.ms", "7"}}).ok());
  EXPECT_TRUE(all_see([](const cluster_snapshot& s) {
    return s.topics.contains("a") && s.topics.at("a").configs == std::map<std::string, std::string>{{"retention.ms", "7"}};
  }));
  auto topics = brokers[1]->topics();
  ASSERT_EQ(topics.size(), 1u);
  EXPECT_EQ(topics[0].partition_count(), 3);
  EXPECT_EQ(topics[0].configs.at("retention.ms"), "7");
  EXPECT_EQ(brokers[1]->add_partitions("zz", {{1}}).err().code, errc::unknown_topic);
  EXPECT_EQ(brokers[1]->set_topic_configs("zz", {}).err().code, errc::unknown_topic);

  auto b1 = brokers[1]->allocate_producer_id_block(1);
  auto b2 = brokers[2]->allocate_producer_id_block(2);
  ASSERT_TRUE(b1.ok() && b2.ok());
  EXPECT_EQ(b1->first, 0);
  EXPECT_EQ(b1->last, 999);
  EXPECT_EQ(b2->first, 1000);
  EXPECT_EQ(b2->broker_id, 2);
  // Concurrent allocations never overlap (version-checked read-modify-write).
  std::vector<producer_id_block> got(20);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < 5; ++j) got[static_cast<size_t>(i * 5 + j)] = *brokers[1 + i % 2]->allocate_producer_id_block(1 + i % 2, 10);
    });
  for (auto& t : threads) t.join();
  std::set<int64_t> firsts;
  for (const auto& b : got) firsts.insert(b.first);
  EXPECT_EQ(firsts.size(), 20u);
}

TEST_F(zk_cluster_test, preferred_leader_election) {
  opts.auto_leader_rebalance = true;
  opts.leader_imbalance_check_interval_ms = 50;
  start(1);
  start(2);
  ASSERT_TRUE(brokers[1]->create_topic({"p", random_topic_id(), {{1, 2}, {2, 1}}, {}}).ok());
  ASSERT_TRUE(state_is("p", 0, 1, {1, 2}, 0));
  stop(1);
  ASSERT_TRUE(state_is("p", 0, 2, {2}, 1));
  start(1);
  // 1 is back but not in the ISR: no preferred election yet.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(state_is("p", 0, 2, {2}, 1));
  // The leader adds it back to the ISR (it caught up): the controller makes the preferred replica leader.
  partition_state next = *brokers[2]->snapshot()->state("p", 0);
  next.isr = {2, 1};
  ASSERT_TRUE(brokers[2]->update_isr("p", 0, next).ok());
  EXPECT_TRUE(state_is("p", 0, 1, {2, 1}, 2));
  EXPECT_TRUE(state_is("p", 1, 2, {2}, 1)) << "already led by its preferred replica";
}

TEST_F(zk_cluster_test, controlled_shutdown_moves_leadership_away) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3; }));
  ASSERT_TRUE(brokers[1]->create_topic({"c", random_topic_id(), {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, {}}).ok());
  ASSERT_TRUE(brokers[1]->create_topic({"single", random_topic_id(), {{2}}, {}}).ok());
  ASSERT_TRUE(state_is("c", 1, 2, {2, 3, 1}, 0));
  ASSERT_TRUE(state_is("single", 0, 2, {2}, 0));
  auto r = brokers[2]->controlled_shutdown(5000);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_TRUE(state_is("c", 1, 3, {3, 1}, 1));
  EXPECT_TRUE(state_is("c", 0, 1, {1, 3}, 1));
  EXPECT_TRUE(state_is("c", 2, 3, {3, 1}, 1));
  EXPECT_TRUE(state_is("single", 0, 2, {2}, 0)) << "a single replica cannot move";
  stop(2);
  EXPECT_TRUE(state_is("single", 0, -1, {2}, 1));
}

// AlterPartitionReassignments underneath (KIP-455): [1,2,3] -> [2,3,4] grows the replica set, waits for 4 in
// the ISR, then drops 1 and moves the lead into the target; the topic znode carries adding/removing meanwhile.
TEST_F(zk_cluster_test, reassignment_adds_then_removes_replicas_once_the_target_is_in_sync) {
  for (int32_t id = 1; id <= 4; ++id) start(id);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 4; }));
  ASSERT_TRUE(brokers[1]->create_topic({"r", random_topic_id(), {{1, 2, 3}}, {}}).ok());
  ASSERT_TRUE(state_is("r", 0, 1, {1, 2, 3}, 0));
  const int32_t ctl = controller_id();
  ASSERT_GE(ctl, 1);
  const int32_t other = ctl == 1 ? 2 : 1;
  auto refused = brokers[other]->alter_reassignments({{"r", 0, std::vector<int32_t>{2, 3, 4}}}, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, view_errc::not_controller);

  auto started = brokers[ctl]->alter_reassignments({{"r", 0, std::vector<int32_t>{2, 3, 4}}}, true);
  ASSERT_TRUE(started.ok()) << started.err().message;
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ((*started)[0].outcome, admin_outcome::ok) << (*started)[0].message;
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    const auto& t = s.topics.at("r");
    return t.replicas[0] == std::vector<int32_t>{2, 3, 4, 1} && t.adding_replicas.at(0) == std::vector<int32_t>{4} &&
           t.removing_replicas.at(0) == std::vector<int32_t>{1};
  }));
  EXPECT_TRUE(state_is("r", 0, 1, {1, 2, 3}, 1)) << "the leader learns its new follower through a new epoch";
  auto stored = topic_znode::decode("r", *zk->data("/brokers/topics/r"));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->adding_replicas.at(0), (std::vector<int32_t>{4}));

  // Asking again for the same target changes nothing; 4 is not in sync yet, so the move is still under way.
  auto again = brokers[ctl]->alter_reassignments({{"r", 0, std::vector<int32_t>{2, 3, 4}}}, true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].outcome, admin_outcome::ok);
  EXPECT_TRUE(brokers[ctl]->snapshot()->topics.at("r").reassigning(0));

  // The leader takes 4 into the ISR: the controller completes the move.
  partition_state next = *brokers[1]->snapshot()->state("r", 0);
  next.isr = {1, 2, 3, 4};
  ASSERT_TRUE(brokers[1]->update_isr("r", 0, next).ok());
  EXPECT_TRUE(state_is("r", 0, 2, {2, 3, 4}, 2));
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    const auto& t = s.topics.at("r");
    return t.replicas[0] == std::vector<int32_t>{2, 3, 4} && !t.reassigning(0);
  }));
  stored = topic_znode::decode("r", *zk->data("/brokers/topics/r"));
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->adding_replicas.empty() && stored->removing_replicas.empty());
}

TEST_F(zk_cluster_test, reassignment_errors_cancel_and_reorder_then_preferred_and_unclean_elections) {
  for (int32_t id = 1; id <= 3; ++id) start(id);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3; }));
  ASSERT_TRUE(brokers[1]->create_topic({"e", random_topic_id(), {{1, 2}}, {}}).ok());
  ASSERT_TRUE(state_is("e", 0, 1, {1, 2}, 0));
  auto& c = *controller();
  auto outcome = [&](reassignment_request r, bool allow = true) {
    auto o = c.alter_reassignments({std::move(r)}, allow);
    EXPECT_TRUE(o.ok());
    return o.ok() && o->size() == 1 ? (*o)[0] : partition_outcome{};
  };
  EXPECT_EQ(outcome({"nope", 0, std::vector<int32_t>{1}}).outcome, admin_outcome::unknown_partition);
  EXPECT_EQ(outcome({"e", 5, std::vector<int32_t>{1}}).outcome, admin_outcome::unknown_partition);
  EXPECT_EQ(outcome({"e", 0, std::vector<int32_t>{}}).outcome, admin_outcome::invalid_assignment);
  EXPECT_EQ(outcome({"e", 0, std::vector<int32_t>{1, 1}}).outcome, admin_outcome::invalid_assignment);
  auto unregistered = outcome({"e", 0, std::vector<int32_t>{1, 9}});
  EXPECT_EQ(unregistered.outcome, admin_outcome::invalid_assignment);
  EXPECT_NE(unregistered.message.find("broker 9"), std::string::npos) << unregistered.message;
  EXPECT_EQ(outcome({"e", 0, std::vector<int32_t>{1, 2, 3}}, false).outcome, admin_outcome::invalid_replication_factor);
  EXPECT_EQ(outcome({"e", 0, std::nullopt}).outcome, admin_outcome::no_reassignment);

  // A move to [2,3] cancelled before 3 is in sync: back to [1,2] (original replicas in replica-set order).
  EXPECT_EQ(outcome({"e", 0, std::vector<int32_t>{2, 3}}).outcome, admin_outcome::ok);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.topics.at("e").replicas[0] == std::vector<int32_t>{2, 3, 1}; }));
  EXPECT_EQ(outcome({"e", 0, std::nullopt}).outcome, admin_outcome::ok);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    const auto& t = s.topics.at("e");
    return t.replicas[0] == std::vector<int32_t>{2, 1} && !t.reassigning(0);
  }));
  // Epochs: 0 created, 1 move started, 2 cancelled. 1 still leads (it is in the original replicas).
  EXPECT_TRUE(state_is("e", 0, 1, {1, 2}, 2));

  // The assignment is now [2,1]: 2 is the preferred leader. ElectLeaders (preferred) moves the lead there.
  auto elected = c.elect_leaders(false, std::vector<std::pair<std::string, int32_t>>{{"e", 0}, {"nope", 0}});
  ASSERT_TRUE(elected.ok());
  ASSERT_EQ(elected->size(), 2u);
  EXPECT_EQ((*elected)[0].outcome, admin_outcome::ok);
  EXPECT_EQ((*elected)[1].outcome, admin_outcome::unknown_partition);
  EXPECT_TRUE(state_is("e", 0, 2, {1, 2}, 3));
  elected = c.elect_leaders(false, std::vector<std::pair<std::string, int32_t>>{{"e", 0}});
  ASSERT_TRUE(elected.ok());
  EXPECT_EQ((*elected)[0].outcome, admin_outcome::election_not_needed);
  // Every partition: only those that needed an election are answered.
  elected = c.elect_leaders(false, std::nullopt);
  ASSERT_TRUE(elected.ok());
  EXPECT_TRUE(elected->empty());
  // Unclean with a live leader: not needed.
  elected = c.elect_leaders(true, std::vector<std::pair<std::string, int32_t>>{{"e", 0}});
  ASSERT_TRUE(elected.ok());
  EXPECT_EQ((*elected)[0].outcome, admin_outcome::election_not_needed);

  // A reorder is complete at once (every target replica is in the ISR).
  EXPECT_EQ(outcome({"e", 0, std::vector<int32_t>{1, 2}}).outcome, admin_outcome::ok);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    const auto& t = s.topics.at("e");
    return t.replicas[0] == std::vector<int32_t>{1, 2} && !t.reassigning(0);
  }));
  EXPECT_TRUE(state_is("e", 0, 2, {1, 2}, 4)) << "one new epoch; the leader stays (it is a target replica)";
}

// POST /v1/topics/{t}/partitions/{p}/leader underneath (issue #18): the assignment reordered, then Kafka's
// /admin/preferred_replica_election handled by the controller and deleted.
TEST_F(zk_cluster_test, leader_move_through_a_preferred_replica_election) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3 && s.controller_id >= 0; }));
  const int32_t ctl = controller_id();
  const int32_t asker = ctl == 1 ? 2 : 1;  // not the controller
  ASSERT_TRUE(brokers[1]->create_topic({"m", random_topic_id(), {{1, 2, 3}, {2, 3, 1}}, {}}).ok());
  ASSERT_TRUE(state_is("m", 0, 1, {1, 2, 3}, 0));
  ASSERT_TRUE(state_is("m", 1, 2, {2, 3, 1}, 0));
  auto replicas_of = [&](int32_t p) {
    auto t = topic_znode::decode("m", zk->data("/brokers/topics/m").value_or(""));
    return t ? t->replicas.at(static_cast<size_t>(p)) : std::vector<int32_t>{};
  };
  auto no_request_left = [&] { return eventually([&] { return !zk->data("/admin/preferred_replica_election"); }); };

  // To broker 3: it becomes the first replica (the others keep their order) and the leader, epoch + 1, ISR as it was.
  auto r = brokers[asker]->request_leader_move("m", 0, 3);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(replicas_of(0), (std::vector<int32_t>{3, 1, 2}));
  EXPECT_TRUE(state_is("m", 0, 3, {1, 2, 3}, 1));
  EXPECT_TRUE(no_request_left()) << "the controller deletes the znode once handled";
  EXPECT_TRUE(all_see([](const cluster_snapshot& s) {
    return s.topics.contains("m") && s.topics.at("m").replicas[0] == std::vector<int32_t>{3, 1, 2};
  }));
  EXPECT_GE(brokers[1]->snapshot()->state("m", 0)->controller_epoch, 1);
  // Then to broker 2.
  ASSERT_TRUE(brokers[asker]->request_leader_move("m", 0, 2).ok());
  EXPECT_EQ(replicas_of(0), (std::vector<int32_t>{2, 3, 1}));
  EXPECT_TRUE(state_is("m", 0, 2, {1, 2, 3}, 2));
  EXPECT_TRUE(no_request_left());
  EXPECT_TRUE(state_is("m", 1, 2, {2, 3, 1}, 0)) << "the other partition is untouched";
  EXPECT_EQ(replicas_of(1), (std::vector<int32_t>{2, 3, 1}));

  // Refused without writing anything.
  EXPECT_EQ(brokers[asker]->request_leader_move("nope", 0, 1).err().code, errc::unknown_topic);
  EXPECT_EQ(brokers[asker]->request_leader_move("m", 2, 1).err().code, errc::unknown_topic);
  EXPECT_EQ(brokers[asker]->request_leader_move("m", -1, 1).err().code, errc::unknown_topic);
  auto stranger = brokers[asker]->request_leader_move("m", 0, 7);
  EXPECT_EQ(stranger.err().code, view_errc::not_a_replica);
  EXPECT_NE(stranger.err().message.find("replicas [2,3,1]"), std::string::npos) << stranger.err().message;
  EXPECT_EQ(replicas_of(0), (std::vector<int32_t>{2, 3, 1}));
  EXPECT_FALSE(zk->data("/admin/preferred_replica_election").has_value());

  // A replica outside the ISR is made preferred, but the controller does not elect it (Kafka's
  // PreferredReplicaPartitionLeaderElectionStrategy needs it alive and in the ISR): leader and epoch stay.
  partition_state shrunk = *brokers[2]->snapshot()->state("m", 0);
  shrunk.isr = {2, 3};
  ASSERT_TRUE(brokers[2]->update_isr("m", 0, shrunk).ok());
  ASSERT_TRUE(state_is("m", 0, 2, {2, 3}, 2));
  ASSERT_TRUE(brokers[asker]->request_leader_move("m", 0, 1).ok());
  EXPECT_EQ(replicas_of(0), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(no_request_left());
  EXPECT_TRUE(state_is("m", 0, 2, {2, 3}, 2));

  // The leader itself: made first again, no election needed (Kafka's ELECTION_NOT_NEEDED), the epoch stays.
  ASSERT_TRUE(brokers[asker]->request_leader_move("m", 0, 2).ok());
  EXPECT_EQ(replicas_of(0), (std::vector<int32_t>{2, 1, 3}));
  EXPECT_TRUE(no_request_left());
  EXPECT_TRUE(state_is("m", 0, 2, {2, 3}, 2));
}

// The znode as Kafka's kafka-preferred-replica-election.sh writes it, several partitions in one request, one of a
// topic that does not exist and a malformed one: each partition whose preferred replica may lead gets it.
TEST_F(zk_cluster_test, preferred_replica_election_znode_written_as_kafkas_tool_does) {
  start(1);
  start(2);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 2 && s.controller_id >= 0; }));
  ASSERT_TRUE(brokers[1]->create_topic({"k", random_topic_id(), {{1, 2}, {2, 1}, {1, 2}}, {}}).ok());
  ASSERT_TRUE(state_is("k", 0, 1, {1, 2}, 0));
  ASSERT_TRUE(state_is("k", 2, 1, {1, 2}, 0));
  // Broker 1 goes and comes back; its leader adds it back to the ISR; nothing rebalances (auto rebalance off).
  stop(1);
  ASSERT_TRUE(state_is("k", 0, 2, {2}, 1));
  ASSERT_TRUE(state_is("k", 2, 2, {2}, 1));
  start(1);
  for (int32_t p : {0, 1, 2}) {
    partition_state next = *brokers[2]->snapshot()->state("k", p);
    next.isr = {2, 1};
    ASSERT_TRUE(brokers[2]->update_isr("k", p, next).ok());
  }
  ASSERT_TRUE(state_is("k", 0, 2, {2, 1}, 1));
  ASSERT_TRUE(state_is("k", 1, 2, {2, 1}, 1));
  ASSERT_TRUE(state_is("k", 2, 2, {2, 1}, 1));

  auto admin = zk->connect(6000, 6000, nullptr).value;
  ASSERT_TRUE(admin->create("/admin/preferred_replica_election",
                            R"({"version": 1, "partitions": [{"topic": "k", "partition": 0}, {"topic": "k", "partition": 1},)"
                            R"( {"topic": "gone", "partition": 0}, {"topic": "k", "partition": 9}]})",
                            create_mode::persistent)
                  .ok());
  EXPECT_TRUE(state_is("k", 0, 1, {2, 1}, 2));
  EXPECT_TRUE(state_is("k", 1, 2, {2, 1}, 1)) << "led by its preferred replica already";
  EXPECT_TRUE(eventually([&] { return !zk->data("/admin/preferred_replica_election"); }));
  EXPECT_TRUE(state_is("k", 2, 2, {2, 1}, 1)) << "not named in the request";

  // Malformed data is dropped by the controller, nothing changes.
  ASSERT_TRUE(admin->create("/admin/preferred_replica_election", "not json", create_mode::persistent).ok());
  EXPECT_TRUE(eventually([&] { return !zk->data("/admin/preferred_replica_election"); }));
  EXPECT_TRUE(state_is("k", 2, 2, {2, 1}, 1));
  admin->close();
}

// A request written while there is no controller is handled by the next one when it is elected (level-triggered,
// as Kafka's onControllerFailover reads a pending /admin/preferred_replica_election).
TEST_F(zk_cluster_test, pending_preferred_replica_election_is_handled_by_a_new_controller) {
  start(1);
  start(2);
  start(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3 && s.controller_id >= 0; }));
  ASSERT_TRUE(brokers[1]->create_topic({"f", random_topic_id(), {{1, 2, 3}}, {}}).ok());
  ASSERT_TRUE(state_is("f", 0, 1, {1, 2, 3}, 0));
  // Another session takes /controller (broker id 99, not running): no broker acts as the controller.
  auto admin = zk->connect(6000, 6000, nullptr).value;
  ASSERT_EQ(admin->multi({zk_op::remove("/controller"),
                          zk_op::create("/controller", controller_znode::encode(99, 1), create_mode::ephemeral)}),
            zk_code::ok);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.controller_id == 99; }));
  ASSERT_TRUE(eventually([&] { return controller() == nullptr; }));
  ASSERT_TRUE(brokers[2]->request_leader_move("f", 0, 3).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(zk->data("/admin/preferred_replica_election").has_value()) << "no controller: still pending";
  EXPECT_TRUE(state_is("f", 0, 1, {1, 2, 3}, 0));
  // Its session closes: a broker is elected and handles the request.
  admin->close();
  EXPECT_TRUE(eventually([&] { return controller() != nullptr; }));
  EXPECT_TRUE(state_is("f", 0, 3, {1, 2, 3}, 1));
  EXPECT_TRUE(eventually([&] { return !zk->data("/admin/preferred_replica_election"); }));
}

TEST_F(zk_cluster_test, unreachable_zookeeper_is_reported) {
  zk->set_unreachable(true);
  auto c = zk_cluster::open(opts, zk);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.err().code, view_errc::unavailable);
}

}  // namespace
}  // namespace sluice::coordination::zk

namespace sluice::coordination::zk {
namespace {

TEST(zk_options, reads_kafkas_broker_keys) {
  auto o = zk_options::from_config({{"zookeeper.connect", "127.0.0.1:2181/kafka"},
                                    {"zookeeper.session.timeout.ms", "6000"},
                                    {"zookeeper.connection.timeout.ms", ""},
                                    {"unclean.leader.election.enable", "TRUE"},
                                    {"auto.leader.rebalance.enable", "false"},
                                    {"leader.imbalance.check.interval.seconds", "30"},
                                    {"leader.imbalance.per.broker.percentage", "20"}});
  ASSERT_TRUE(o.ok()) << o.err().message;
  EXPECT_EQ(o->connect, "127.0.0.1:2181/kafka");
  EXPECT_EQ(o->session_timeout_ms, 6000);
  EXPECT_EQ(o->effective_connection_timeout_ms(), 6000);
  EXPECT_TRUE(o->unclean_leader_election);
  EXPECT_FALSE(o->auto_leader_rebalance);
  EXPECT_EQ(o->leader_imbalance_check_interval_ms, 30000);
  EXPECT_EQ(o->leader_imbalance_per_broker_percentage, 20);
  auto d = zk_options::from_config({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->session_timeout_ms, 18000);
  EXPECT_EQ(d->leader_imbalance_check_interval_ms, 300000);
  EXPECT_TRUE(d->auto_leader_rebalance);
  EXPECT_EQ(zk_options::from_config({{"sluice.leader.imbalance.check.interval.ms", "50"}})->leader_imbalance_check_interval_ms, 50);
  auto bad = zk_options::from_config({{"zookeeper.session.timeout.ms", "soon"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.err().message.find("zookeeper.session.timeout.ms"), std::string::npos);
  EXPECT_FALSE(zk_options::from_config({{"auto.leader.rebalance.enable", "maybe"}}).ok());
}

}  // namespace
}  // namespace sluice::coordination::zk
