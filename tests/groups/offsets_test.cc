// Offsets (commit, fetch, retention), administration (describe, list, delete, offset delete) and replay.
#include "tests/groups/test_support.h"

namespace sluice::groups::test {
namespace {

using ge = group_error;

offset_commit_request simple_commit(const std::string& group, std::vector<offset_commit_partition> parts) {
  return offset_commit_request{group, -1, "", std::nullopt, -1, std::move(parts)};
}

TEST_F(coordinator_test, simple_consumer_commit_and_fetch) {
  auto c = commit(simple_commit("s", {{{"t", 0}, 42, 7, std::string("meta"), -1},
                                      {{"t", 1}, 43, -1, std::nullopt, -1}}));
  ASSERT_TRUE(c->has_value());
  ASSERT_EQ((*c)->partitions.size(), 2u);
  EXPECT_EQ((*c)->partitions[0].error, ge::none);
  EXPECT_EQ((*c)->partitions[1].error, ge::none);
  EXPECT_EQ(state("s"), group_state::empty);

  auto f = gc->offset_fetch("s", std::vector<topic_partition>{{"t", 0}, {"t", 1}, {"t", 9}, {"u", 0}});
  EXPECT_EQ(f.error, ge::none);
  ASSERT_EQ(f.partitions.size(), 4u);
  EXPECT_EQ(f.partitions[0].offset, 42);
  EXPECT_EQ(f.partitions[0].leader_epoch, 7);
  EXPECT_EQ(f.partitions[0].metadata, "meta");
  EXPECT_EQ(f.partitions[1].offset, 43);
  EXPECT_EQ(f.partitions[1].leader_epoch, -1);
  EXPECT_EQ(f.partitions[1].metadata, "");
  EXPECT_EQ(f.partitions[2].offset, -1);
  EXPECT_EQ(f.partitions[2].error, ge::none);
  EXPECT_EQ(f.partitions[3].offset, -1);

  auto all = gc->offset_fetch("s", std::nullopt);
  ASSERT_EQ(all.partitions.size(), 2u);
  EXPECT_EQ(all.partitions[1].tp, (topic_partition{"t", 1}));

  auto unknown = gc->offset_fetch("nobody", std::vector<topic_partition>{{"t", 0}});
  ASSERT_EQ(unknown.partitions.size(), 1u);
  EXPECT_EQ(unknown.partitions[0].offset, -1);
  EXPECT_TRUE(gc->offset_fetch("nobody", std::nullopt).partitions.empty());

  // The empty group id is accepted by the offset APIs (Kafka's compatibility rule).
  auto e = commit(simple_commit("", {{{"t", 0}, 1, -1, std::nullopt, -1}}));
  EXPECT_EQ((*e)->partitions[0].error, ge::none);
}

TEST_F(coordinator_test, commit_generation_and_member_checks) {
  // Unknown group with a generation: rejected, and no group created.
  auto c = commit(offset_commit_request{"g", 3, "m", std::nullopt, -1, {{{"t", 0}, 1, -1, std::nullopt, -1}}});
  EXPECT_EQ((*c)->partitions[0].error, ge::illegal_generation);
  EXPECT_EQ(gc->find_group("g"), nullptr);

  std::string a = single_stable_member();
  auto part = std::vector<offset_commit_partition>{{{"t", 0}, 5, -1, std::nullopt, -1}};
  EXPECT_EQ((*commit(simple_commit("g", part)))->partitions[0].error, ge::unknown_member_id)
      << "a group with members takes commits from members only";
  EXPECT_EQ((*commit({"g", 1, "ghost", std::nullopt, -1, part}))->partitions[0].error, ge::unknown_member_id);
  EXPECT_EQ((*commit({"g", 2, a, std::nullopt, -1, part}))->partitions[0].error, ge::illegal_generation);
  EXPECT_EQ((*commit({"g", 1, a, std::nullopt, -1, part}))->partitions[0].error, ge::none);
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.at(0).offset, 5);

  // PreparingRebalance still takes commits; CompletingRebalance does not.
  auto pending = join(jreq(""));
  auto jb = join(jreq((*pending)->member_id));
  EXPECT_EQ(state(), group_state::preparing_rebalance);
  EXPECT_EQ((*commit({"g", 1, a, std::nullopt, -1, part}))->partitions[0].error, ge::none);
  auto ja = join(jreq(a));
  EXPECT_EQ(state(), group_state::completing_rebalance);
  EXPECT_EQ((*commit({"g", 2, a, std::nullopt, -1, part}))->partitions[0].error, ge::rebalance_in_progress);

  // Once everybody left, the group is Empty and standalone commits are accepted again.
  gc->leave_group("g", {{a, std::nullopt, ""}, {(*jb)->member_id, std::nullopt, ""}});
  EXPECT_EQ(state(), group_state::empty);
  EXPECT_EQ((*commit(simple_commit("g", part)))->partitions[0].error, ge::none);
  EXPECT_EQ((*commit({"g", 3, a, std::nullopt, -1, part}))->partitions[0].error, ge::unknown_member_id);
}

// Kafka 4.x (ClassicGroup.validateOffsetCommit): generation -1 into an Empty or absent group is a commit of a
// consumer that does not use group management, whatever group instance id it names (issue: Sluice answered
// UNKNOWN_MEMBER_ID).
TEST_F(coordinator_test, simple_commit_with_a_group_instance_id) {
  auto part = std::vector<offset_commit_partition>{{{"t", 0}, 17, -1, std::nullopt, -1}};
  // No such group yet: accepted, an Empty group is created, OffsetFetch returns the offset.
  auto c = commit({"solo", -1, "", std::string("instance-1"), -1, part});
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->partitions[0].error, ge::none);
  EXPECT_EQ(state("solo"), group_state::empty);
  EXPECT_EQ(gc->offset_fetch("solo", std::nullopt).partitions.at(0).offset, 17);
  // The group exists and is Empty: accepted again, also with a member id it does not know.
  part[0].offset = 18;
  EXPECT_EQ((*commit({"solo", -1, "", std::string("instance-1"), -1, part}))->partitions[0].error, ge::none);
  part[0].offset = 19;
  EXPECT_EQ((*commit({"solo", -1, "stranger", std::string("instance-2"), -1, part}))->partitions[0].error,
            ge::none);
  EXPECT_EQ(gc->offset_fetch("solo", std::nullopt).partitions.at(0).offset, 19);
}

TEST_F(coordinator_test, simple_commit_into_a_live_group_keeps_kafkas_member_rules) {
  // A Stable group with a static member "inst": generation -1 naming that instance with another (empty) member
  // id is fenced; without an instance id it is a non-member (UNKNOWN_MEMBER_ID); an unknown instance too.
  auto j = join(jreq("", "g", std::string("inst")));
  gc->on_timer();
  ASSERT_TRUE(j->has_value());
  ASSERT_EQ((*j)->error, ge::none);
  std::string id = (*j)->member_id;
  ASSERT_TRUE(sync(id, (*j)->generation_id, {{id, b("A")}}, "g", std::string("inst"))->has_value());
  ASSERT_EQ(state(), group_state::stable);
  auto part = std::vector<offset_commit_partition>{{{"t", 0}, 5, -1, std::nullopt, -1}};
  EXPECT_EQ((*commit({"g", -1, "", std::string("inst"), -1, part}))->partitions[0].error, ge::fenced_instance_id);
  EXPECT_EQ((*commit({"g", -1, "", std::nullopt, -1, part}))->partitions[0].error, ge::unknown_member_id);
  EXPECT_EQ((*commit({"g", -1, "", std::string("other"), -1, part}))->partitions[0].error, ge::unknown_member_id);
  EXPECT_EQ((*commit({"g", 1, id, std::string("inst"), -1, part}))->partitions[0].error, ge::none);
}

TEST_F(coordinator_test, commit_with_a_generation_to_an_unknown_group_depends_on_the_version) {
  // Kafka 4.x: GROUP_ID_NOT_FOUND from OffsetCommit v9, ILLEGAL_GENERATION before; no group is created.
  auto part = std::vector<offset_commit_partition>{{{"t", 0}, 1, -1, std::nullopt, -1}};
  offset_commit_request r{"nope", 2, "m", std::nullopt, -1, part};
  r.api_version = 8;
  EXPECT_EQ((*commit(r))->partitions[0].error, ge::illegal_generation);
  r.api_version = 9;
  EXPECT_EQ((*commit(r))->partitions[0].error, ge::group_id_not_found);
  EXPECT_EQ(gc->find_group("nope"), nullptr);
}

TEST_F(coordinator_test, commit_answers_after_the_append_and_reports_its_failure) {
  log.hold = true;
  auto c = commit(simple_commit("s", {{{"t", 0}, 10, -1, std::nullopt, -1}}));
  EXPECT_FALSE(c->has_value());
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.size(), 0u) << "not visible before the append";
  auto stable = gc->offset_fetch("s", std::vector<topic_partition>{{"t", 0}}, true);
  EXPECT_EQ(stable.partitions[0].error, ge::unstable_offset_commit);
  log.complete();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.at(0).offset, 10);

  auto failed = commit(simple_commit("s", {{{"t", 0}, 11, -1, std::nullopt, -1}}));
  log.complete(group_error::not_leader_or_follower);
  EXPECT_EQ((*failed)->partitions[0].error, ge::not_coordinator);
  auto failed2 = commit(simple_commit("s", {{{"t", 0}, 12, -1, std::nullopt, -1}}));
  log.complete(group_error::not_enough_replicas);
  EXPECT_EQ((*failed2)->partitions[0].error, ge::coordinator_not_available);
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.at(0).offset, 10);
}

// Kafka's CoordinatorShard shape: the operation returns the records and the answer; the offset exists only
// once its record is replayed, and a coordinator fed the same records holds the same offset.
TEST_F(coordinator_test, offset_commit_returns_records_and_changes_state_only_by_replay) {
  auto result = gc.get().offset_commit(simple_commit("s", {{{"t", 0}, 10, 4, std::string("m"), 1000}}));
  ASSERT_EQ(result.records.size(), 1u);
  EXPECT_EQ(result.records[0].key, encode_key(offset_commit_key{"s", "t", 0}));
  auto value = decode_offset_commit_value(*result.records[0].value);
  ASSERT_TRUE(value);
  EXPECT_EQ(value->offset, 10);
  EXPECT_EQ(value->leader_epoch, 4);
  EXPECT_EQ(value->commit_timestamp, 1000);
  ASSERT_EQ(result.response.partitions.size(), 1u);
  EXPECT_EQ(result.response.partitions[0].error, ge::none);
  EXPECT_TRUE(gc->take_writes().empty()) << "a request's records come back in its result, not queued";
  EXPECT_TRUE(gc->offset_fetch("s", std::nullopt).partitions.empty()) << "returned, not applied";

  gc->replay(result.records[0].key, result.records[0].value);
  auto fetched = gc->offset_fetch("s", std::vector<topic_partition>{{"t", 0}}, true);
  EXPECT_EQ(fetched.partitions.at(0).offset, 10);
  EXPECT_EQ(fetched.partitions.at(0).error, ge::none) << "replayed: no longer pending";

  // A failed append: the answer maps the error, nothing is applied and nothing stays pending.
  auto second = gc.get().offset_commit(simple_commit("s", {{{"t", 0}, 11, -1, std::nullopt, -1}}));
  EXPECT_EQ(gc->offset_fetch("s", std::vector<topic_partition>{{"t", 0}}, true).partitions.at(0).error,
            ge::unstable_offset_commit);
  auto answer = second.failed(group_error::not_enough_replicas_after_append);
  EXPECT_EQ(answer.partitions.at(0).error, ge::coordinator_not_available);
  fetched = gc->offset_fetch("s", std::vector<topic_partition>{{"t", 0}}, true);
  EXPECT_EQ(fetched.partitions.at(0).error, ge::none);
  EXPECT_EQ(fetched.partitions.at(0).offset, 10);
}

TEST_F(coordinator_test, delete_groups_whose_tombstones_fail_are_empty_again) {
  commit(simple_commit("s", {{{"t", 0}, 5, -1, std::nullopt, -1}}));
  log.hold = true;
  auto held = delete_groups({"s"});
  EXPECT_FALSE(held->has_value());
  EXPECT_EQ(gc->describe_group("s").state, "Dead") << "deleted at once; leaves memory when replayed";
  log.complete(group_error::not_enough_replicas);
  ASSERT_TRUE(held->has_value());
  EXPECT_EQ((**held)[0].error, ge::coordinator_not_available);
  EXPECT_EQ(gc->describe_group("s").state, "Empty");
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.at(0).offset, 5);

  log.hold = false;
  auto again = delete_groups({"s"});
  EXPECT_EQ((**again)[0].error, ge::none);
  EXPECT_EQ(gc->find_group("s"), nullptr) << "its group tombstone was replayed";
  EXPECT_FALSE(log.records().back().value.has_value());
  EXPECT_EQ(log.records().back().key, encode_key(group_metadata_key{"s"}));
}

TEST_F(coordinator_test, commit_metadata_too_large) {
  config.offset_metadata_max_bytes = 4;
  make();
  auto c = commit(simple_commit("s", {{{"t", 0}, 1, -1, std::string("12345"), -1},
                                      {{"t", 1}, 2, -1, std::string("1234"), -1}}));
  EXPECT_EQ((*c)->partitions[0].error, ge::offset_metadata_too_large);
  EXPECT_EQ((*c)->partitions[1].error, ge::none);
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.size(), 1u);
}

TEST_F(coordinator_test, commit_records_use_kafka_schemas) {
  int64_t now = clock.now_ms();
  commit(simple_commit("s", {{{"t", 3}, 99, 4, std::string("m"), -1}}));
  ASSERT_EQ(log.records().size(), 1u);
  EXPECT_EQ(log.records()[0].key, encode_key(offset_commit_key{"s", "t", 3}));
  auto v = decode_offset_commit_value(*log.records()[0].value);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (offset_commit_value{99, 4, "m", now, std::nullopt}));
  EXPECT_EQ((*log.records()[0].value)[1], 4) << "OffsetCommitValue v4, as Kafka 4.4 writes";
}

TEST_F(coordinator_test, offsets_of_an_empty_group_expire_after_retention) {
  std::string a = single_stable_member();
  commit({"g", 1, a, std::nullopt, -1, {{{"t", 0}, 5, -1, std::nullopt, -1}}});
  clock.advance_ms(24LL * 3600 * 1000);
  gc->leave_group("g", {{a, std::nullopt, ""}});
  ASSERT_EQ(state(), group_state::empty);
  // Retention counts from when the group became Empty, not from the commit.
  advance(config.offsets_retention_ms - 3600 * 1000);
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.size(), 1u);
  size_t before = log.records().size();
  advance(3600 * 1000 + config.offsets_retention_check_interval_ms);
  EXPECT_TRUE(gc->offset_fetch("g", std::nullopt).partitions.empty());
  EXPECT_EQ(gc->find_group("g"), nullptr) << "Empty group without offsets is removed";
  ASSERT_EQ(log.records().size(), before + 2);
  EXPECT_EQ(log.records()[before].key, encode_key(offset_commit_key{"g", "t", 0}));
  EXPECT_FALSE(log.records()[before].value.has_value());
  EXPECT_EQ(log.records()[before + 1].key, encode_key(group_metadata_key{"g"}));
  EXPECT_FALSE(log.records()[before + 1].value.has_value());
}

TEST_F(coordinator_test, offsets_of_a_simple_group_expire_per_commit_time) {
  commit(simple_commit("s", {{{"t", 0}, 1, -1, std::nullopt, -1}}));
  clock.advance_ms(config.offsets_retention_ms / 2);
  commit(simple_commit("s", {{{"t", 1}, 1, -1, std::nullopt, -1}}));
  advance(config.offsets_retention_ms / 2 + config.offsets_retention_check_interval_ms);
  auto f = gc->offset_fetch("s", std::nullopt);
  ASSERT_EQ(f.partitions.size(), 1u);
  EXPECT_EQ(f.partitions[0].tp.partition, 1);
}

TEST_F(coordinator_test, offsets_of_a_stable_group_are_kept) {
  std::string a = single_stable_member();
  commit({"g", 1, a, std::nullopt, -1, {{{"t", 0}, 5, -1, std::nullopt, -1}}});
  for (int i = 0; i < 10; ++i) {
    clock.advance_ms(config.offsets_retention_ms / 8);
    EXPECT_EQ(heartbeat(a, 1), ge::none);
    gc->on_timer();
  }
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.size(), 1u) << "subscribed topic 't'";
}

TEST_F(coordinator_test, describe_and_list_groups) {
  auto ja = join_new();
  auto jb = join_new();
  gc->on_timer();
  std::string a = (*ja)->member_id, bm = (*jb)->member_id;
  auto d = gc->describe_group("g");
  EXPECT_EQ(d.state, "CompletingRebalance");
  EXPECT_EQ(d.protocol, "") << "protocol only shown for Stable groups";
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_TRUE(d.members[0].metadata.empty());
  sync(bm, 1);
  sync(a, 1, {{a, b("x")}, {bm, b("y")}});
  d = gc->describe_group("g");
  EXPECT_EQ(d.error, ge::none);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.protocol_type, "consumer");
  EXPECT_EQ(d.protocol, "range");
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_EQ(d.members[0].member_id, a);
  EXPECT_EQ(d.members[0].client_id, "client");
  EXPECT_EQ(d.members[0].client_host, "/127.0.0.1");
  EXPECT_EQ(d.members[0].metadata, subscription({"t"}));
  EXPECT_EQ(d.members[1].assignment, b("y"));

  auto dead = gc->describe_group("nothing");
  EXPECT_EQ(dead.error, ge::none);
  EXPECT_EQ(dead.state, "Dead");
  EXPECT_TRUE(dead.members.empty());

  commit(simple_commit("s", {{{"t", 0}, 1, -1, std::nullopt, -1}}));
  auto all = gc->list_groups();
  ASSERT_EQ(all.groups.size(), 2u);
  EXPECT_EQ(all.groups[0].group_id, "g");
  EXPECT_EQ(all.groups[0].protocol_type, "consumer");
  EXPECT_EQ(all.groups[0].state, "Stable");
  EXPECT_EQ(all.groups[1].protocol_type, "");
  auto stable = gc->list_groups({"stable"});
  ASSERT_EQ(stable.groups.size(), 1u);
  EXPECT_EQ(stable.groups[0].group_id, "g");
  EXPECT_EQ(gc->list_groups({"Empty"}).groups.size(), 1u);
  EXPECT_EQ(gc->list_groups({}, {"classic"}).groups.size(), 2u);
  EXPECT_EQ(gc->list_groups({}, {"consumer"}).groups.size(), 0u) << "KIP-848 group type";
}

TEST_F(coordinator_test, delete_groups) {
  std::string a = single_stable_member();
  commit(simple_commit("s", {{{"t", 0}, 1, -1, std::nullopt, -1}, {{"t", 1}, 1, -1, std::nullopt, -1}}));
  std::optional<std::vector<group_deletion_result>> out;
  out = *delete_groups({"g", "s", "nothing", ""});
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ((*out)[0].error, ge::non_empty_group);
  EXPECT_EQ((*out)[1].error, ge::none);
  EXPECT_EQ((*out)[2].error, ge::group_id_not_found);
  EXPECT_EQ((*out)[3].error, ge::group_id_not_found) << "\"\" is a valid (unknown) group id here";
  EXPECT_EQ(gc->find_group("s"), nullptr);
  EXPECT_TRUE(gc->offset_fetch("s", std::nullopt).partitions.empty());
  const auto& recs = log.records();
  ASSERT_GE(recs.size(), 2u);
  EXPECT_FALSE(recs.back().value.has_value());
  EXPECT_FALSE(recs[recs.size() - 2].value.has_value());
  EXPECT_EQ(gc->describe_group("s").state, "Dead");

  // Deletion waits for the tombstones' append.
  gc->leave_group("g", {{a, std::nullopt, ""}});
  log.hold = true;
  out.reset();
  auto held = delete_groups({"g"});
  EXPECT_FALSE(held->has_value());
  log.complete();
  ASSERT_TRUE(held->has_value());
  EXPECT_EQ((**held)[0].error, ge::none);
}

TEST_F(coordinator_test, offset_delete) {
  std::string a = single_stable_member();  // subscribed to "t"
  commit({"g", 1, a, std::nullopt, -1, {{{"t", 0}, 5, -1, std::nullopt, -1}, {{"old", 0}, 6, -1, std::nullopt, -1}}});
  std::optional<offset_delete_result> out;
  out = *offset_delete("g", {{"t", 0}, {"old", 0}});
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->error, ge::none);
  ASSERT_EQ(out->partitions.size(), 2u);
  EXPECT_EQ(out->partitions[0].error, ge::group_subscribed_to_topic);
  EXPECT_EQ(out->partitions[1].error, ge::none);
  auto f = gc->offset_fetch("g", std::nullopt);
  ASSERT_EQ(f.partitions.size(), 1u);
  EXPECT_EQ(f.partitions[0].tp.topic, "t");
  EXPECT_FALSE(log.records().back().value.has_value());

  out.reset();
  out = *offset_delete("nothing", {{"t", 0}});
  EXPECT_EQ(out->error, ge::group_id_not_found);
  EXPECT_TRUE(out->partitions.empty());

  gc->leave_group("g", {{a, std::nullopt, ""}});
  out.reset();
  out = *offset_delete("g", {{"t", 0}});
  EXPECT_EQ(out->partitions.at(0).error, ge::none) << "an Empty group has no subscription";
  EXPECT_TRUE(gc->offset_fetch("g", std::nullopt).partitions.empty());
  // Kafka 4.x keeps the Empty group without offsets (it goes at the next retention check): no group
  // tombstone, still described Empty, and a second OffsetDelete finds it.
  EXPECT_EQ(log.records().back().key, encode_key(offset_commit_key{"g", "t", 0}));
  EXPECT_EQ(gc->describe_group("g").state, "Empty");
  out = *offset_delete("g", {{"t", 0}});
  EXPECT_EQ(out->error, ge::none);
}

TEST_F(coordinator_test, offset_delete_non_consumer_group_with_members) {
  auto r = jreq("", "c");
  r.protocol_type = "connect";
  r.require_known_member_id = false;
  auto j = join(r);
  gc->on_timer();
  std::optional<offset_delete_result> out;
  out = *offset_delete("c", {{"t", 0}});
  EXPECT_EQ(out->error, ge::non_empty_group);
}

TEST_F(coordinator_test, replay_rebuilds_groups_and_offsets) {
  // Build some history: a stable group of two (one static), offsets, a deleted group, a deleted offset.
  auto j1 = join(jreq("", "g", std::string("inst")));
  auto j2 = join_new();
  gc->on_timer();
  std::string a = (*j1)->member_id, bm = (*j2)->member_id;
  sync(bm, 1);
  sync(a, 1, {{a, b("pa")}, {bm, b("pb")}});
  commit({"g", 1, a, std::nullopt, -1, {{{"t", 0}, 5, 2, std::string("x"), -1}, {{"u", 1}, 6, -1, std::nullopt, -1}}});
  commit({"g", 1, a, std::nullopt, -1, {{{"t", 0}, 7, 3, std::string("y"), -1}}});
  commit(simple_commit("gone", {{{"t", 0}, 1, -1, std::nullopt, -1}}));
  delete_groups({"gone"});
  offset_delete("g", {{"u", 1}});
  commit(simple_commit("s", {{{"t", 2}, 9, -1, std::nullopt, -1}}));
  auto before_g = gc->describe_group("g");
  auto before_offsets = gc->offset_fetch("g", std::nullopt);

  group_coordinator fresh(-1, config, clock);
  fresh.begin_loading();
  for (const auto& r : log.records()) fresh.replay(r.key, r.value);
  fresh.replay({0, 9, 1}, std::nullopt);  // an unknown key version is skipped
  fresh.finish_loading();

  auto after_g = fresh.describe_group("g");
  EXPECT_EQ(after_g.state, "Stable");
  EXPECT_EQ(after_g.protocol, before_g.protocol);
  ASSERT_EQ(after_g.members.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after_g.members[i].member_id, before_g.members[i].member_id);
    EXPECT_EQ(after_g.members[i].group_instance_id, before_g.members[i].group_instance_id);
    EXPECT_EQ(after_g.members[i].metadata, before_g.members[i].metadata);
    EXPECT_EQ(after_g.members[i].assignment, before_g.members[i].assignment);
  }
  EXPECT_EQ(fresh.find_group("g")->generation_id, 1);
  EXPECT_EQ(fresh.find_group("g")->leader_id, a);
  auto after_offsets = fresh.offset_fetch("g", std::nullopt);
  ASSERT_EQ(after_offsets.partitions.size(), before_offsets.partitions.size());
  ASSERT_EQ(after_offsets.partitions.size(), 1u);
  EXPECT_EQ(after_offsets.partitions[0].offset, 7);
  EXPECT_EQ(after_offsets.partitions[0].leader_epoch, 3);
  EXPECT_EQ(after_offsets.partitions[0].metadata, "y");
  EXPECT_EQ(fresh.find_group("gone"), nullptr);
  EXPECT_EQ(fresh.offset_fetch("s", std::nullopt).partitions.at(0).offset, 9);
  EXPECT_EQ(fresh.describe_group("s").state, "Empty");

  // Sessions restarted at load: heartbeats work in the same generation, and silence expires members.
  EXPECT_EQ(fresh.heartbeat({"g", 1, a, std::string("inst")}), ge::none);
  auto sa = std::make_shared<std::optional<sync_group_result>>();
  fresh.sync_group({"g", 1, bm, {}, {}, {}, {}}, [sa](sync_group_result r) { *sa = r; });
  EXPECT_EQ((*sa)->assignment, b("pb"));
  clock.advance_ms(6000);
  EXPECT_EQ(fresh.heartbeat({"g", 1, a, std::string("inst")}), ge::none);
  clock.advance_ms(4001);
  fresh.on_timer();
  EXPECT_EQ(fresh.find_group("g")->find(bm), nullptr) << "b's restarted session expired";
  EXPECT_EQ(fresh.find_group("g")->state, group_state::preparing_rebalance);
}

}  // namespace
}  // namespace sluice::groups::test
