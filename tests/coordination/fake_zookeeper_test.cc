// The fake ZooKeeper keeps ZooKeeper's semantics (the unit tests of zk_cluster rely on them).
#include "coordination/zk/fake_zookeeper.h"

#include <gtest/gtest.h>

namespace sluice::coordination::zk {
namespace {

TEST(fake_zookeeper, versions_errors_and_sequential_nodes) {
  fake_zookeeper zk;
  auto s = zk.connect(1000, 1000, nullptr).value;
  EXPECT_EQ(s->create("/a/b", "", create_mode::persistent).code, zk_code::no_node);
  EXPECT_TRUE(s->create("/a", "x", create_mode::persistent).ok());
  EXPECT_EQ(s->create("/a", "x", create_mode::persistent).code, zk_code::node_exists);
  auto g = s->get("/a", nullptr);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.value.data, "x");
  EXPECT_EQ(g.value.stat.version, 0);
  EXPECT_EQ(s->set("/a", "y", 1).code, zk_code::bad_version);
  EXPECT_EQ(s->set("/a", "y", 0).value.version, 1);
  EXPECT_TRUE(s->create("/a/c", "", create_mode::persistent).ok());
  EXPECT_EQ(s->remove("/a", -1), zk_code::not_empty);
  EXPECT_EQ(s->remove("/a/c", 3), zk_code::bad_version);
  EXPECT_EQ(s->remove("/a/c", 0), zk_code::ok);
  auto q1 = s->create("/a/q-", "", create_mode::persistent_sequential);
  auto q2 = s->create("/a/q-", "", create_mode::persistent_sequential);
  EXPECT_NE(q1.value, q2.value);
  EXPECT_EQ(q1.value.substr(0, 5), "/a/q-");
  // multi: all or nothing, the failing index reported.
  size_t failed = 99;
  EXPECT_EQ(s->multi({zk_op::create("/m", ""), zk_op::check("/a", 0)}, &failed), zk_code::bad_version);
  EXPECT_EQ(failed, 1u);
  EXPECT_FALSE(s->exists("/m", nullptr).value.has_value());
  EXPECT_EQ(s->multi({zk_op::create("/m", ""), zk_op::check("/a", 1)}), zk_code::ok);
  EXPECT_TRUE(s->exists("/m", nullptr).value.has_value());
}

TEST(fake_zookeeper, ephemerals_watches_and_expiry) {
  fake_zookeeper zk;
  std::vector<session_event> events;
  auto a = zk.connect(1000, 1000, [&](session_event e) { events.push_back(e); }).value;
  auto b = zk.connect(1000, 1000, nullptr).value;
  ASSERT_TRUE(a->create("/e", "", create_mode::ephemeral).ok());
  EXPECT_EQ(a->create("/e/child", "", create_mode::persistent).code, zk_code::no_children_for_ephemerals);
  EXPECT_EQ(zk.ephemeral_owner("/e"), a->session_id());

  std::vector<std::pair<watch_event, std::string>> seen;
  auto record = [&](watch_event ev, const std::string& p) { seen.emplace_back(ev, p); };
  ASSERT_TRUE(b->get("/e", record).ok());
  ASSERT_TRUE(b->get_children("/", record).ok());
  ASSERT_TRUE(b->exists("/later", record).ok());  // set on a missing node
  zk.expire(a->session_id());
  EXPECT_EQ(events, std::vector<session_event>{session_event::expired});
  EXPECT_EQ(a->get("/", nullptr).code, zk_code::session_expired);
  EXPECT_FALSE(b->exists("/e", nullptr).value.has_value());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(watch_event::deleted, std::string("/e")));
  EXPECT_EQ(seen[1], std::make_pair(watch_event::child, std::string("/")));
  // One-shot: a second change does not fire the same watch again.
  ASSERT_TRUE(b->create("/x", "", create_mode::persistent).ok());
  EXPECT_EQ(seen.size(), 2u);
  ASSERT_TRUE(b->create("/later", "", create_mode::persistent).ok());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2], std::make_pair(watch_event::created, std::string("/later")));
  b->close();
  EXPECT_EQ(b->get("/", nullptr).code, zk_code::closed);
  EXPECT_EQ(zk.live_sessions(), 0u);
}

}  // namespace
}  // namespace sluice::coordination::zk
