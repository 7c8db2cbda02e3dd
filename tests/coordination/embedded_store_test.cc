#include "coordination/embedded_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sluice::coordination {
namespace {

class embedded_store_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-coord-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST(topic_id_text, base64_round_trip_is_22_chars) {
  for (int i = 0; i < 100; ++i) {
    auto id = random_topic_id();
    auto text = to_base64(id);
    ASSERT_EQ(text.size(), 22u);
    auto back = topic_id_from_base64(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, id);
  }
  EXPECT_FALSE(topic_id_from_base64("short").has_value());
  EXPECT_FALSE(topic_id_from_base64("!!!!!!!!!!!!!!!!!!!!!!").has_value());
}

TEST_F(embedded_store_test, topics_and_cluster_id_survive_reopen) {
  std::string cluster;
  topic_assignment t{"orders", random_topic_id(), {{0}, {0}, {0}}, {{"retention.ms", "1000"}}, {}, {}};
  {
    auto store = embedded_store::open(dir_);
    ASSERT_TRUE(store.ok()) << store.err().message;
    cluster = (*store)->cluster_id();
    EXPECT_EQ(cluster.size(), 22u);
    ASSERT_TRUE((*store)->create_topic(t).ok());
    auto dup = (*store)->create_topic(t);
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.err().code, errc::topic_exists);
    ASSERT_TRUE((*store)->create_topic({"other", random_topic_id(), {{0}}, {}, {}, {}}).ok());
    ASSERT_TRUE((*store)->delete_topic("other").ok());
    ASSERT_TRUE((*store)->add_partitions("orders", {{0}}).ok());
  }
  auto store = embedded_store::open(dir_);
  ASSERT_TRUE(store.ok()) << store.err().message;
  EXPECT_EQ((*store)->cluster_id(), cluster);
  auto topics = (*store)->topics();
  ASSERT_EQ(topics.size(), 1u);
  EXPECT_EQ(topics[0].name, "orders");
  EXPECT_EQ(topics[0].id, t.id);
  EXPECT_EQ(topics[0].partition_count(), 4);
  EXPECT_EQ(topics[0].configs.at("retention.ms"), "1000");
  EXPECT_EQ((*store)->delete_topic("nope").err().code, errc::unknown_topic);
}

TEST_F(embedded_store_test, corrupt_file_is_an_error_not_a_silent_reset) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "__cluster_metadata.json") << "{not json";
  auto store = embedded_store::open(dir_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.err().code, errc::io_error);
}

TEST_F(embedded_store_test, producer_id_blocks_are_unique_across_reopen) {
  {
    auto store = embedded_store::open(dir_);
    ASSERT_TRUE(store.ok());
    auto a = (*store)->allocate_producer_id_block(0);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->first, 0);
    EXPECT_EQ(a->last, producer_id_block_size - 1);
    auto b = (*store)->allocate_producer_id_block(0);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->first, producer_id_block_size);
  }
  // The reservation is persisted: a restarted broker never hands out an id of an earlier block.
  auto store = embedded_store::open(dir_);
  ASSERT_TRUE(store.ok());
  auto c = (*store)->allocate_producer_id_block(3, 10);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->first, 2 * producer_id_block_size);
  EXPECT_EQ(c->last, 2 * producer_id_block_size + 9);
  EXPECT_EQ(c->broker_id, 3);
  // Topics are still readable next to the new key.
  EXPECT_TRUE((*store)->topics().empty());
}

TEST_F(embedded_store_test, is_a_single_node_cluster_view) {
  auto store = embedded_store::open(dir_);
  ASSERT_TRUE(store.ok()) << store.err().message;
  auto& view = static_cast<cluster_view&>(**store);
  ASSERT_NE(view.snapshot(), nullptr);
  EXPECT_FALSE(view.snapshot()->registered);
  std::vector<uint64_t> seen;
  view.subscribe([&](std::shared_ptr<const cluster_snapshot> s) { seen.push_back(s->sequence); });
  ASSERT_TRUE(view.start(broker_registration{7, "localhost", 9092, "PLAINTEXT", {}, std::nullopt}).ok());
  auto snap = view.snapshot();
  EXPECT_TRUE(snap->registered);
  EXPECT_EQ(snap->controller_id, 7);
  ASSERT_EQ(snap->brokers.size(), 1u);
  EXPECT_EQ(snap->brokers.at(7).host, "localhost");
  ASSERT_TRUE((*store)->create_topic({"t", random_topic_id(), {{7}, {7}}, {}, {}, {}}).ok());
  snap = view.snapshot();
  ASSERT_NE(snap->state("t", 1), nullptr);
  EXPECT_EQ(snap->state("t", 1)->leader, 7);
  EXPECT_EQ(snap->state("t", 1)->isr, std::vector<int32_t>{7});
  EXPECT_EQ(snap->state("t", 1)->leader_epoch, 0);
  EXPECT_EQ(snap->state("t", 1)->version, 0);
  EXPECT_EQ(snap->state("t", 2), nullptr);
  ASSERT_TRUE((*store)->add_partitions("t", {{7}}).ok());
  EXPECT_NE(view.snapshot()->state("t", 2), nullptr);
  ASSERT_TRUE((*store)->set_topic_configs("t", {{"retention.ms", "1"}}).ok());
  EXPECT_EQ(view.snapshot()->topics.at("t").configs.at("retention.ms"), "1");
  ASSERT_TRUE((*store)->delete_topic("t").ok());
  EXPECT_FALSE(view.snapshot()->topics.contains("t"));
  ASSERT_EQ(seen.size(), 5u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]);
  EXPECT_TRUE(view.controlled_shutdown(10).ok());
  EXPECT_FALSE(view.update_isr("t", 0, partition_state{}).ok());
  EXPECT_EQ(view.request_leader_move("t", 0, 7).err().code, view_errc::not_supported);
  view.stop();
}

}  // namespace
}  // namespace sluice::coordination
