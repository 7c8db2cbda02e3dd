// TxnOffsetCommit end to end below the network (KIP-98, KIP-447): the handler on a real single node (group service,
// coordinator runtime, __consumer_offsets log), a marker appended with partition::append_marker and announced with
// group_service::on_txn_marker, OffsetFetch with require_stable, and a group service rebuilt from the same log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>

#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"
#include "storage/record_batch.h"
#include "tests/broker/single_node.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

class TxnOffsetCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_.open("sluice-txn-offset-commit-test", {{"broker.id", "1"}, {"offsets.topic.num.partitions", "1"}}, clock_, io_);
    ASSERT_FALSE(HasFatalFailure());
    topic_spec spec;
    spec.name = "t";
    spec.num_partitions = 2;
    ASSERT_TRUE(node_.topics->create(spec, false).ok());
  }
  void drain() {
    io_.restart();
    io_.poll();
  }
  request_context context(int16_t api_key, int16_t version) {
    return request_context{protocol::request_header{api_key, version, 1, "txn-offset-commit-test"}, session_, strand_};
  }
  template <typename T, typename F>
  T call(F f) {
    auto done = asio::co_spawn(strand_, std::move(f), asio::use_future);
    drain();
    EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    return done.get();
  }
  protocol::txn_offset_commit_response txn_commit(int16_t version, int64_t producer_id, int16_t epoch,
                                                  std::vector<std::pair<int32_t, int64_t>> offsets,
                                                  const std::string& group = "g") {
    protocol::txn_offset_commit_request req;
    req.transactional_id = "tx";
    req.group_id = group;
    req.producer_id = producer_id;
    req.producer_epoch = epoch;
    req.topics.push_back({});
    req.topics[0].name = "t";
    for (auto [p, o] : offsets) {
      protocol::txn_offset_commit_request::txn_offset_commit_request_partition part;
      part.partition_index = p;
      part.committed_offset = o;
      part.committed_metadata = "m" + std::to_string(o);
      req.topics[0].partitions.push_back(part);
    }
    req.topics.push_back({});
    req.topics[1].name = "nope";
    req.topics[1].partitions.push_back({});
    auto rc = std::make_shared<request_context>(context(28, version));
    auto r = std::make_shared<protocol::txn_offset_commit_request>(std::move(req));
    return call<protocol::txn_offset_commit_response>(
        [this, rc, r]() { return handlers::txn_offset_commit(*node_.services, *rc, *r); });
  }
  /// OffsetFetch v7 of t-0 and t-1 for "g": (offset, error) per partition.
  std::vector<std::pair<int64_t, error_code>> fetch(bool require_stable) {
    protocol::offset_fetch_request req;
    req.group_id = "g";
    req.topics = std::vector<protocol::offset_fetch_request::offset_fetch_request_topic>{{"t", {0, 1}, {}}};
    req.require_stable = require_stable;
    auto rc = std::make_shared<request_context>(context(9, 7));
    auto r = std::make_shared<protocol::offset_fetch_request>(std::move(req));
    auto resp = call<protocol::offset_fetch_response>(
        [this, rc, r]() { return handlers::offset_fetch(*node_.services, *rc, *r); });
    std::vector<std::pair<int64_t, error_code>> out;
    EXPECT_EQ(resp.error_code, error_code::none);
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions) out.emplace_back(p.committed_offset, p.error_code);
    return out;
  }
  std::shared_ptr<partition> offsets_partition() { return node_.topics->find("__consumer_offsets")->partitions.at(0); }
  void marker(int64_t producer_id, int16_t epoch, bool commit) {
    ASSERT_TRUE(offsets_partition()->append_marker(producer_id, epoch, {commit, 0}).ok());
    node_.groups->on_txn_marker(0, producer_id, commit);
    drain();
  }

  manual_clock clock_;
  asio::io_context io_;
  testing::single_node node_;
  asio::strand<asio::io_context::executor_type> strand_{asio::make_strand(io_)};
  session session_;
};

using offsets = std::vector<std::pair<int64_t, error_code>>;

TEST_F(TxnOffsetCommitTest, PendingUntilTheCommitMarkerAndTheSameAfterAReload) {
  // No __consumer_offsets yet: NOT_COORDINATOR (FindCoordinator creates it).
  auto before = txn_commit(3, 77, 0, {{0, 1}});
  EXPECT_EQ(before.topics.at(0).partitions.at(0).error_code, error_code::not_coordinator);
  EXPECT_EQ(before.topics.at(1).partitions.at(0).error_code, error_code::unknown_topic_or_partition);
  ASSERT_TRUE(node_.groups->ensure_topic().ok());
  drain();

  auto r = txn_commit(3, 77, 0, {{0, 10}, {1, 11}});
  ASSERT_EQ(r.topics.size(), 2u);
  EXPECT_EQ(r.topics[0].partitions.at(0).error_code, error_code::none);
  EXPECT_EQ(r.topics[0].partitions.at(1).error_code, error_code::none);
  EXPECT_EQ(r.topics[1].name, "nope");
  EXPECT_EQ(r.topics[1].partitions.at(0).error_code, error_code::unknown_topic_or_partition);

  // The batch in __consumer_offsets: transactional, producer 77 epoch 0, two records.
  auto p = offsets_partition();
  auto read = p->read_for_follower(0, 1 << 20, true);
  ASSERT_TRUE(read.ok());
  std::vector<uint8_t> buf(static_cast<size_t>(read->region.size));
  ASSERT_EQ(::pread(read->region.file->fd(), buf.data(), buf.size(), read->region.position),
            static_cast<ssize_t>(buf.size()));
  auto h = storage::parse_record_batch_header(buf);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->is_transactional());
  EXPECT_EQ(h->producer_id, 77);
  EXPECT_EQ(h->producer_epoch, 0);
  EXPECT_EQ(h->records_count, 2);
  EXPECT_EQ(p->last_stable_offset(), 0) << "the open transaction holds the LSO of __consumer_offsets";

  EXPECT_EQ(fetch(false), (offsets{{-1, error_code::none}, {-1, error_code::none}}));
  EXPECT_EQ(fetch(true), (offsets{{-1, error_code::unstable_offset_commit}, {-1, error_code::unstable_offset_commit}}));

  marker(77, 0, true);
  EXPECT_EQ(fetch(true), (offsets{{10, error_code::none}, {11, error_code::none}}));

  // The next transaction of the producer (epoch 1) is aborted; another one stays open.
  EXPECT_EQ(txn_commit(3, 77, 1, {{0, 20}}).topics[0].partitions[0].error_code, error_code::none);
  marker(77, 1, false);
  EXPECT_EQ(txn_commit(3, 88, 0, {{1, 31}}).topics[0].partitions[0].error_code, error_code::none);
  EXPECT_EQ(fetch(true), (offsets{{10, error_code::none}, {-1, error_code::unstable_offset_commit}}));
  // A fenced epoch is refused by the log: INVALID_PRODUCER_EPOCH, nothing pending.
  EXPECT_EQ(txn_commit(2, 77, 0, {{0, 40}}).topics[0].partitions[0].error_code, error_code::invalid_producer_epoch);
  EXPECT_EQ(fetch(false), (offsets{{10, error_code::none}, {11, error_code::none}}));

  // A group service rebuilt from the log (a restart) holds the same committed and pending offsets.
  group_service fresh(*node_.config, *node_.topics, clock_);
  fresh.start();
  drain();
  auto s = fresh.shard_for("g");
  ASSERT_NE(s, nullptr);
  auto loaded = call<groups::offset_fetch_result>([&fresh, s]() {
    return group_run(fresh, s, [](groups::group_coordinator& c) {
      return c.offset_fetch("g", std::vector<groups::topic_partition>{{"t", 0}, {"t", 1}}, true);
    });
  });
  ASSERT_EQ(loaded.partitions.size(), 2u);
  EXPECT_EQ(loaded.partitions[0].offset, 10);
  EXPECT_EQ(loaded.partitions[0].metadata, "m10");
  EXPECT_EQ(loaded.partitions[0].error, groups::group_error::none);
  EXPECT_EQ(loaded.partitions[1].error, groups::group_error::unstable_offset_commit) << "producer 88 is open";
  // Its open transaction commits there too.
  ASSERT_TRUE(p->append_marker(88, 0, {true, 0}).ok());
  fresh.on_txn_marker(0, 88, true);
  drain();
  auto after = call<groups::offset_fetch_result>([&fresh, s]() {
    return group_run(fresh, s, [](groups::group_coordinator& c) {
      return c.offset_fetch("g", std::vector<groups::topic_partition>{{"t", 1}}, true);
    });
  });
  EXPECT_EQ(after.partitions.at(0).offset, 31);
  EXPECT_EQ(after.partitions.at(0).error, groups::group_error::none);
}

TEST_F(TxnOffsetCommitTest, GroupChecksOfKafka4) {
  ASSERT_TRUE(node_.groups->ensure_topic().ok());
  drain();
  EXPECT_EQ(txn_commit(3, 5, 0, {{0, 1}}, "").topics[0].partitions[0].error_code, error_code::invalid_group_id);
  protocol::txn_offset_commit_request req;
  req.transactional_id = "tx";
  req.group_id = "unknown";
  req.producer_id = 5;
  req.generation_id = 4;
  req.member_id = "m";
  req.topics.push_back({"t", {{0, 1, -1, std::nullopt, {}}}, {}});
  auto rc = std::make_shared<request_context>(context(28, 3));
  auto r = std::make_shared<protocol::txn_offset_commit_request>(req);
  auto resp = call<protocol::txn_offset_commit_response>(
      [this, rc, r]() { return handlers::txn_offset_commit(*node_.services, *rc, *r); });
  EXPECT_EQ(resp.topics.at(0).partitions.at(0).error_code, error_code::illegal_generation);
  // v2 carries no generation: the same fields are ignored and the commit creates a simple group.
  auto rc2 = std::make_shared<request_context>(context(28, 2));
  auto resp2 = call<protocol::txn_offset_commit_response>(
      [this, rc2, r]() { return handlers::txn_offset_commit(*node_.services, *rc2, *r); });
  EXPECT_EQ(resp2.topics.at(0).partitions.at(0).error_code, error_code::none);
}

}  // namespace
}  // namespace sluice::broker
