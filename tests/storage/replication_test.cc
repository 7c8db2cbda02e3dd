// Leader epoch cache (KIP-101/279) and the follower side of the log: appends that keep the leader's
// offsets, truncation to where two logs agree, and starting over at a leader's log start.
#include <gtest/gtest.h>

#include <fstream>

#include "storage/errc.h"
#include "storage/leader_epoch_cache.h"
#include "storage/log.h"
#include "test_util.h"

namespace sluice::storage {
namespace {

using testing::batches_in;
using testing::make_batch;
using testing::read_region;
using testing::temp_dir;

TEST(LeaderEpochCacheTest, AssignKeepsNewerEpochsOnlyAndPersists) {
  temp_dir tmp;
  auto cache = leader_epoch_cache::load(tmp.path());
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(cache->latest_epoch(), -1);
  ASSERT_TRUE(cache->assign(0, 0).ok());
  ASSERT_TRUE(cache->assign(0, 5).ok());  // same epoch again: ignored
  ASSERT_TRUE(cache->assign(2, 10).ok());
  ASSERT_TRUE(cache->assign(1, 7).ok());  // older epoch: ignored
  ASSERT_TRUE(cache->assign(4, 25).ok());
  std::vector<epoch_entry> want{{0, 0}, {2, 10}, {4, 25}};
  EXPECT_EQ(cache->entries(), want);

  std::ifstream in(tmp.path() / leader_epoch_checkpoint_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "0\n3\n0 0\n2 10\n4 25\n");
  auto again = leader_epoch_cache::load(tmp.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->entries(), want);
}

TEST(LeaderEpochCacheTest, EndOffsetForFollowsKafkasRules) {
  temp_dir tmp;
  leader_epoch_cache cache(tmp.path());
  ASSERT_TRUE(cache.assign(1, 0).ok());
  ASSERT_TRUE(cache.assign(3, 100).ok());
  ASSERT_TRUE(cache.assign(6, 250).ok());
  const int64_t leo = 300;
  EXPECT_EQ(cache.end_offset_for(6, leo), (epoch_entry{6, 300}));   // the current epoch ends at the LEO
  EXPECT_EQ(cache.end_offset_for(3, leo), (epoch_entry{3, 250}));   // ends where epoch 6 starts
  EXPECT_EQ(cache.end_offset_for(4, leo), (epoch_entry{3, 250}));   // unknown 4: the epoch below it, 3
  EXPECT_EQ(cache.end_offset_for(1, leo), (epoch_entry{1, 100}));
  EXPECT_EQ(cache.end_offset_for(0, leo), (epoch_entry{0, 0}));     // older than all: where the first starts
  EXPECT_EQ(cache.end_offset_for(7, leo), (epoch_entry{-1, -1}));   // newer than all: undefined
  EXPECT_EQ(cache.end_offset_for(-1, leo), (epoch_entry{-1, -1}));
}

TEST(LeaderEpochCacheTest, TruncationFromBothEnds) {
  temp_dir tmp;
  leader_epoch_cache cache(tmp.path());
  ASSERT_TRUE(cache.assign(1, 0).ok());
  ASSERT_TRUE(cache.assign(3, 100).ok());
  ASSERT_TRUE(cache.assign(6, 250).ok());
  ASSERT_TRUE(cache.truncate_from_end(250).ok());
  EXPECT_EQ(cache.entries(), (std::vector<epoch_entry>{{1, 0}, {3, 100}}));
  ASSERT_TRUE(cache.truncate_from_start(120).ok());
  EXPECT_EQ(cache.entries(), (std::vector<epoch_entry>{{3, 120}}));
  ASSERT_TRUE(cache.truncate_from_start(50).ok());  // below the first entry: nothing changes
  EXPECT_EQ(cache.entries(), (std::vector<epoch_entry>{{3, 120}}));
}

TEST(LeaderEpochCacheTest, MalformedFileIsAnError) {
  temp_dir tmp;
  std::ofstream(tmp.path() / leader_epoch_checkpoint_file) << "0\n2\n5 10\n3 20\n";  // epochs going down
  auto cache = leader_epoch_cache::load(tmp.path());
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.err().code, errc::corrupt_message);
  std::ofstream(tmp.path() / leader_epoch_checkpoint_file) << "0\n1\nnot numbers\n";
  EXPECT_FALSE(leader_epoch_cache::load(tmp.path()).ok());
}

// log::append rewrites the batches in place, so it takes a mutable buffer: this gives it a copy.
sluice::result<append_result> append_copy(log& l, std::vector<uint8_t> bytes, int32_t epoch) { return l.append(bytes, epoch); }

class FollowerLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<log> open_log(const std::string& name) {
    auto l = log::open(tmp_.path() / name, log_config{}, clock_);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.err().message);
    return l.ok() ? std::move(l.value()) : nullptr;
  }
  // Everything `leader` holds from `offset`, as a follower's fetch would get it.
  std::vector<uint8_t> fetch(log& leader, int64_t offset) {
    auto r = leader.read(offset, 1 << 20, leader.log_end_offset(), true);
    EXPECT_TRUE(r.ok());
    return r.ok() ? read_region(r->region) : std::vector<uint8_t>{};
  }
  temp_dir tmp_;
  manual_clock clock_;
};

TEST_F(FollowerLogTest, FollowerKeepsTheLeadersOffsetsEpochsAndBytes) {
  auto leader = open_log("leader-0");
  auto follower = open_log("follower-0");
  auto b1 = make_batch(3);
  auto b2 = make_batch(2, 2000);
  ASSERT_TRUE(leader->append(b1, 4).ok());
  ASSERT_TRUE(leader->leader_epochs().assign(4, 0).ok());
  ASSERT_TRUE(leader->append(b2, 7).ok());
  ASSERT_TRUE(leader->leader_epochs().assign(7, 3).ok());

  auto copied = fetch(*leader, 0);
  auto r = follower->append_as_follower(copied);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(r->base_offset, 0);
  EXPECT_EQ(r->last_offset, 4);
  EXPECT_EQ(follower->log_end_offset(), 5);
  EXPECT_EQ(fetch(*follower, 0), copied);  // byte for byte
  EXPECT_EQ(follower->leader_epochs().entries(), (std::vector<epoch_entry>{{4, 0}, {7, 3}}));

  // Fetching again from an offset the follower already has is refused (offsets only grow).
  auto again = follower->append_as_follower(copied);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.err().code, errc::offset_out_of_range);
}

TEST_F(FollowerLogTest, DivergentTailIsTruncatedAtTheLeadersEpochEnd) {
  // Old leader wrote offsets 0-2 at epoch 1 (committed) and 3-4 at epoch 1 (never replicated); the new
  // leader at epoch 2 wrote its own offsets 3-5. The old leader, now a follower, asks where epoch 1 ends.
  auto old_leader = open_log("old-0");
  auto new_leader = open_log("new-0");
  ASSERT_TRUE(append_copy(*old_leader, make_batch(3), 1).ok());
  ASSERT_TRUE(old_leader->leader_epochs().assign(1, 0).ok());
  ASSERT_TRUE(new_leader->append_as_follower(fetch(*old_leader, 0)).ok());
  ASSERT_TRUE(append_copy(*old_leader, make_batch(2, 5000, 10, "lost"), 1).ok());
  ASSERT_TRUE(new_leader->leader_epochs().assign(2, 3).ok());
  ASSERT_TRUE(append_copy(*new_leader, make_batch(3, 6000, 10, "new"), 2).ok());

  auto answer = new_leader->leader_epochs().end_offset_for(old_leader->leader_epochs().latest_epoch(),
                                                            new_leader->log_end_offset());
  EXPECT_EQ(answer, (epoch_entry{1, 3}));
  ASSERT_TRUE(old_leader->truncate_to(std::min(answer.start_offset, old_leader->log_end_offset())).ok());
  EXPECT_EQ(old_leader->log_end_offset(), 3);
  ASSERT_TRUE(old_leader->append_as_follower(fetch(*new_leader, 3)).ok());
  EXPECT_EQ(fetch(*old_leader, 0), fetch(*new_leader, 0));
  EXPECT_EQ(old_leader->leader_epochs().entries(), (std::vector<epoch_entry>{{1, 0}, {2, 3}}));
}

TEST_F(FollowerLogTest, EpochCacheSurvivesReopenAndIsTrimmedToTheLog) {
  {
    auto l = open_log("p-0");
    ASSERT_TRUE(append_copy(*l, make_batch(2), 3).ok());
    ASSERT_TRUE(l->leader_epochs().assign(3, 0).ok());
    ASSERT_TRUE(l->leader_epochs().assign(9, 50).ok());  // an entry beyond the log end (a torn tail)
    l->close();
  }
  auto l = open_log("p-0");
  EXPECT_EQ(l->leader_epochs().entries(), (std::vector<epoch_entry>{{3, 0}}));
}

TEST_F(FollowerLogTest, TruncateFullyStartsAnEmptyLogAtTheLeadersStart) {
  auto l = open_log("p-0");
  ASSERT_TRUE(append_copy(*l, make_batch(4), 1).ok());
  ASSERT_TRUE(l->leader_epochs().assign(1, 0).ok());
  ASSERT_TRUE(l->truncate_fully_and_start_at(1000).ok());
  EXPECT_EQ(l->log_start_offset(), 1000);
  EXPECT_EQ(l->log_end_offset(), 1000);
  EXPECT_TRUE(l->leader_epochs().entries().empty());
  auto leader = open_log("leader-0");
  ASSERT_TRUE(leader->truncate_fully_and_start_at(1000).ok());
  ASSERT_TRUE(append_copy(*leader, make_batch(2), 5).ok());
  ASSERT_TRUE(l->append_as_follower(fetch(*leader, 1000)).ok());
  EXPECT_EQ(l->log_end_offset(), 1002);
  auto headers = batches_in(fetch(*l, 1000));
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers[0].base_offset, 1000);
  EXPECT_EQ(headers[0].partition_leader_epoch, 5);
}

}  // namespace
}  // namespace sluice::storage
