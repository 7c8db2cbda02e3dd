// KIP-392's rack-aware choice of a read replica (broker/replication/replica_selector.h), as Kafka's
// RackAwareReplicaSelector decides it.
#include "broker/replication/replica_selector.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::broker::replication {
namespace {

TEST(RackAwareReplicaSelector, LeaderWhenTheClientNamesNoRackOrTheLeaderIsInIt) {
  const replica_view leader{1, "r1", 100, 0};
  const std::vector<replica_view> followers{{2, "r2", 100, 0}, {3, "r1", 100, 0}};
  EXPECT_EQ(select_rack_aware("", leader, followers), std::nullopt);
  EXPECT_EQ(select_rack_aware("r1", leader, followers), std::nullopt);  // the leader is in r1: not follower 3
  EXPECT_EQ(select_rack_aware("r9", leader, followers), std::nullopt);  // nobody in r9
  EXPECT_EQ(select_rack_aware("r2", leader, followers), 2);
}

TEST(RackAwareReplicaSelector, MostCaughtUpFollowerOfTheRackThenMostRecentlyCaughtUp) {
  const replica_view leader{1, std::nullopt, 500, 0};  // a leader without a rack is in no client's rack
  std::vector<replica_view> followers{{2, "r2", 400, 0}, {3, "r2", 450, 900}, {4, "r3", 500, 0}, {5, std::nullopt, 500, 0}};
  EXPECT_EQ(select_rack_aware("r2", leader, followers), 3);  // the higher log end offset wins over recency
  followers[0].log_end_offset = 450;
  EXPECT_EQ(select_rack_aware("r2", leader, followers), 2);  // same offset: caught up more recently
  followers[0].since_caught_up_ms = 900;
  EXPECT_EQ(select_rack_aware("r2", leader, followers), 2);  // a full tie: the lower id, whatever the order
  std::swap(followers[0], followers[1]);
  EXPECT_EQ(select_rack_aware("r2", leader, followers), 2);
  EXPECT_EQ(select_rack_aware("r3", leader, followers), 4);
}

}  // namespace
}  // namespace sluice::broker::replication
