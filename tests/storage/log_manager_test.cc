#include "storage/log_manager.h"

#include <gtest/gtest.h>

#include "storage/errc.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

TEST(LogManager, ParsePartitionDir) {
  using tp = topic_partition;
  EXPECT_EQ(log_manager::parse_partition_dir("orders-0"), (tp{"orders", 0}));
  EXPECT_EQ(log_manager::parse_partition_dir("my-topic-12"), (tp{"my-topic", 12}));
  EXPECT_EQ(log_manager::parse_partition_dir("__consumer_offsets-49"), (tp{"__consumer_offsets", 49}));
  EXPECT_FALSE(log_manager::parse_partition_dir("lost+found").has_value());
  EXPECT_FALSE(log_manager::parse_partition_dir("orders-").has_value());
  EXPECT_FALSE(log_manager::parse_partition_dir("-3").has_value());
  EXPECT_FALSE(log_manager::parse_partition_dir("orders-x1").has_value());
}

// Kafka's longest topic name (249 characters): "<name>-0.<32 hex>-delete" would be 292 bytes, past the
// 255-byte file name limit; the rename failed and the data stayed, to reappear in a topic created again.
TEST(LogManager, RemoveALogOfAMaximalTopicName) {
  temp_dir tmp;
  manual_clock clock;
  const std::vector<std::filesystem::path> dirs{tmp.path() / "d1"};
  const std::string topic(249, 'x');
  {
    log_manager m(dirs, log_config{}, clock);
    ASSERT_TRUE(m.load().ok());
    auto l = m.create(topic, 7, log_config{});
    ASSERT_TRUE(l.ok()) << l.err().message;
    auto batch = make_batch(3);
    ASSERT_TRUE((*l)->append(batch, 0).ok());
    auto removed = m.remove(topic, 7);
    ASSERT_TRUE(removed.ok()) << removed.err().message;
    EXPECT_FALSE(std::filesystem::exists(dirs[0] / (topic + "-7")));
    auto again = m.create(topic, 7, log_config{});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->log_end_offset(), 0);
  }
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dirs[0])) left += e.is_directory() ? 1 : 0;
  EXPECT_EQ(left, 1u);  // the new, empty log only
}

TEST(LogManager, CreateGetRemoveLoad) {
  temp_dir tmp;
  manual_clock clock;
  const std::vector<std::filesystem::path> dirs{tmp.path() / "d1", tmp.path() / "d2"};
  {
    log_manager m(dirs, log_config{}, clock);
    ASSERT_TRUE(m.load().ok());
    EXPECT_TRUE(m.partitions().empty());
    auto a = m.create("my-topic", 0, log_config{});
    ASSERT_TRUE(a.ok());
    auto b = m.create("my-topic", 1, log_config{});
    ASSERT_TRUE(b.ok());
    auto c = m.create("other", 0, log_config{});
    ASSERT_TRUE(c.ok());
    // Fewest partitions first: d1, d2, d1.
    EXPECT_EQ((*a)->dir(), dirs[0] / "my-topic-0");
    EXPECT_EQ((*b)->dir(), dirs[1] / "my-topic-1");
    EXPECT_EQ((*c)->dir(), dirs[0] / "other-0");
    EXPECT_EQ(*m.create("my-topic", 0, log_config{}), *a);  // get-or-create
    EXPECT_EQ(m.get("my-topic", 1), *b);
    EXPECT_EQ(m.get("my-topic", 2), nullptr);
    EXPECT_EQ(m.create("bad/name", 0, {}).err().code, errc::invalid_argument);
    EXPECT_EQ(m.create("t", -1, {}).err().code, errc::invalid_argument);

    auto batch = make_batch(3);
    ASSERT_TRUE((*a)->append(batch, 0).ok());
    auto batch2 = make_batch(2);
    ASSERT_TRUE((*c)->append(batch2, 0).ok());

    ASSERT_TRUE(m.remove("other", 0).ok());
    EXPECT_EQ(m.get("other", 0), nullptr);
    EXPECT_FALSE(std::filesystem::exists(dirs[0] / "other-0"));
    EXPECT_EQ(m.remove("other", 0).err().code, errc::not_found);
    ASSERT_TRUE(m.flush_all().ok());
  }
  // Leftovers that load must skip or clean.
  std::filesystem::create_directories(dirs[1] / "gone-0.0123456789abcdef0123456789abcdef-delete");
  std::filesystem::create_directories(dirs[1] / "lost+found");
  {
    log_manager m(dirs, log_config{}, clock);
    ASSERT_TRUE(m.load().ok());
    EXPECT_EQ(m.partitions(), (std::vector<std::pair<std::string, int32_t>>{{"my-topic", 0}, {"my-topic", 1}}));
    ASSERT_NE(m.get("my-topic", 0), nullptr);
    EXPECT_EQ(m.get("my-topic", 0)->log_end_offset(), 3);
    EXPECT_FALSE(std::filesystem::exists(dirs[1] / "gone-0.0123456789abcdef0123456789abcdef-delete"));
    // Checkpoint files in Kafka's text format.
    auto cp = read_offset_checkpoint(dirs[0] / recovery_point_checkpoint_file);
    ASSERT_TRUE(cp.ok());
    EXPECT_EQ(cp->at({"my-topic", 0}), 3);
  }
  // The same partition in two log dirs is refused.
  std::filesystem::create_directories(dirs[1] / "my-topic-0");
  log_manager m(dirs, log_config{}, clock);
  EXPECT_EQ(m.load().err().code, errc::already_exists);
}

// AlterReplicaLogDirs (KIP-113): a log copied to another log dir, swapped in, and found there after a restart.
TEST(LogManager, MoveToAnotherLogDir) {
  temp_dir tmp;
  manual_clock clock;
  const std::vector<std::filesystem::path> dirs{tmp.path() / "d1", tmp.path() / "d2"};
  {
    log_manager m(dirs, log_config{}, clock);
    ASSERT_TRUE(m.load().ok());
    EXPECT_EQ(m.find_log_dir(std::filesystem::absolute(dirs[1]).string()), 1u);
    EXPECT_FALSE(m.find_log_dir("d2").has_value());  // only absolute paths, as Kafka
    auto l = m.create("moving", 0, log_config{});
    ASSERT_TRUE(l.ok());
    ASSERT_EQ((*l)->dir(), dirs[0] / "moving-0");
    auto b1 = make_batch(3);
    ASSERT_TRUE((*l)->append(b1, 0).ok());
    auto b2 = make_batch(4);
    ASSERT_TRUE((*l)->append(b2, 0).ok());
    EXPECT_EQ(*m.move("moving", 0, 0), *l);  // already there: the same log
    auto moved = m.move("moving", 0, 1);
    ASSERT_TRUE(moved.ok()) << moved.err().message;
    EXPECT_EQ((*moved)->dir(), dirs[1] / "moving-0");
    EXPECT_EQ((*moved)->log_end_offset(), 7);
    EXPECT_EQ(m.get("moving", 0), *moved);
    EXPECT_EQ(m.dir_index_of("moving", 0), 1u);
    EXPECT_FALSE(std::filesystem::exists(dirs[0] / "moving-0"));
    auto r = (*moved)->read(3, 1 << 20, 7, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->first_offset, 3);  // the second batch, read from the copy
    auto b3 = make_batch(2);
    ASSERT_TRUE((*moved)->append(b3, 0).ok());
    EXPECT_EQ(m.move("nothing", 0, 1).err().code, errc::not_found);
    EXPECT_EQ(m.move("moving", 0, 2).err().code, errc::invalid_argument);
    // A replica created later goes where an earlier request asked (Kafka's preferred log dir), once.
    m.set_preferred_dir("later", 0, 0);
    m.set_preferred_dir("later", 1, 0);
    auto later = m.create("later", 0, log_config{});
    ASSERT_TRUE(later.ok());
    EXPECT_EQ((*later)->dir(), dirs[0] / "later-0");
  }
  log_manager m(dirs, log_config{}, clock);
  ASSERT_TRUE(m.load().ok());
  ASSERT_NE(m.get("moving", 0), nullptr);
  EXPECT_EQ(m.get("moving", 0)->dir(), dirs[1] / "moving-0");
  EXPECT_EQ(m.get("moving", 0)->log_end_offset(), 9);
}

// A move cut short by a crash: before the commit point (the old log still there) the copy is dropped; after it
// (the old log renamed for deletion) the copy is the partition's log.
TEST(LogManager, LoadDropsOrFinishesAnInterruptedMove) {
  temp_dir tmp;
  manual_clock clock;
  const std::vector<std::filesystem::path> dirs{tmp.path() / "d1", tmp.path() / "d2"};
  {
    log_manager m(dirs, log_config{}, clock);
    ASSERT_TRUE(m.load().ok());
    for (const char* t : {"early", "late"}) {
      auto l = m.create(t, 0, log_config{});
      ASSERT_TRUE(l.ok());
      auto b = make_batch(5);
      ASSERT_TRUE((*l)->append(b, 0).ok());
    }
  }
  // early-0 is in d1 (fewest logs, first dir); late-0 wherever create put it, its copy in the other dir.
  const auto early = dirs[0] / "early-0";
  const auto late_src = std::filesystem::exists(dirs[0] / "late-0") ? dirs[0] / "late-0" : dirs[1] / "late-0";
  const auto other = late_src.parent_path() == dirs[0] ? dirs[1] : dirs[0];
  const std::string hex = "0123456789abcdef0123456789abcdef";
  std::filesystem::copy(early, dirs[1] / ("early-0." + hex + "-future"));
  std::filesystem::copy(late_src, other / ("late-0." + hex + "-future"));
  std::filesystem::rename(late_src, late_src.parent_path() / ("late-0." + hex + "-delete"));
  log_manager m(dirs, log_config{}, clock);
  ASSERT_TRUE(m.load().ok());
  ASSERT_NE(m.get("early", 0), nullptr);
  EXPECT_EQ(m.get("early", 0)->dir(), early);  // dropped copy: the log stays where it was
  EXPECT_FALSE(std::filesystem::exists(dirs[1] / ("early-0." + hex + "-future")));
  ASSERT_NE(m.get("late", 0), nullptr);
  EXPECT_EQ(m.get("late", 0)->dir(), other / "late-0");  // finished move
  EXPECT_EQ(m.get("late", 0)->log_end_offset(), 5);
  EXPECT_FALSE(std::filesystem::exists(late_src.parent_path() / ("late-0." + hex + "-delete")));
}

}  // namespace
}  // namespace sluice::storage
