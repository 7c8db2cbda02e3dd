// KIP-848 consumer groups: ConsumerGroupHeartbeat (join, reconciliation, leave, fencing, static members, regex
// subscriptions), deadlines, records and reloading, offsets with member epochs, classic <-> consumer conversion, and
// the uniform and range assignors.
#include <random>

#include "broker/groups/consumer_records.h"
#include "tests/groups/test_support.h"

namespace sluice::groups::test {
namespace {

using ge = group_error;

topic_uuid tid(uint8_t n) {
  topic_uuid id{};
  id[15] = n;
  return id;
}

class consumer_group_test : public coordinator_test {
 protected:
  void SetUp() override {
    coordinator_test::SetUp();
    topics["t"] = {"t", tid(1), 6};
    topics["t2"] = {"t2", tid(2), 2};
    topics["other"] = {"other", tid(3), 1};
    install_topics();
  }

  void install_topics() {
    topic_source s;
    s.by_name = [this](const std::string& n) -> std::optional<topic_metadata> {
      auto it = topics.find(n);
      if (it == topics.end()) return std::nullopt;
      return it->second;
    };
    s.by_id = [this](const topic_uuid& id) -> std::optional<topic_metadata> {
      for (const auto& [n, t] : topics)
        if (t.id == id) return t;
      return std::nullopt;
    };
    s.all = [this] {
      std::vector<topic_metadata> out;
      for (const auto& [n, t] : topics) out.push_back(t);
      return out;
    };
    gc.get().set_topic_source(std::move(s));
  }

  consumer_heartbeat_request join_req(const std::string& member, std::vector<std::string> topics_ = {"t"},
                                      std::optional<std::string> instance = std::nullopt) {
    consumer_heartbeat_request r;
    r.group_id = "g";
    r.member_id = member;
    r.member_epoch = 0;
    r.instance_id = std::move(instance);
    r.rebalance_timeout_ms = 30000;
    r.subscribed_topic_names = std::move(topics_);
    r.owned = partition_map{};
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    return r;
  }

  consumer_heartbeat_request beat(const std::string& member, int32_t epoch,
                                  std::optional<partition_map> owned = std::nullopt) {
    consumer_heartbeat_request r;
    r.group_id = "g";
    r.member_id = member;
    r.member_epoch = epoch;
    r.owned = std::move(owned);
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    return r;
  }

  /// Runs a heartbeat through the memory log (records appended and replayed, then the answer).
  consumer_heartbeat_result hb(consumer_heartbeat_request r) {
    std::optional<consumer_heartbeat_result> out;
    size_t before = log.records().size();
    log.run<consumer_heartbeat_result>(gc.get(), gc.get().consumer_group_heartbeat(std::move(r)),
                                       [&](consumer_heartbeat_result res) { out = std::move(res); });
    last_records.assign(log.records().begin() + static_cast<long>(before), log.records().end());
    EXPECT_TRUE(out.has_value());
    return out ? *out : consumer_heartbeat_result{};
  }

  std::vector<consumer_record_type> types(const std::vector<group_record>& records) {
    std::vector<consumer_record_type> out;
    for (const auto& r : records) {
      auto k = decode_consumer_key(r.key);
      EXPECT_TRUE(k && *k) << "a KIP-848 key";
      if (k && *k) out.push_back((*k)->type);
    }
    return out;
  }

  const consumer_group_state& cg() const { return *gc->find_group("g")->consumer; }

  std::map<std::string, topic_metadata> topics;
  std::vector<group_record> last_records;
};

partition_map pm(std::initializer_list<std::pair<topic_uuid, std::set<int32_t>>> entries) {
  partition_map m;
  for (const auto& [t, ps] : entries) m[t] = ps;
  return m;
}

TEST_F(consumer_group_test, first_member_gets_every_partition_with_kafkas_records) {
  auto r = hb(join_req("m1"));
  EXPECT_EQ(r.error, ge::none);
  EXPECT_EQ(r.member_id, "m1");
  EXPECT_EQ(r.member_epoch, 2);
  EXPECT_EQ(r.heartbeat_interval_ms, 5000);
  ASSERT_TRUE(r.assignment.has_value());
  EXPECT_EQ(*r.assignment, pm({{tid(1), {0, 1, 2, 3, 4, 5}}}));
  using t = consumer_record_type;
  EXPECT_EQ(types(last_records), (std::vector<t>{t::member_metadata, t::group_metadata, t::target_assignment_member,
                                                 t::target_assignment_metadata, t::current_member_assignment}));
  EXPECT_EQ(decode_epoch_value(*last_records[1].value).value(), 2);
  consumer_member m;
  ASSERT_TRUE(decode_current_assignment_value(*last_records[4].value, m));
  EXPECT_EQ(m.member_epoch, 2);
  EXPECT_EQ(m.previous_member_epoch, 0);
  EXPECT_EQ(m.state, member_state::stable);
  EXPECT_EQ(m.assigned, pm({{tid(1), {0, 1, 2, 3, 4, 5}}}));
  EXPECT_EQ(cg().state_name(), "Stable");
  EXPECT_EQ(state(), group_state::stable);

  // A plain heartbeat changes nothing: no records, no assignment in the answer.
  auto again = hb(beat("m1", 2));
  EXPECT_EQ(again.error, ge::none);
  EXPECT_EQ(again.member_epoch, 2);
  EXPECT_FALSE(again.assignment.has_value());
  EXPECT_TRUE(last_records.empty());
}

TEST_F(consumer_group_test, a_second_member_waits_for_revocation_then_gets_its_half) {
  hb(join_req("m1"));
  auto j2 = hb(join_req("m2"));
  EXPECT_EQ(j2.member_epoch, 3);
  ASSERT_TRUE(j2.assignment.has_value());
  EXPECT_TRUE(j2.assignment->empty()) << "its target partitions are still owned by m1";
  EXPECT_EQ(cg().members.at("m2").state, member_state::unreleased_partitions);
  EXPECT_EQ(cg().state_name(), "Reconciling");
  const auto target2 = cg().target.at("m2");
  EXPECT_EQ(partition_count(target2), 3u);
  EXPECT_EQ(partition_count(cg().target.at("m1")), 3u);

  // m1 is told to give up m2's partitions first, at its current epoch.
  auto r1 = hb(beat("m1", 2));
  EXPECT_EQ(r1.member_epoch, 2);
  ASSERT_TRUE(r1.assignment.has_value());
  EXPECT_EQ(*r1.assignment, cg().target.at("m1"));
  EXPECT_EQ(cg().members.at("m1").state, member_state::unrevoked_partitions);
  EXPECT_EQ(cg().members.at("m1").pending_revocation, target2);
  // While m1 still reports owning them, m2 gets nothing.
  auto still = hb(beat("m2", 3, partition_map{}));
  EXPECT_FALSE(still.assignment.has_value());
  auto not_yet = hb(beat("m1", 2, pm({{tid(1), {0, 1, 2, 3, 4, 5}}})));
  EXPECT_EQ(not_yet.member_epoch, 2);
  // m1 revoked: it moves to epoch 2, stable; m2 then gets its three.
  auto done = hb(beat("m1", 2, cg().target.at("m1")));
  EXPECT_EQ(done.member_epoch, 3);
  EXPECT_EQ(cg().members.at("m1").state, member_state::stable);
  auto r2 = hb(beat("m2", 3, partition_map{}));
  ASSERT_TRUE(r2.assignment.has_value());
  EXPECT_EQ(*r2.assignment, target2);
  EXPECT_EQ(cg().members.at("m2").state, member_state::stable);
  EXPECT_EQ(cg().state_name(), "Stable");
}

// The KIP-848 safety property under churn: the coordinator never tells a member to own a partition that another
// member may still own (revoke before assign). Eight simulated clients that apply each answer at once (as a client
// does: unassign what was taken away, then ack it in the next heartbeat) join, heartbeat, leave and rejoin under
// the same member id in a seeded random order over 16 partitions; after every answer no partition is held by two
// of them. Then every member heartbeats until the group is stable: the 16 partitions are spread 2 per member.
// (librdkafka 2.14.2's 0113_cooperative_rebalance once reported a partition held by two of its consumers.)
TEST_F(consumer_group_test, churn_never_assigns_a_partition_another_member_may_still_own) {
  topics["big"] = {"big", tid(4), 16};
  install_topics();
  struct client {
    std::string id;
    int32_t epoch = -1;  // -1: not a member
    partition_map held;
  };
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<client> clients(8);
    for (size_t i = 0; i < clients.size(); ++i) clients[i].id = "s" + std::to_string(seed) + "-c" + std::to_string(i);
    auto check_exclusive = [&](int step) {
      std::map<int32_t, std::string> owner;
      for (const auto& c : clients) {
        auto it = c.held.find(tid(4));
        if (it == c.held.end()) continue;
        for (int32_t p : it->second) {
          auto [at, fresh] = owner.emplace(p, c.id);
          ASSERT_TRUE(fresh) << "seed " << seed << " step " << step << ": partition " << p << " held by " << at->second
                             << " and " << c.id;
        }
      }
    };
    auto apply = [&](client& c, const consumer_heartbeat_result& r) {
      if (r.error != ge::none) {  // fenced or unknown: the client loses its partitions and joins again
        c.held.clear();
        c.epoch = -1;
        return;
      }
      c.epoch = r.member_epoch;
      if (r.assignment) c.held = *r.assignment;
    };
    for (int step = 0; step < 400; ++step) {
      auto& c = clients[rng() % clients.size()];
      const uint32_t dice = rng() % 10;
      if (c.epoch < 0) {
        if (dice < 6) apply(c, hb(join_req(c.id, {"big"})));
      } else if (dice == 0) {
        c.held.clear();  // unsubscribe: revoke everything, then leave
        auto r = hb(beat(c.id, leave_epoch));
        EXPECT_EQ(r.error, ge::none);
        c.epoch = -1;
      } else {
        apply(c, hb(beat(c.id, c.epoch, c.held)));
      }
      check_exclusive(step);
      if (HasFatalFailure()) return;
    }
    for (auto& c : clients)
      if (c.epoch < 0) apply(c, hb(join_req(c.id, {"big"})));
    for (int round = 0; round < 10; ++round)
      for (auto& c : clients) {
        apply(c, hb(beat(c.id, c.epoch, c.held)));
        check_exclusive(1000 + round);
        if (HasFatalFailure()) return;
      }
    size_t total = 0;
    for (const auto& c : clients) {
      EXPECT_EQ(partition_count(c.held), 2u) << "seed " << seed << ": " << c.id;
      total += partition_count(c.held);
    }
    EXPECT_EQ(total, 16u) << "seed " << seed;
    EXPECT_EQ(cg().state_name(), "Stable") << "seed " << seed;
    for (auto& c : clients) EXPECT_EQ(hb(beat(c.id, leave_epoch)).error, ge::none);  // an empty group for the next seed
  }
}

TEST_F(consumer_group_test, epochs_are_checked_as_kafka_does) {
  hb(join_req("m1"));
  auto ahead = hb(beat("m1", 6));
  EXPECT_EQ(ahead.error, ge::fenced_member_epoch);
  ASSERT_TRUE(ahead.error_message.has_value());
  EXPECT_NE(ahead.error_message->find("greater member epoch (6)"), std::string::npos);
  // The previous epoch passes when the member owns no more than it is assigned (the bump's answer was lost).
  hb(join_req("m2"));
  hb(beat("m1", 2));
  ASSERT_EQ(hb(beat("m1", 2, cg().target.at("m1"))).member_epoch, 3);
  EXPECT_EQ(cg().members.at("m1").previous_member_epoch, 2);
  EXPECT_EQ(hb(beat("m1", 2, cg().target.at("m1"))).error, ge::none);
  EXPECT_EQ(hb(beat("m1", 2, pm({{tid(2), {0}}}))).error, ge::fenced_member_epoch);
  EXPECT_EQ(hb(beat("nobody", 2)).error, ge::unknown_member_id);
  auto other = beat("m1", 2);
  other.group_id = "unknown";
  EXPECT_EQ(hb(other).error, ge::group_id_not_found);
}

TEST_F(consumer_group_test, invalid_requests_get_kafkas_errors) {
  auto no_timeout = join_req("m1");
  no_timeout.rebalance_timeout_ms = -1;
  auto r = hb(no_timeout);
  EXPECT_EQ(r.error, ge::invalid_request);
  EXPECT_EQ(r.error_message.value_or(""), "RebalanceTimeoutMs must be provided in first request.");
  auto owned = join_req("m1");
  owned.owned = pm({{tid(1), {0}}});
  EXPECT_EQ(hb(owned).error, ge::invalid_request);
  auto no_sub = join_req("m1");
  no_sub.subscribed_topic_names.reset();
  EXPECT_EQ(hb(no_sub).error, ge::invalid_request);
  auto bad_epoch = beat("m1", -3);
  EXPECT_EQ(hb(bad_epoch).error_message.value_or(""), "MemberEpoch is invalid.");
  auto empty_id = join_req("");
  EXPECT_EQ(hb(empty_id).error_message.value_or(""), "MemberId can't be empty.");
  empty_id.api_version = 0;  // v0: the coordinator names the member
  auto named = hb(empty_id);
  EXPECT_EQ(named.error, ge::none);
  EXPECT_EQ(named.member_id, "uuid1");
  auto assignor = join_req("m2");
  assignor.server_assignor = "sticky";
  auto ua = hb(assignor);
  EXPECT_EQ(ua.error, ge::unsupported_assignor);
  EXPECT_EQ(ua.error_message.value_or(""), "ServerAssignor sticky is not supported. Supported assignors: uniform, range.");
  auto regex = join_req("m2", {});
  regex.subscribed_topic_names.reset();
  regex.subscribed_topic_regex = "t(";
  EXPECT_EQ(hb(regex).error, ge::invalid_regular_expression);
  EXPECT_TRUE(last_records.empty()) << "a refused request writes nothing";
}

TEST_F(consumer_group_test, leaving_bumps_the_epoch_and_the_other_member_takes_everything) {
  hb(join_req("m1"));
  hb(join_req("m2"));
  hb(beat("m1", 2, cg().target.at("m1")));
  hb(beat("m2", 3, partition_map{}));
  ASSERT_EQ(cg().state_name(), "Stable");
  auto left = hb(beat("m2", leave_epoch));
  EXPECT_EQ(left.error, ge::none);
  EXPECT_EQ(left.member_epoch, -1);
  using t = consumer_record_type;
  EXPECT_EQ(types(last_records), (std::vector<t>{t::current_member_assignment, t::target_assignment_member,
                                                 t::member_metadata, t::group_metadata}));
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(last_records[i].value.has_value()) << "tombstones";
  EXPECT_EQ(cg().group_epoch, 4);
  auto r = hb(beat("m1", 3));
  EXPECT_EQ(r.member_epoch, 4);
  ASSERT_TRUE(r.assignment.has_value());
  EXPECT_EQ(*r.assignment, pm({{tid(1), {0, 1, 2, 3, 4, 5}}}));
  EXPECT_EQ(hb(beat("m2", 3)).error, ge::unknown_member_id);
}

TEST_F(consumer_group_test, session_and_revocation_deadlines_fence_members) {
  hb(join_req("m1"));
  hb(join_req("m2"));
  advance(44000);
  hb(beat("m2", 3, partition_map{}));  // m2 keeps its session; m1 stays silent
  EXPECT_EQ(cg().members.size(), 2u);
  advance(2000);  // m1's 45 s session is over
  EXPECT_EQ(cg().members.size(), 1u);
  EXPECT_EQ(cg().group_epoch, 4);
  auto r = hb(beat("m2", 3, partition_map{}));
  EXPECT_EQ(r.member_epoch, 4);
  EXPECT_EQ(partition_count(*r.assignment), 6u);

  // A member that does not revoke within its rebalance timeout is fenced too.
  auto j = join_req("m3");
  j.rebalance_timeout_ms = 1000;
  hb(j);
  auto m2 = hb(beat("m2", 4));
  EXPECT_EQ(cg().members.at("m2").state, member_state::unrevoked_partitions);
  advance(1500);
  EXPECT_EQ(cg().members.count("m2"), 1u) << "m2's rebalance timeout is 30 s";
  advance(29000);
  EXPECT_EQ(cg().members.count("m2"), 0u);
  (void)m2;
}

TEST_F(consumer_group_test, static_member_leaves_temporarily_and_comes_back_under_a_new_id) {
  hb(join_req("a1", {"t"}, "inst-a"));
  hb(join_req("b1", {"t"}, "inst-b"));
  hb(beat("a1", 2, cg().target.at("a1")));
  hb(beat("b1", 3, partition_map{}));
  const auto a_parts = cg().members.at("a1").assigned;
  ASSERT_EQ(partition_count(a_parts), 3u);

  auto busy = hb(join_req("a2", {"t"}, "inst-a"));
  EXPECT_EQ(busy.error, ge::unreleased_instance_id);
  auto fenced = beat("a9", 3);
  fenced.instance_id = "inst-a";
  EXPECT_EQ(hb(fenced).error, ge::fenced_instance_id);

  auto leave = beat("a1", static_leave_epoch);
  leave.instance_id = "inst-a";
  auto l = hb(leave);
  EXPECT_EQ(l.member_epoch, -2);
  EXPECT_EQ(cg().group_epoch, 3) << "a temporary leave does not rebalance";
  auto back = hb(join_req("a2", {"t"}, "inst-a"));
  EXPECT_EQ(back.error, ge::none);
  EXPECT_EQ(back.member_epoch, 3);
  ASSERT_TRUE(back.assignment.has_value());
  EXPECT_EQ(*back.assignment, a_parts) << "the new id keeps the instance's partitions";
  EXPECT_EQ(cg().members.count("a1"), 0u);
  EXPECT_EQ(cg().group_epoch, 3);
}

TEST_F(consumer_group_test, regex_subscriptions_follow_topics) {
  auto j = join_req("m1", {});
  j.subscribed_topic_names.reset();
  j.subscribed_topic_regex = "t.*";
  auto r = hb(j);
  EXPECT_EQ(r.error, ge::none);
  EXPECT_TRUE(r.assignment->empty()) << "a new regex is resolved after the heartbeat, as Kafka does";
  EXPECT_EQ(cg().regexes.count("t.*"), 0u);
  advance(0);  // the timer resolves it and bumps the epoch
  EXPECT_EQ(cg().group_epoch, 3);
  r = hb(beat("m1", 2));
  EXPECT_EQ(r.member_epoch, 3);
  EXPECT_EQ(*r.assignment, pm({{tid(1), {0, 1, 2, 3, 4, 5}}, {tid(2), {0, 1}}})) << "t and t2, not other";
  ASSERT_EQ(cg().regexes.count("t.*"), 1u);
  EXPECT_EQ(cg().regexes.at("t.*").topics, (std::set<std::string>{"t", "t2"}));
  // A new matching topic bumps the epoch at the next heartbeat; so does a partition added to a subscribed topic.
  topics["t3"] = {"t3", tid(4), 1};
  auto r2 = hb(beat("m1", 3));
  EXPECT_EQ(r2.member_epoch, 4);
  EXPECT_EQ(partition_count(*r2.assignment), 9u);
  topics["t"].partitions = 8;
  EXPECT_EQ(partition_count(*hb(beat("m1", 4)).assignment), 11u);
}

TEST_F(consumer_group_test, a_reloaded_coordinator_holds_the_same_group) {
  hb(join_req("m1"));
  hb(join_req("m2", {"t", "t2"}, "inst-2"));
  hb(beat("m1", 2, cg().target.at("m1")));
  hb(beat("m2", 3, partition_map{}));
  auto before = gc->describe_consumer_group("g");
  make();
  install_topics();
  log.load(gc.get());
  auto after = gc->describe_consumer_group("g");
  EXPECT_EQ(after.error, ge::none);
  EXPECT_EQ(after.state, before.state);
  EXPECT_EQ(after.group_epoch, before.group_epoch);
  EXPECT_EQ(after.assignment_epoch, before.assignment_epoch);
  EXPECT_EQ(after.target, before.target);
  ASSERT_EQ(after.members.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after.members[i].member_id, before.members[i].member_id);
    EXPECT_EQ(after.members[i].member_epoch, before.members[i].member_epoch);
    EXPECT_EQ(after.members[i].assigned, before.members[i].assigned);
    EXPECT_EQ(after.members[i].subscribed_topic_names, before.members[i].subscribed_topic_names);
    EXPECT_EQ(after.members[i].instance_id, before.members[i].instance_id);
  }
  // Members keep heartbeating at their epochs on the new coordinator.
  EXPECT_EQ(hb(beat("m1", before.members[0].member_epoch)).error, ge::none);
}

TEST_F(consumer_group_test, offsets_use_member_epochs) {
  hb(join_req("m1"));
  offset_commit_request c;
  c.group_id = "g";
  c.member_id = "m1";
  c.generation_id = 2;
  c.api_version = 9;
  c.partitions.push_back({{"t", 0}, 42, -1, "", -1, tid(1)});
  auto ok = commit(c);
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->partitions[0].error, ge::none);
  c.generation_id = 7;
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::stale_member_epoch);
  c.generation_id = 2;
  c.api_version = 8;
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::unsupported_version);
  c.api_version = 9;
  c.member_id = "nobody";
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::unknown_member_id);
  c.member_id = "";
  c.generation_id = -1;
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::unknown_member_id) << "admin commits only into an empty group";

  EXPECT_EQ(gc->offset_fetch("g", std::nullopt, false, std::string("m1"), 2).partitions.at(0).offset, 42);
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt, false, std::string("m1"), 3).error, ge::stale_member_epoch);
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt, false, std::string("x"), 2).error, ge::unknown_member_id);
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.at(0).offset, 42) << "admin fetches need no member";
}

TEST_F(consumer_group_test, a_commit_racing_an_epoch_bump_passes_for_partitions_held_at_its_epoch) {
  hb(join_req("m1"));  // epoch 2, all six partitions
  hb(join_req("m2"));  // epoch 3
  hb(beat("m1", 2));   // told to revoke m2's three
  ASSERT_EQ(hb(beat("m1", 2, cg().target.at("m1"))).member_epoch, 3);
  const auto kept = cg().target.at("m1").at(tid(1));
  const auto given = cg().target.at("m2").at(tid(1));
  // KIP-1251 (Kafka 4.4): the commit still carries epoch 2; the partitions m1 kept were held since epoch 2.
  offset_commit_request c;
  c.group_id = "g";
  c.member_id = "m1";
  c.generation_id = 2;
  c.api_version = 9;
  c.partitions.push_back({{"t", *kept.begin()}, 5, -1, "", -1, tid(1)});
  c.partitions.push_back({{"t", *given.begin()}, 5, -1, "", -1, tid(1)});
  auto r = commit(c);
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->partitions[0].error, ge::none) << "held since epoch 2";
  EXPECT_EQ((*r)->partitions[1].error, ge::stale_member_epoch) << "no longer m1's";
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.size(), 1u) << "only the accepted one is stored";
  c.generation_id = 1;
  c.partitions.pop_back();
  EXPECT_EQ((*commit(c))->partitions[0].error, ge::stale_member_epoch) << "older than its assignment epoch";
}

TEST_F(consumer_group_test, empty_groups_convert_between_classic_and_consumer) {
  offset_commit_request c;
  c.group_id = "g";
  c.generation_id = -1;
  c.partitions.push_back({{"t", 1}, 7, -1, "", -1, tid(1)});
  commit(c);  // a "simple" classic group with an offset
  ASSERT_FALSE(gc->find_group("g")->is_consumer());
  auto r = hb(join_req("m1"));
  EXPECT_EQ(r.error, ge::none);
  ASSERT_TRUE(gc->find_group("g")->is_consumer());
  EXPECT_EQ(decode_key(last_records.at(0).key).value(), record_key{group_metadata_key{"g"}});
  EXPECT_FALSE(last_records.at(0).value.has_value()) << "the classic group's tombstone";
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.at(0).offset, 7) << "offsets stay";

  auto classic = join(jreq(""));
  ASSERT_TRUE(classic->has_value());
  EXPECT_EQ((*classic)->error, ge::inconsistent_group_protocol) << "the consumer group has a member";
  auto list = gc->list_groups({}, {"consumer"});
  ASSERT_EQ(list.groups.size(), 1u);
  EXPECT_EQ(list.groups[0].state, "Stable");
  EXPECT_EQ(gc->describe_group("g").state, "Dead") << "DescribeGroups does not see consumer groups";

  hb(beat("m1", leave_epoch));
  EXPECT_EQ(state(), group_state::empty);
  auto back = join(jreq(""));
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->error, ge::member_id_required) << "an empty consumer group becomes classic again";
  EXPECT_FALSE(gc->find_group("g")->is_consumer());
  EXPECT_EQ(gc->offset_fetch("g", std::nullopt).partitions.at(0).offset, 7);
}

TEST_F(consumer_group_test, deleting_an_empty_consumer_group_writes_its_tombstones) {
  hb(join_req("m1"));
  auto busy = delete_groups({"g"});
  EXPECT_EQ((**busy)[0].error, ge::non_empty_group);
  hb(beat("m1", leave_epoch));
  auto del = delete_groups({"g"});
  EXPECT_EQ((**del)[0].error, ge::none);
  EXPECT_EQ(gc->find_group("g"), nullptr);
  make();
  install_topics();
  log.load(gc.get());
  EXPECT_EQ(gc->find_group("g"), nullptr) << "the group stays deleted after a reload";
}

// ---- assignors ----

TEST(assignor_test, uniform_spreads_evenly_and_keeps_what_it_can) {
  std::vector<assignor_member> members{{"a", {tid(1)}}, {"b", {tid(1)}}, {"c", {tid(1)}}};
  std::map<topic_uuid, int32_t> parts{{tid(1), 12}};
  auto first = assign_uniform(members, parts, {});
  for (const auto& m : members) EXPECT_EQ(partition_count(first[m.member_id]), 4u);
  // c leaves: a and b keep their four and split c's.
  members.pop_back();
  auto second = assign_uniform(members, parts, first);
  for (const auto& id : {"a", "b"}) {
    EXPECT_EQ(partition_count(second[id]), 6u);
    EXPECT_TRUE(is_subset(first[id], second[id])) << id << " keeps its partitions";
  }
  // A newcomer takes from both without moving anything else.
  members.push_back({"d", {tid(1)}});
  auto third = assign_uniform(members, parts, second);
  for (const auto& id : {"a", "b"}) EXPECT_TRUE(is_subset(third[id], second[id]));
  EXPECT_EQ(partition_count(third["d"]), 4u);
}

TEST(assignor_test, uniform_respects_different_subscriptions) {
  std::vector<assignor_member> members{{"a", {tid(1), tid(2)}}, {"b", {tid(1)}}};
  std::map<topic_uuid, int32_t> parts{{tid(1), 2}, {tid(2), 4}};
  auto out = assign_uniform(members, parts, {});
  EXPECT_EQ(out["b"].count(tid(2)), 0u) << "b does not subscribe to topic 2";
  EXPECT_EQ(partition_count(out["a"]) + partition_count(out["b"]), 6u);
  EXPECT_EQ(out["a"].at(tid(2)).size(), 4u);
  EXPECT_EQ(partition_count(out["b"]), 2u);
}

TEST(assignor_test, range_gives_contiguous_ranges_in_member_order) {
  std::vector<assignor_member> members{{"b", {tid(1)}}, {"a", {tid(1)}}, {"c", {tid(1)}}};
  auto out = assign_range(members, {{tid(1), 7}});
  EXPECT_EQ(out["a"].at(tid(1)), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(out["b"].at(tid(1)), (std::set<int32_t>{3, 4}));
  EXPECT_EQ(out["c"].at(tid(1)), (std::set<int32_t>{5, 6}));
}

TEST(reconcile_test, unknown_state_must_rejoin_owning_nothing) {
  consumer_member m;
  m.member_id = "x";
  m.state = member_state::unknown;
  auto none = [](const topic_uuid&, int32_t) { return -1; };
  EXPECT_FALSE(reconcile(m, 3, pm({{tid(1), {0}}}), pm({{tid(1), {0}}}), none).has_value());
  auto ok = reconcile(m, 3, pm({{tid(1), {0}}}), partition_map{}, none);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->member_epoch, 3);
  EXPECT_EQ(ok->assigned, pm({{tid(1), {0}}}));
}

}  // namespace
}  // namespace sluice::groups::test
