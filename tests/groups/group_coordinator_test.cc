// Membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, timers, static membership, errors.
#include "tests/groups/test_support.h"

namespace sluice::groups::test {
namespace {

using ge = group_error;

TEST_F(coordinator_test, single_member_join_sync_heartbeat_leave) {
  auto first = join(jreq(""));
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->error, ge::member_id_required);
  EXPECT_EQ((*first)->member_id, "client-uuid1");
  EXPECT_EQ((*first)->generation_id, -1);
  // The join created the group: Kafka commits it at once with an empty metadata record (generation 0).
  ASSERT_EQ(log.records().size(), 1u);
  EXPECT_EQ(log.records()[0].key, encode_key(group_metadata_key{"g"}));
  auto created = decode_group_metadata_value(*log.records()[0].value);
  ASSERT_TRUE(created);
  EXPECT_EQ(created->generation, 0);
  EXPECT_EQ(created->protocol_type, "");
  EXPECT_FALSE(created->protocol.has_value());
  EXPECT_FALSE(created->leader.has_value());
  EXPECT_TRUE(created->members.empty());

  auto j = join(jreq("client-uuid1"));
  EXPECT_FALSE(j->has_value()) << "an Empty group waits for the initial delay";
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  gc->on_timer();
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ge::none);
  EXPECT_EQ((*j)->generation_id, 1);
  EXPECT_EQ((*j)->leader, "client-uuid1");
  EXPECT_EQ((*j)->protocol_name, "range");
  EXPECT_EQ((*j)->protocol_type, "consumer");
  ASSERT_EQ((*j)->members.size(), 1u);
  EXPECT_EQ((*j)->members[0].metadata, subscription({"t"}));
  EXPECT_EQ(state(), group_state::completing_rebalance);

  auto s = sync("client-uuid1", 1, {{"client-uuid1", b("assign")}});
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->error, ge::none);
  EXPECT_EQ((*s)->assignment, b("assign"));
  EXPECT_EQ((*s)->protocol_name, "range");
  EXPECT_EQ(state(), group_state::stable);
  ASSERT_EQ(log.records().size(), 2u);
  EXPECT_EQ(log.records()[1].key, encode_key(group_metadata_key{"g"}));
  EXPECT_EQ(decode_group_metadata_value(*log.records()[1].value)->generation, 1);

  EXPECT_EQ(heartbeat("client-uuid1", 1), ge::none);

  auto left = gc->leave_group("g", {{"client-uuid1", std::nullopt, ""}});
  EXPECT_EQ(left.error, ge::none);
  ASSERT_EQ(left.members.size(), 1u);
  EXPECT_EQ(left.members[0].error, ge::none);
  EXPECT_EQ(state(), group_state::empty);
  EXPECT_EQ(gc->find_group("g")->generation_id, 2);
  EXPECT_EQ(heartbeat("client-uuid1", 2), ge::unknown_member_id);
  // The Empty generation is persisted too.
  ASSERT_EQ(log.records().size(), 3u);
  auto v = decode_group_metadata_value(*log.records()[2].value);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->generation, 2);
  EXPECT_TRUE(v->members.empty());
  EXPECT_FALSE(v->protocol.has_value());
}

TEST_F(coordinator_test, three_members_leader_gets_members_and_each_gets_its_assignment) {
  auto ja = join_new();
  auto jb = join_new();
  auto jc = join_new();
  gc->on_timer();
  ASSERT_TRUE(ja->has_value() && jb->has_value() && jc->has_value());
  std::string a = (*ja)->member_id, bm = (*jb)->member_id, c = (*jc)->member_id;
  for (auto* j : {&ja, &jb, &jc}) {
    EXPECT_EQ((**j)->error, ge::none);
    EXPECT_EQ((**j)->generation_id, 1);
    EXPECT_EQ((**j)->leader, a) << "the first joiner leads";
  }
  ASSERT_EQ((*ja)->members.size(), 3u);
  EXPECT_EQ((*ja)->members[1].member_id, bm);
  EXPECT_TRUE((*jb)->members.empty());
  EXPECT_TRUE((*jc)->members.empty());

  auto sb = sync(bm, 1);
  auto sc = sync(c, 1);
  EXPECT_FALSE(sb->has_value()) << "followers wait for the leader";
  EXPECT_FALSE(sc->has_value());
  // The leader assigns a and b only: c gets empty bytes.
  auto sa = sync(a, 1, {{a, b("for-a")}, {bm, b("for-b")}, {"stranger", b("x")}});
  ASSERT_TRUE(sa->has_value() && sb->has_value() && sc->has_value());
  EXPECT_EQ((*sa)->assignment, b("for-a"));
  EXPECT_EQ((*sb)->assignment, b("for-b"));
  EXPECT_EQ((*sc)->error, ge::none);
  EXPECT_TRUE((*sc)->assignment.empty());
  EXPECT_EQ(state(), group_state::stable);

  // A follower syncing again in Stable gets its stored assignment.
  auto again = sync(bm, 1);
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->assignment, b("for-b"));

  // A follower leaves: the others rebalance without it.
  auto left = gc->leave_group("g", {{bm, std::nullopt, ""}});
  EXPECT_EQ(left.members[0].error, ge::none);
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  EXPECT_EQ(heartbeat(a, 1), ge::rebalance_in_progress);
  auto ja2 = join(jreq(a));
  EXPECT_FALSE(ja2->has_value());
  auto jc2 = join(jreq(c));
  ASSERT_TRUE(ja2->has_value() && jc2->has_value()) << "completes once every member rejoined";
  EXPECT_EQ((*ja2)->generation_id, 2);
  EXPECT_EQ((*ja2)->members.size(), 2u);
  EXPECT_EQ((*jc2)->leader, a);
}

TEST_F(coordinator_test, protocol_selection_votes_among_protocols_all_members_support) {
  auto r1 = jreq("");
  r1.protocols = {{"p1", {}}, {"p2", {}}, {"p3", {}}};
  r1.require_known_member_id = false;
  auto j1 = join(r1);
  auto r2 = jreq("");
  r2.protocols = {{"p3", {}}, {"p2", {}}};
  r2.require_known_member_id = false;
  auto j2 = join(r2);
  auto r3 = jreq("");
  r3.protocols = {{"p3", {}}, {"p1", {}}, {"p2", {}}};
  r3.require_known_member_id = false;
  auto j3 = join(r3);
  gc->on_timer();
  ASSERT_TRUE(j1->has_value());
  // Candidates p2, p3; votes: m1 -> p2, m2 -> p3, m3 -> p3.
  EXPECT_EQ((*j1)->protocol_name, "p3");

  // A newcomer with no common protocol is refused.
  auto r4 = jreq("");
  r4.protocols = {{"p1", {}}};
  auto j4 = join(r4);
  ASSERT_TRUE(j4->has_value());
  EXPECT_EQ((*j4)->error, ge::inconsistent_group_protocol);
  auto r5 = jreq("");
  r5.protocol_type = "connect";
  auto j5 = join(r5);
  EXPECT_EQ((*j5)->error, ge::inconsistent_group_protocol);
}

TEST_F(coordinator_test, join_errors) {
  auto r = jreq("");
  r.session_timeout_ms = 5999;
  EXPECT_EQ((*join(r))->error, ge::invalid_session_timeout);
  r.session_timeout_ms = 1800001;
  EXPECT_EQ((*join(r))->error, ge::invalid_session_timeout);
  EXPECT_EQ((*join(jreq("", "")))->error, ge::invalid_group_id);
  EXPECT_EQ((*join(jreq("ghost-1", "nogroup")))->error, ge::unknown_member_id);
  EXPECT_EQ(gc->find_group("nogroup"), nullptr) << "a known member id does not create a group";
  auto empty_type = jreq("");
  empty_type.protocol_type = "";
  EXPECT_EQ((*join(empty_type))->error, ge::inconsistent_group_protocol);

  std::string a = single_stable_member();
  EXPECT_EQ((*join(jreq("ghost-1")))->error, ge::unknown_member_id);
  EXPECT_EQ(gc->find_group("g")->find(a)->member_id, a);
}

TEST_F(coordinator_test, not_coordinator_and_loading) {
  group_coordinator other(3, config, clock);
  auto s = std::make_shared<std::optional<join_group_result>>();
  other.join_group(jreq(""), [s](join_group_result r) { *s = r; });
  EXPECT_EQ((*s)->error, ge::not_coordinator) << "inactive";
  other.begin_loading();
  // "test-group" hashes to partition 12 of 50, "a" to 47.
  other.join_group(jreq("", "test-group"), [s](join_group_result r) { *s = r; });
  EXPECT_EQ((*s)->error, ge::not_coordinator);
  group_coordinator p12(12, config, clock);
  p12.begin_loading();
  p12.join_group(jreq("", "test-group"), [s](join_group_result r) { *s = r; });
  EXPECT_EQ((*s)->error, ge::coordinator_load_in_progress);
  EXPECT_EQ(p12.heartbeat({"test-group", 1, "m", std::nullopt}), ge::none) << "answered blindly while loading";
  auto sy = std::make_shared<std::optional<sync_group_result>>();
  p12.sync_group({"test-group", 1, "m", {}, {}, {}, {}}, [sy](sync_group_result r) { *sy = r; });
  EXPECT_EQ((*sy)->error, ge::rebalance_in_progress);
  EXPECT_EQ(p12.list_groups().error, ge::coordinator_load_in_progress);
  p12.finish_loading();
  p12.join_group(jreq("", "test-group"), [s](join_group_result r) { *s = r; });
  EXPECT_EQ((*s)->error, ge::member_id_required);
}

TEST_F(coordinator_test, group_max_size) {
  config.max_size = 1;
  make();
  single_stable_member();
  auto j = join(jreq(""));
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ge::group_max_size_reached);
}

TEST_F(coordinator_test, sync_errors) {
  EXPECT_EQ((*sync("m", 1, {}, "nogroup"))->error, ge::unknown_member_id);
  EXPECT_EQ((*sync("m", 1, {}, ""))->error, ge::invalid_group_id);
  std::string a = single_stable_member();
  EXPECT_EQ((*sync("ghost", 1))->error, ge::unknown_member_id);
  EXPECT_EQ((*sync(a, 7))->error, ge::illegal_generation);

  sync_group_request r{"g", 1, a, std::nullopt, std::string("consumer"), std::string("roundrobin"), {}};
  auto s = std::make_shared<std::optional<sync_group_result>>();
  gc->sync_group(r, [s](sync_group_result res) { *s = res; });
  EXPECT_EQ((*s)->error, ge::inconsistent_group_protocol);
  r.protocol_name = "range";
  r.protocol_type = "connect";
  gc->sync_group(r, [s](sync_group_result res) { *s = res; });
  EXPECT_EQ((*s)->error, ge::inconsistent_group_protocol);
  r.protocol_type = "consumer";
  gc->sync_group(r, [s](sync_group_result res) { *s = res; });
  EXPECT_EQ((*s)->error, ge::none);
  EXPECT_EQ((*s)->assignment, b("A"));

  // During PreparingRebalance.
  auto jb = join_new();
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  EXPECT_EQ((*sync(a, 1))->error, ge::rebalance_in_progress);
  EXPECT_EQ(heartbeat(a, 1), ge::rebalance_in_progress);
}

TEST_F(coordinator_test, heartbeat_errors) {
  EXPECT_EQ(heartbeat("m", 1, "nogroup"), ge::unknown_member_id);
  EXPECT_EQ(heartbeat("m", 1, ""), ge::invalid_group_id);
  std::string a = single_stable_member();
  EXPECT_EQ(heartbeat("ghost", 1), ge::unknown_member_id);
  EXPECT_EQ(heartbeat(a, 0), ge::illegal_generation);
  EXPECT_EQ(heartbeat(a, 1), ge::none);
}

TEST_F(coordinator_test, session_expiry_removes_member_and_rebalances) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  sync(bm, 1);
  sync(a, 1, {{a, b("1")}, {bm, b("2")}});
  ASSERT_EQ(state(), group_state::stable);

  // a heartbeats, b goes silent; session timeout is 10 s.
  for (int i = 0; i < 3; ++i) {
    advance(4000);
    if (state() == group_state::stable) {
      EXPECT_EQ(heartbeat(a, 1), ge::none);
    }
  }
  EXPECT_EQ(gc->find_group("g")->find(bm), nullptr);
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  EXPECT_EQ(heartbeat(a, 1), ge::rebalance_in_progress);
  auto ja2 = join(jreq(a));
  ASSERT_TRUE(ja2->has_value());
  EXPECT_EQ((*ja2)->generation_id, 2);
  EXPECT_EQ((*ja2)->members.size(), 1u);
}

TEST_F(coordinator_test, rebalance_timeout_drops_member_that_did_not_rejoin) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  sync(bm, 1);
  sync(a, 1, {});
  // The leader rejoins: that forces a rebalance.
  auto ja2 = join(jreq(a));
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  // b keeps its session alive by heartbeating but never rejoins.
  for (int t = 0; t < 30000; t += 5000) {
    advance(5000);
    if (!ja2->has_value()) {
      EXPECT_EQ(heartbeat(bm, 1), ge::rebalance_in_progress);
    }
  }
  ASSERT_TRUE(ja2->has_value()) << "the join phase ends after the rebalance timeout (30 s)";
  EXPECT_EQ((*ja2)->generation_id, 2);
  ASSERT_EQ((*ja2)->members.size(), 1u);
  EXPECT_EQ(gc->find_group("g")->find(bm), nullptr);
  EXPECT_EQ(heartbeat(bm, 2), ge::unknown_member_id);
}

TEST_F(coordinator_test, leader_that_does_not_rejoin_is_replaced) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  sync(bm, 1);
  sync(a, 1, {});
  // b's metadata changes: it rejoins, a does not.
  auto r = jreq(bm);
  r.protocols = {{"range", subscription({"t", "u"})}};
  auto jb2 = join(r);
  advance(30000);
  ASSERT_TRUE(jb2->has_value());
  EXPECT_EQ((*jb2)->leader, bm);
  EXPECT_EQ((*jb2)->members.size(), 1u);
}

TEST_F(coordinator_test, initial_rebalance_delay_extends_while_members_arrive) {
  config.initial_rebalance_delay_ms = 3000;
  make();
  auto ja = join_new();
  EXPECT_EQ(gc->next_deadline(), clock.monotonic_ms() + 3000);
  advance(2000);
  auto jb = join_new();
  advance(1000);
  EXPECT_FALSE(ja->has_value()) << "a member arrived during the delay: extend by another 3 s";
  advance(2999);
  EXPECT_FALSE(ja->has_value());
  advance(1);
  ASSERT_TRUE(ja->has_value() && jb->has_value());
  EXPECT_EQ((*ja)->members.size(), 2u);
  EXPECT_EQ((*ja)->generation_id, 1);
}

TEST_F(coordinator_test, initial_rebalance_delay_is_bounded_by_the_rebalance_timeout) {
  config.initial_rebalance_delay_ms = 3000;
  make();
  auto first = jreq("");
  first.rebalance_timeout_ms = 7000;
  first.require_known_member_id = false;
  auto ja = join(first);
  // New members keep arriving every second.
  int64_t waited = 0;
  while (!ja->has_value() && waited < 20000) {
    auto r = jreq("");
    r.require_known_member_id = false;
    r.rebalance_timeout_ms = 7000;
    join(r);
    advance(1000);
    waited += 1000;
  }
  ASSERT_TRUE(ja->has_value());
  EXPECT_LE(waited, 7000) << "delays stop at the rebalance timeout";
  EXPECT_GE(waited, 6000);
}

TEST_F(coordinator_test, member_id_required_pending_member_expires) {
  auto first = join(jreq(""));
  std::string id = (*first)->member_id;
  advance(10001);
  auto late = join(jreq(id));
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ((*late)->error, ge::unknown_member_id) << "pending member forgotten after the session timeout";
}

TEST_F(coordinator_test, pending_member_holds_the_join_phase_until_it_rejoins_or_leaves) {
  std::string a = single_stable_member();
  auto pending = join(jreq(""));
  EXPECT_EQ((*pending)->error, ge::member_id_required);
  EXPECT_EQ(state(), group_state::stable) << "a pending member does not rebalance";
  auto ja = join(jreq(a));  // leader rejoins: rebalance
  EXPECT_FALSE(ja->has_value()) << "waits for the pending member";
  auto left = gc->leave_group("g", {{(*pending)->member_id, std::nullopt, ""}});
  EXPECT_EQ(left.members[0].error, ge::none);
  ASSERT_TRUE(ja->has_value());
  EXPECT_EQ((*ja)->generation_id, 2);
}

TEST_F(coordinator_test, unsynced_members_are_removed_after_the_rebalance_timeout) {
  auto mk = [&] {
    auto r = jreq("");
    r.require_known_member_id = false;
    r.rebalance_timeout_ms = 5000;
    return join(r);
  };
  auto ja = mk();
  auto jb = mk();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  auto sa = sync(a, 1, {{a, b("x")}});
  ASSERT_TRUE(sa->has_value());
  EXPECT_EQ(state(), group_state::stable);
  // b never syncs; the sync deadline (rebalance timeout, 5 s) comes before its session (10 s) ends.
  advance(5000);
  EXPECT_EQ(gc->find_group("g")->find(bm), nullptr);
  EXPECT_EQ(state(), group_state::preparing_rebalance);
}

TEST_F(coordinator_test, rejoin_during_completing_rebalance_with_same_metadata_repeats_answer) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  auto again = join(jreq(a));
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->generation_id, 1);
  EXPECT_EQ((*again)->members.size(), 2u);
  EXPECT_EQ(state(), group_state::completing_rebalance);
  // Follower waiting in SyncGroup is told to rejoin when a member changes its metadata.
  auto sb = sync(bm, 1);
  auto r = jreq(a);
  r.protocols = {{"range", subscription({"other"})}};
  join(r);
  ASSERT_TRUE(sb->has_value());
  EXPECT_EQ((*sb)->error, ge::rebalance_in_progress);
}

TEST_F(coordinator_test, follower_rejoin_in_stable_group_returns_current_generation) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  sync(bm, 1);
  sync(a, 1, {});
  auto again = join(jreq(bm));
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->generation_id, 1);
  EXPECT_TRUE((*again)->members.empty());
  EXPECT_EQ(state(), group_state::stable);
}

TEST_F(coordinator_test, static_member_restart_without_rebalance_and_fencing) {
  auto r1 = jreq("", "g", std::string("instance-1"));
  auto r2 = jreq("", "g", std::string("instance-2"));
  auto j1 = join(r1);
  auto j2 = join(r2);
  gc->on_timer();
  ASSERT_TRUE(j1->has_value() && j2->has_value());
  EXPECT_EQ((*j1)->error, ge::none) << "static members skip MEMBER_ID_REQUIRED";
  std::string m1 = (*j1)->member_id, m2 = (*j2)->member_id;
  EXPECT_EQ(m1.rfind("instance-1-", 0), 0u);
  sync(m2, 1, {}, "g", std::string("instance-2"));
  sync(m1, 1, {{m1, b("p0")}, {m2, b("p1")}}, "g", std::string("instance-1"));
  ASSERT_EQ(state(), group_state::stable);
  size_t records_before = log.records().size();

  // instance-2 restarts: unknown member id, known instance id.
  auto restart = join(jreq("", "g", std::string("instance-2")));
  ASSERT_TRUE(restart->has_value());
  EXPECT_EQ((*restart)->error, ge::none);
  std::string m2b = (*restart)->member_id;
  EXPECT_NE(m2b, m2);
  EXPECT_EQ((*restart)->generation_id, 1) << "no rebalance";
  EXPECT_EQ((*restart)->leader, m1);
  EXPECT_TRUE((*restart)->members.empty());
  EXPECT_EQ(state(), group_state::stable);
  EXPECT_EQ(log.records().size(), records_before + 1) << "new member id persisted";
  auto s = sync(m2b, 1, {}, "g", std::string("instance-2"));
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->assignment, b("p1"));

  // The old incarnation is fenced everywhere.
  EXPECT_EQ(heartbeat(m2, 1, "g", std::string("instance-2")), ge::fenced_instance_id);
  EXPECT_EQ((*join(jreq(m2, "g", std::string("instance-2"))))->error, ge::fenced_instance_id);
  EXPECT_EQ((*sync(m2, 1, {}, "g", std::string("instance-2")))->error, ge::fenced_instance_id);
  offset_commit_request c{"g", 1, m2, std::string("instance-2"), -1, {{{"t", 0}, 5, -1, std::nullopt, -1}}};
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::fenced_instance_id);
  auto left = gc->leave_group("g", {{m2, std::string("instance-2"), ""}});
  EXPECT_EQ(left.members[0].error, ge::fenced_instance_id);
  EXPECT_EQ(heartbeat(m2b, 1, "g", std::string("instance-2")), ge::none);

  // Static leader restarting with JoinGroup v9 learns it leads but skips the assignment.
  auto lr = jreq("", "g", std::string("instance-1"));
  lr.supports_skip_assignment = true;
  auto l = join(lr);
  ASSERT_TRUE(l->has_value());
  EXPECT_TRUE((*l)->skip_assignment);
  EXPECT_EQ((*l)->leader, (*l)->member_id);
  EXPECT_EQ((*l)->members.size(), 2u);
  EXPECT_EQ(state(), group_state::stable);
}

TEST_F(coordinator_test, static_member_is_kept_through_a_rebalance_until_its_session_ends) {
  auto j1 = join(jreq("", "g", std::string("i1")));
  auto j2 = join(jreq("", "g", std::string("i2")));
  gc->on_timer();
  std::string m1 = (*j1)->member_id, m2 = (*j2)->member_id;
  sync(m2, 1);
  sync(m1, 1, {});
  auto rj = join(jreq(m1, "g", std::string("i1")));  // leader rejoins
  advance(30000);                                     // i2 never rejoins (session 10 s expires first)
  ASSERT_TRUE(rj->has_value());
  EXPECT_EQ((*rj)->members.size(), 1u);
}

TEST_F(coordinator_test, leave_group_batch_by_instance_id) {
  auto j1 = join(jreq("", "g", std::string("i1")));
  auto j2 = join_new();
  gc->on_timer();
  std::string m1 = (*j1)->member_id, m2 = (*j2)->member_id;
  auto out = gc->leave_group("g", {{"", std::string("i1"), "bye"},
                                   {"", std::string("unknown-instance"), ""},
                                   {"ghost", std::nullopt, ""},
                                   {m2, std::nullopt, ""}});
  ASSERT_EQ(out.members.size(), 4u);
  EXPECT_EQ(out.members[0].error, ge::none);
  EXPECT_EQ(out.members[1].error, ge::unknown_member_id);
  EXPECT_EQ(out.members[2].error, ge::unknown_member_id);
  EXPECT_EQ(out.members[3].error, ge::none);
  EXPECT_EQ(state(), group_state::empty) << "nobody left to wait for";

  auto unknown = gc->leave_group("nogroup", {{"x", std::nullopt, ""}});
  EXPECT_EQ(unknown.error, ge::none);
  EXPECT_EQ(unknown.members[0].error, ge::unknown_member_id);
  EXPECT_EQ(gc->leave_group("", {{"x", std::nullopt, ""}}).error, ge::invalid_group_id);
}

TEST_F(coordinator_test, leader_sync_answers_only_after_the_append) {
  auto ja = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id;
  log.hold = true;
  auto s = sync(a, 1, {{a, b("x")}});
  EXPECT_FALSE(s->has_value());
  EXPECT_EQ(state(), group_state::completing_rebalance);
  log.complete(group_error::not_leader_or_follower);
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->error, ge::not_coordinator);
  EXPECT_EQ(state(), group_state::preparing_rebalance) << "a failed store rebalances";
}

TEST_F(coordinator_test, new_member_waiting_in_join_times_out) {
  auto r = jreq("");
  r.require_known_member_id = false;
  r.rebalance_timeout_ms = 400000;
  auto ja = join(r);
  gc->on_timer();
  std::string a = (*ja)->member_id;
  sync(a, 1, {});
  auto jn = join(r);  // new member, no MEMBER_ID_REQUIRED round (v3)
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  // a stays alive but never rejoins; the join phase could last 400 s.
  for (int t = 0; t < 300000 && !jn->has_value(); t += 5000) {
    advance(5000);
    heartbeat(a, 1);
  }
  ASSERT_TRUE(jn->has_value());
  EXPECT_EQ((*jn)->error, ge::unknown_member_id) << "new member's join times out after 5 min";
  EXPECT_EQ(gc->find_group("g")->size(), 1u);
}

TEST_F(coordinator_test, unload_answers_waiting_calls_not_coordinator) {
  auto ja = join_new();
  gc->unload();
  ASSERT_TRUE(ja->has_value());
  EXPECT_EQ((*ja)->error, ge::not_coordinator);
  EXPECT_EQ(heartbeat("x", 1), ge::not_coordinator);
}

}  // namespace
}  // namespace sluice::groups::test
