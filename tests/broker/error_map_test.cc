// broker/error_map: every value of every layer's error enum becomes the Kafka code it became before the
// codes were typed (from_storage, from_coordination, to_wire and produce's own v3+ rule), and codes of
// different categories never compare equal, even where their numbers are the same.
#include "broker/error_map.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/groups/group_error.h"
#include "broker/partition.h"
#include "broker/partition_errc.h"
#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "coordination/replica_assignment.h"
#include "coordination/zk/znodes.h"
#include "storage/errc.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using coordination::assignment_errc;
using coordination::view_errc;
using coordination::zk::zk_errc;

template <typename Enum>
void expect_table(const std::vector<std::pair<Enum, error_code>>& table) {
  for (const auto& [value, kafka] : table) {
    const std::error_code code = value;
    EXPECT_EQ(to_kafka(code), kafka) << code.category().name() << ":" << code.value() << " " << code.message();
    EXPECT_EQ(to_kafka(error{value, "m"}), kafka) << code.category().name() << ":" << code.value();
  }
}

TEST(error_map, storage_errc_every_value) {
  expect_table<storage::errc>({
      {storage::errc::ok, error_code::none},
      {storage::errc::corrupt_message, error_code::corrupt_message},
      {storage::errc::invalid_record, error_code::invalid_record},
      {storage::errc::record_too_large, error_code::message_too_large},
      {storage::errc::unsupported_magic, error_code::unsupported_for_message_format},
      {storage::errc::offset_out_of_range, error_code::offset_out_of_range},
      {storage::errc::io_error, error_code::kafka_storage_error},
      {storage::errc::invalid_argument, error_code::invalid_request},
      {storage::errc::not_found, error_code::unknown_topic_or_partition},
      {storage::errc::already_exists, error_code::kafka_storage_error},
      {storage::errc::out_of_order_sequence, error_code::out_of_order_sequence_number},
      {storage::errc::invalid_producer_epoch, error_code::invalid_producer_epoch},
      {storage::errc::invalid_txn_state, error_code::invalid_txn_state},
      {storage::errc::coordinator_fenced, error_code::transaction_coordinator_fenced},
  });
  EXPECT_EQ(to_kafka(std::error_code(999, storage::storage_category())), error_code::unknown_server_error);
}

TEST(error_map, partition_errc_every_value) {
  expect_table<partition_errc>({
      {partition_errc::not_leader, error_code::not_leader_or_follower},
      {partition_errc::not_enough_replicas, error_code::not_enough_replicas},
  });
}

TEST(error_map, coordination_errc_every_value) {
  expect_table<coordination::errc>({
      {coordination::errc::ok, error_code::none},
      {coordination::errc::topic_exists, error_code::topic_already_exists},
      {coordination::errc::unknown_topic, error_code::unknown_topic_or_partition},
      {coordination::errc::io_error, error_code::kafka_storage_error},
  });
}

TEST(error_map, assignment_errc_every_value) {
  expect_table<assignment_errc>({
      {assignment_errc::invalid_replication_factor, error_code::invalid_replication_factor},
      {assignment_errc::invalid_partitions, error_code::invalid_partitions},
  });
}

// Errors the broker handles in context (ISR updates, registration, znode decoding, startup): never a
// specific Kafka code.
TEST(error_map, view_zk_and_base_errors_are_unknown_server_error) {
  expect_table<view_errc>({
      {view_errc::version_conflict, error_code::unknown_server_error},
      {view_errc::not_registered, error_code::unknown_server_error},
      {view_errc::timeout, error_code::unknown_server_error},
      {view_errc::unavailable, error_code::unknown_server_error},
  });
  expect_table<zk_errc>({
      {zk_errc::malformed, error_code::unknown_server_error},
      {zk_errc::registration_conflict, error_code::unknown_server_error},
      {zk_errc::zookeeper_error, error_code::unknown_server_error},
  });
  expect_table<base_errc>({{base_errc::failed, error_code::unknown_server_error}});
  EXPECT_EQ(to_kafka(std::make_error_code(std::errc::io_error)), error_code::unknown_server_error);
  EXPECT_EQ(to_kafka(std::error_code{}), error_code::none);
  EXPECT_EQ(to_kafka(error{}), error_code::none);
}

TEST(error_map, group_error_every_value_keeps_its_number) {
  using groups::group_error;
  const std::vector<group_error> all = {
      group_error::unknown_server_error, group_error::none,
      group_error::invalid_fetch_size, group_error::not_leader_or_follower,
      group_error::request_timed_out, group_error::message_too_large,
      group_error::offset_metadata_too_large, group_error::coordinator_load_in_progress,
      group_error::coordinator_not_available, group_error::not_coordinator,
      group_error::record_list_too_large, group_error::not_enough_replicas,
      group_error::not_enough_replicas_after_append, group_error::illegal_generation,
      group_error::inconsistent_group_protocol, group_error::invalid_group_id,
      group_error::unknown_member_id, group_error::invalid_session_timeout,
      group_error::rebalance_in_progress, group_error::invalid_commit_offset_size,
      group_error::unknown_topic_or_partition, group_error::kafka_storage_error,
      group_error::non_empty_group, group_error::group_id_not_found,
      group_error::member_id_required, group_error::group_max_size_reached,
      group_error::fenced_instance_id, group_error::group_subscribed_to_topic,
      group_error::unstable_offset_commit, group_error::invalid_producer_epoch,
      group_error::invalid_txn_state,
  };
  std::vector<std::pair<group_error, error_code>> table;
  for (group_error e : all) table.push_back({e, static_cast<error_code>(static_cast<int16_t>(e))});
  expect_table(table);
  // Spot checks against the protocol's names, and a storage code passed through as a group_error (the
  // group log's append failure, broker/group_service.cc) keeps its number.
  EXPECT_EQ(to_kafka(group_error::rebalance_in_progress), error_code::rebalance_in_progress);
  EXPECT_EQ(to_kafka(group_error::unknown_server_error), error_code::unknown_server_error);
  EXPECT_EQ(to_kafka(static_cast<group_error>(87)), error_code::invalid_record);
  EXPECT_EQ(std::error_code(group_error::not_coordinator).message(), "NOT_COORDINATOR");
}

// The storage code a group log append fails with, as the group coordinator sees it (group_service.cc).
TEST(error_map, storage_error_reaches_groups_as_its_kafka_number) {
  const auto as_group = [](const error& e) { return static_cast<groups::group_error>(static_cast<int16_t>(to_kafka(e))); };
  EXPECT_EQ(as_group(error{partition_errc::not_leader, ""}), groups::group_error::not_leader_or_follower);
  EXPECT_EQ(as_group(error{partition_errc::not_enough_replicas, ""}), groups::group_error::not_enough_replicas);
  EXPECT_EQ(as_group(error{storage::errc::record_too_large, ""}), groups::group_error::message_too_large);
  EXPECT_EQ(as_group(error{storage::errc::not_found, ""}), groups::group_error::unknown_topic_or_partition);
}

TEST(error_map, produce_v3_and_later_answer_invalid_record_for_another_magic) {
  const error magic{storage::errc::unsupported_magic, "magic 1"};
  EXPECT_EQ(to_kafka_produce(magic, 3), error_code::invalid_record);
  EXPECT_EQ(to_kafka_produce(magic, 11), error_code::invalid_record);
  EXPECT_EQ(to_kafka_produce(magic, 2), error_code::unsupported_for_message_format);
  EXPECT_EQ(to_kafka_produce(error{storage::errc::corrupt_message, ""}, 9), error_code::corrupt_message);
  EXPECT_EQ(to_kafka_produce(error{partition_errc::not_leader, ""}, 9), error_code::not_leader_or_follower);
  // The same number in another category is not unsupported_magic.
  const int magic_number = static_cast<int>(storage::errc::unsupported_magic);
  EXPECT_EQ(to_kafka_produce(error{std::error_code(magic_number, coordination::coordination_category()), ""}, 9),
            error_code::unknown_server_error);
}

TEST(error_map, high_watermark_wait_outcomes_every_value) {
  EXPECT_EQ(to_kafka(hw_wait_result::reached), protocol::error_code::none);
  EXPECT_EQ(to_kafka(hw_wait_result::not_enough_replicas), protocol::error_code::not_enough_replicas_after_append);
  EXPECT_EQ(to_kafka(hw_wait_result::not_leader), protocol::error_code::not_leader_or_follower);
  EXPECT_EQ(to_kafka(hw_wait_result::timed_out), protocol::error_code::request_timed_out);
}

TEST(error_map, distinct_categories_never_compare_equal) {
  // Equal numbers in different layers: once a collision (partition_errc and assignment_errc both began at 200).
  const std::error_code not_leader = partition_errc::not_leader;
  const std::error_code bad_factor = assignment_errc::invalid_replication_factor;
  ASSERT_EQ(not_leader.value(), bad_factor.value());
  EXPECT_NE(not_leader, bad_factor);
  const error refused{partition_errc::not_leader, "not led here"};
  EXPECT_FALSE(refused.code == assignment_errc::invalid_replication_factor);
  EXPECT_TRUE(refused.code == partition_errc::not_leader);
  EXPECT_NE(to_kafka(not_leader), to_kafka(bad_factor));

  const std::vector<std::error_code> ones = {
      storage::errc::corrupt_message, partition_errc::not_leader, coordination::errc::topic_exists,
      view_errc::version_conflict,    assignment_errc::invalid_replication_factor, zk_errc::malformed,
      base_errc::failed,              static_cast<groups::group_error>(1),  // Kafka's OFFSET_OUT_OF_RANGE
  };
  std::set<std::string> names;
  for (size_t i = 0; i < ones.size(); ++i) {
    EXPECT_EQ(ones[i].value(), 1) << ones[i].category().name();
    names.insert(ones[i].category().name());
    for (size_t j = 0; j < ones.size(); ++j) {
      if (i == j) continue;
      EXPECT_NE(ones[i], ones[j]) << ones[i].category().name() << " vs " << ones[j].category().name();
    }
  }
  EXPECT_EQ(names.size(), ones.size());
}

}  // namespace
}  // namespace sluice::broker
