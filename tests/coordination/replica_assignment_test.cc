// Kafka's AdminUtils.assignReplicasToBrokers: preferred leaders spread evenly, rack-aware spread.
#include "coordination/replica_assignment.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace sluice::coordination {
namespace {

std::vector<broker_rack> brokers(std::initializer_list<int32_t> ids) {
  std::vector<broker_rack> out;
  for (int32_t id : ids) out.push_back({id, std::nullopt});
  return out;
}

TEST(replica_assignment, three_brokers_twelve_partitions_rf3_leaders_4_4_4) {
  for (int start = -1; start < 3; ++start) {
    auto a = assign_replicas(brokers({3, 1, 2}), 12, 3, 0, start, start);
    ASSERT_TRUE(a.ok()) << a.err().message;
    ASSERT_EQ(a->size(), 12u);
    std::map<int32_t, int> leaders;
    for (const auto& r : *a) {
      ASSERT_EQ(r.size(), 3u);
      EXPECT_EQ(std::set<int32_t>(r.begin(), r.end()).size(), 3u);  // distinct brokers
      leaders[r[0]]++;
    }
    EXPECT_EQ(leaders, (std::map<int32_t, int>{{1, 4}, {2, 4}, {3, 4}})) << "start " << start;
  }
}

TEST(replica_assignment, matches_kafkas_fixed_start_example) {
  // Kafka's AdminTest.testReplicaAssignment: brokers 0-4, 10 partitions, RF 3, start index 0.
  auto a = assign_replicas(brokers({0, 1, 2, 3, 4}), 10, 3, 0, 0, 0);
  ASSERT_TRUE(a.ok());
  std::vector<std::vector<int32_t>> expected = {{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
                                                {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}};
  EXPECT_EQ(*a, expected);
}

TEST(replica_assignment, invalid_replication_factor_and_partitions) {
  auto a = assign_replicas(brokers({1, 2, 3}), 3, 4);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.err().code, assignment_errc::invalid_replication_factor);
  EXPECT_EQ(assign_replicas(brokers({1}), 3, 0).err().code,
            assignment_errc::invalid_replication_factor);
  EXPECT_EQ(assign_replicas(brokers({}), 3, 1).err().code,
            assignment_errc::invalid_replication_factor);
  EXPECT_EQ(assign_replicas(brokers({1}), 0, 1).err().code, assignment_errc::invalid_partitions);
}

TEST(replica_assignment, rack_aware_spreads_each_partition_over_racks) {
  // Racks alternate: a, b, c; 6 brokers, 2 per rack.
  std::vector<broker_rack> b = {{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}, {4, "c"}, {5, "c"}};
  std::map<int32_t, std::string> rack{{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}, {4, "c"}, {5, "c"}};
  auto a = assign_replicas(b, 12, 3, 0, 0, 0);
  ASSERT_TRUE(a.ok()) << a.err().message;
  std::map<int32_t, int> leaders, replicas;
  for (const auto& r : *a) {
    std::set<std::string> racks;
    for (int32_t id : r) {
      racks.insert(rack[id]);
      replicas[id]++;
    }
    EXPECT_EQ(racks.size(), 3u) << "one replica per rack";
    leaders[r[0]]++;
  }
  for (const auto& [id, n] : leaders) EXPECT_EQ(n, 2) << "broker " << id;
  for (const auto& [id, n] : replicas) EXPECT_EQ(n, 6) << "broker " << id;
  EXPECT_EQ(leaders.size(), 6u);

  // RF 2 on 2 racks of unequal size: still never both replicas in one rack.
  std::vector<broker_rack> uneven = {{1, "x"}, {2, "x"}, {3, "y"}};
  auto u = assign_replicas(uneven, 6, 2, 0, 0, 0);
  ASSERT_TRUE(u.ok());
  for (const auto& r : *u) EXPECT_NE((r[0] == 3), (r[1] == 3));
}

TEST(replica_assignment, added_partitions_continue_the_pattern) {
  auto first = assign_replicas(brokers({1, 2, 3}), 3, 2, 0, 0, 0);
  ASSERT_TRUE(first.ok());
  auto more = assign_added_partitions(brokers({1, 2, 3}), *first, 6);
  ASSERT_TRUE(more.ok()) << more.err().message;
  ASSERT_EQ(more->size(), 3u);
  std::map<int32_t, int> leaders;
  for (const auto& r : *first) leaders[r[0]]++;
  for (const auto& r : *more) {
    EXPECT_EQ(r.size(), 2u);
    leaders[r[0]]++;
  }
  EXPECT_EQ(leaders, (std::map<int32_t, int>{{1, 2}, {2, 2}, {3, 2}}));
  EXPECT_EQ(assign_added_partitions(brokers({1, 2, 3}), *first, 3).err().code,
            assignment_errc::invalid_partitions);
}

}  // namespace
}  // namespace sluice::coordination
