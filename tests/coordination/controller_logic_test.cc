// controller_logic.h's reassignment and election rules as pure functions (KIP-455, KIP-460).
#include "coordination/zk/controller_logic.h"

#include <gtest/gtest.h>

namespace sluice::coordination::zk {
namespace {

using ids = std::vector<int32_t>;

cluster_liveness live_of(std::set<int32_t> live, std::set<int32_t> shutting = {}) { return {std::move(live), std::move(shutting)}; }

partition_state state(int32_t leader, int32_t epoch, ids isr) {
  partition_state s;
  s.leader = leader;
  s.leader_epoch = epoch;
  s.isr = std::move(isr);
  s.version = 4;
  return s;
}

TEST(controller_logic, plan_of_a_move_lists_target_then_the_replicas_to_remove) {
  auto plan = plan_reassignment({1, 2, 3}, {2, 3, 4});
  EXPECT_EQ(plan.replicas, (ids{2, 3, 4, 1}));
  EXPECT_EQ(plan.adding, (ids{4}));
  EXPECT_EQ(plan.removing, (ids{1}));
  // A shrink adds nothing; a reorder neither adds nor removes.
  plan = plan_reassignment({1, 2, 3}, {3, 1});
  EXPECT_EQ(plan.replicas, (ids{3, 1, 2}));
  EXPECT_TRUE(plan.adding.empty());
  EXPECT_EQ(plan.removing, (ids{2}));
  plan = plan_reassignment({1, 2, 3}, {3, 2, 1});
  EXPECT_EQ(plan.replicas, (ids{3, 2, 1}));
  EXPECT_TRUE(plan.adding.empty() && plan.removing.empty());
}

TEST(controller_logic, a_new_target_replaces_an_ongoing_move_from_the_original_replicas) {
  // [1,2,3] -> [2,3,4] under way: replicas [2,3,4,1], adding [4]. Now to [2,3,5]: 4 was never an original
  // replica, so it is neither kept nor "removed"; it simply leaves the replica set.
  topic_assignment moving{"t", {}, {{2, 3, 4, 1}}, {}, {{0, {4}}}, {{0, {1}}}};
  EXPECT_EQ(moving.original_replicas(0), (ids{2, 3, 1}));
  EXPECT_EQ(moving.target_replicas(0), (ids{2, 3, 4}));
  auto plan = plan_reassignment(moving.original_replicas(0), {2, 3, 5});
  EXPECT_EQ(plan.replicas, (ids{2, 3, 5, 1}));
  EXPECT_EQ(plan.adding, (ids{5}));
  EXPECT_EQ(plan.removing, (ids{1}));
}

TEST(controller_logic, state_for_replicas_bumps_the_epoch_and_moves_a_leader_outside_them) {
  const auto live = live_of({1, 2, 3, 4});
  // Start of a move: the leader stays, the ISR is unchanged, the epoch is bumped.
  auto s = state_for_replicas({2, 3, 4, 1}, state(1, 5, {1, 2, 3}), live, 7);
  EXPECT_EQ(s.leader, 1);
  EXPECT_EQ(s.isr, (ids{1, 2, 3}));
  EXPECT_EQ(s.leader_epoch, 6);
  EXPECT_EQ(s.controller_epoch, 7);
  EXPECT_EQ(s.version, 4);
  // Completion: 1 leaves the ISR and the lead goes to the first target replica in the ISR.
  s = state_for_replicas({2, 3, 4}, state(1, 6, {1, 2, 3, 4}), live, 7);
  EXPECT_EQ(s.leader, 2);
  EXPECT_EQ(s.isr, (ids{2, 3, 4}));
  EXPECT_EQ(s.leader_epoch, 7);
  // A shutting-down leader in the target hands over too; with nobody eligible in the ISR there is no leader.
  s = state_for_replicas({2, 3}, state(2, 1, {2, 3}), live_of({1, 2, 3}, {2}), 7);
  EXPECT_EQ(s.leader, 3);
  s = state_for_replicas({4}, state(1, 1, {1, 2}), live, 7);
  EXPECT_EQ(s.leader, -1);
  EXPECT_TRUE(s.isr.empty());
}

TEST(controller_logic, unclean_election_prefers_the_isr_then_any_live_replica) {
  // Leader 1 dead; 3 is in the ISR and live: clean choice first.
  auto s = unclean_state({1, 2, 3}, state(-1, 3, {1, 3}), live_of({2, 3}), 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->leader, 3);
  EXPECT_EQ(s->isr, (ids{3}));
  EXPECT_EQ(s->leader_epoch, 4);
  // Nobody of the ISR alive: the first live replica, alone in the ISR.
  s = unclean_state({1, 2, 3}, state(-1, 3, {1}), live_of({3, 2}), 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->leader, 2);
  EXPECT_EQ(s->isr, (ids{2}));
  // No replica alive.
  EXPECT_FALSE(unclean_state({1, 2}, state(-1, 3, {1}), live_of({5}), 1));
}

}  // namespace
}  // namespace sluice::coordination::zk
