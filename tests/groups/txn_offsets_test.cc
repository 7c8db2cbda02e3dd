// Transactional offsets (KIP-98 TxnOffsetCommit, KIP-447 require_stable): pending per producer id until the
// producer's COMMIT marker lands in the partition (ABORT drops them), Kafka 4.x's validation, the record-offset rule
// between transactional and plain commits, retention, deletion, and a coordinator rebuilt from the same log.
#include "tests/groups/test_support.h"

namespace sluice::groups::test {
namespace {

using ge = group_error;
using tps = std::vector<topic_partition>;

constexpr int64_t kPid = 4000;

txn_offset_commit_request txn(const std::string& group, std::vector<offset_commit_partition> parts,
                              int64_t producer_id = kPid, int16_t epoch = 1) {
  txn_offset_commit_request r;
  r.transactional_id = "tx-" + std::to_string(producer_id);
  r.group_id = group;
  r.producer_id = producer_id;
  r.producer_epoch = epoch;
  r.partitions = std::move(parts);
  return r;
}

offset_commit_partition part(const std::string& topic, int32_t p, int64_t offset,
                             std::optional<std::string> metadata = std::nullopt) {
  return {{topic, p}, offset, -1, std::move(metadata), -1};
}

offset_commit_request simple_commit(const std::string& group, std::vector<offset_commit_partition> parts) {
  return offset_commit_request{group, -1, "", std::nullopt, -1, std::move(parts)};
}

std::vector<ge> errors(const slot<offset_commit_result>& r) {
  std::vector<ge> out;
  if (!r->has_value()) return out;
  for (const auto& p : (*r)->partitions) out.push_back(p.error);
  return out;
}

TEST_F(coordinator_test, txn_offsets_are_pending_until_the_commit_marker) {
  auto c = gc.get().txn_offset_commit(txn("s", {part("t", 0, 10, "m"), part("t", 1, 11)}));
  ASSERT_TRUE(c.producer.has_value());
  EXPECT_EQ(*c.producer, (producer_stamp{kPid, 1}));
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0].key, encode_key(offset_commit_key{"s", "t", 0}));
  EXPECT_EQ(*decode_offset_commit_value(*c.records[0].value),
            (offset_commit_value{10, -1, "m", clock.now_ms(), std::nullopt}))
      << "the OffsetCommit record (v3), stamped with the broker's time";
  bool answered = false;
  log.run<offset_commit_result>(gc.get(), std::move(c), [&](offset_commit_result r) {
    answered = true;
    ASSERT_EQ(r.partitions.size(), 2u);
    EXPECT_EQ(r.partitions[0].error, ge::none);
    EXPECT_EQ(r.partitions[1].error, ge::none);
  });
  EXPECT_TRUE(answered);

  // Pending: not visible, and unstable for require_stable; other partitions answer as usual.
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}, {"t", 2}});
  ASSERT_EQ(f.partitions.size(), 3u);
  for (const auto& p : f.partitions) {
    EXPECT_EQ(p.offset, -1);
    EXPECT_EQ(p.error, ge::none);
  }
  EXPECT_TRUE(gc->offset_fetch("s", std::nullopt).partitions.empty()) << "no committed offset to list";
  auto stable = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}, {"t", 2}}, true);
  EXPECT_EQ(stable.partitions[0].error, ge::unstable_offset_commit);
  EXPECT_EQ(stable.partitions[0].offset, -1);
  EXPECT_EQ(stable.partitions[1].error, ge::unstable_offset_commit);
  EXPECT_EQ(stable.partitions[2].error, ge::none);
  ASSERT_NE(gc->find_group("s"), nullptr) << "a simple group is created for it";
  EXPECT_EQ(gc->find_group("s")->pending_txn_offsets.at(kPid).size(), 2u);
  EXPECT_EQ(gc->find_group("s")->pending_txn_offsets.at(kPid).at({"t", 0}).record_offset, 0);

  marker(kPid + 1, true);  // another producer's marker changes nothing
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, -1);

  marker(kPid, true);
  f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}}, true);
  EXPECT_EQ(f.partitions[0].error, ge::none);
  EXPECT_EQ(f.partitions[0].offset, 10);
  EXPECT_EQ(f.partitions[0].metadata, "m");
  EXPECT_EQ(f.partitions[1].offset, 11);
  EXPECT_TRUE(gc->find_group("s")->pending_txn_offsets.empty());
  EXPECT_EQ(gc->offset_fetch("s", std::nullopt).partitions.size(), 2u);
}

TEST_F(coordinator_test, txn_abort_marker_drops_the_pending_offsets) {
  commit(simple_commit("s", {part("t", 0, 5)}));
  txn_commit(txn("s", {part("t", 0, 10), part("t", 1, 11)}));
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, 5) << "the committed one until the marker";
  marker(kPid, false);
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}}, true);
  EXPECT_EQ(f.partitions[0].offset, 5);
  EXPECT_EQ(f.partitions[0].error, ge::none);
  EXPECT_EQ(f.partitions[1].offset, -1);
  EXPECT_EQ(f.partitions[1].error, ge::none);
  // A commit marker after the abort finds nothing left.
  marker(kPid, true);
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 1}}).partitions[0].offset, -1);
}

// Kafka's replayEndTransactionMarker: "We always keep the most recent committed offset when we have a mix of
// transactional and regular offset commits" (by the offset of the record in __consumer_offsets).
TEST_F(coordinator_test, the_newer_record_wins_between_txn_and_plain_commits) {
  commit(simple_commit("s", {part("t", 0, 5), part("t", 1, 6)}));  // records 0, 1
  txn_commit(txn("s", {part("t", 0, 10), part("t", 1, 11)}));      // records 2, 3
  commit(simple_commit("s", {part("t", 1, 20)}));                  // record 4: newer than the transaction's
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 1}}).partitions[0].offset, 20) << "plain commits apply at once";
  marker(kPid, true);
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}});
  EXPECT_EQ(f.partitions[0].offset, 10) << "the transaction's is newer than the first plain commit";
  EXPECT_EQ(f.partitions[1].offset, 20) << "the later plain commit stays";
}

TEST_F(coordinator_test, pending_offsets_are_kept_per_producer) {
  txn_commit(txn("s", {part("t", 0, 10)}, 1));
  txn_commit(txn("s", {part("t", 0, 20), part("t", 1, 21)}, 2));
  txn_commit(txn("other", {part("t", 0, 30)}, 2));
  marker(2, true);
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}}, true);
  EXPECT_EQ(f.partitions[0].error, ge::unstable_offset_commit) << "producer 1 still holds an offset for t-0";
  EXPECT_EQ(f.partitions[1].error, ge::none);
  EXPECT_EQ(f.partitions[1].offset, 21);
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, 20);
  EXPECT_EQ(gc->offset_fetch("other", tps{{"t", 0}}).partitions[0].offset, 30) << "one marker, every group";
  marker(1, true);
  // Producer 1's offset was written before producer 2's: the committed one stays 20.
  f = gc->offset_fetch("s", tps{{"t", 0}}, true);
  EXPECT_EQ(f.partitions[0].error, ge::none);
  EXPECT_EQ(f.partitions[0].offset, 20);
}

// Kafka 4.x OffsetMetadataManager.validateTransactionalOffsetCommit and ClassicGroup.validateOffsetCommit with
// isTransactional = true.
TEST_F(coordinator_test, txn_commit_validation) {
  EXPECT_EQ(errors(txn_commit(txn("", {part("t", 0, 1)}))), (std::vector<ge>{ge::invalid_group_id}));
  auto unknown = txn("g", {part("t", 0, 1)});
  unknown.generation_id = 1;
  unknown.member_id = "m";
  EXPECT_EQ(errors(txn_commit(unknown)), (std::vector<ge>{ge::illegal_generation}));
  EXPECT_EQ(gc->find_group("g"), nullptr) << "no group created";

  auto j1 = join(jreq("", "g", std::string("inst")));
  auto j2 = join_new();
  gc->on_timer();
  ASSERT_TRUE(j1->has_value() && j2->has_value());
  const std::string a = (*j1)->member_id, bm = (*j2)->member_id;
  ASSERT_EQ(state(), group_state::completing_rebalance);
  auto member = [&](int32_t generation, const std::string& id, std::optional<std::string> instance = std::nullopt) {
    auto r = txn("g", {part("t", 0, 1)});
    r.generation_id = generation;
    r.member_id = id;
    r.group_instance_id = std::move(instance);
    return r;
  };
  EXPECT_EQ(errors(txn_commit(member(1, bm))), (std::vector<ge>{ge::none}))
      << "CompletingRebalance: no REBALANCE_IN_PROGRESS for a transactional commit";
  EXPECT_EQ(errors(txn_commit(member(2, bm))), (std::vector<ge>{ge::illegal_generation}));
  EXPECT_EQ(errors(txn_commit(member(1, "ghost"))), (std::vector<ge>{ge::unknown_member_id}));
  EXPECT_EQ(errors(txn_commit(member(1, bm, std::string("inst")))), (std::vector<ge>{ge::fenced_instance_id}));
  EXPECT_EQ(errors(txn_commit(member(1, a, std::string("inst")))), (std::vector<ge>{ge::none}));
  EXPECT_EQ(errors(txn_commit(member(-1, "", std::nullopt))), (std::vector<ge>{ge::none}))
      << "v0-2 carry no member fields: accepted for a group with members (OffsetCommit says UNKNOWN_MEMBER_ID)";
  EXPECT_EQ(errors(commit(simple_commit("g", {part("t", 0, 1)}))), (std::vector<ge>{ge::unknown_member_id}));

  config.offset_metadata_max_bytes = 3;
  make();
  EXPECT_EQ(errors(txn_commit(txn("s", {part("t", 0, 1, "1234"), part("t", 1, 2, "123")}))),
            (std::vector<ge>{ge::offset_metadata_too_large, ge::none}));
  EXPECT_EQ(gc->find_group("s")->pending_txn_offsets.at(kPid).size(), 1u);
}

TEST_F(coordinator_test, txn_commit_to_a_group_being_deleted) {
  commit(simple_commit("s", {part("t", 0, 5)}));
  log.hold = true;
  auto deleting = delete_groups({"s"});
  EXPECT_EQ(errors(txn_commit(txn("s", {part("t", 0, 1)}))), (std::vector<ge>{ge::coordinator_not_available}));
  log.complete();
  EXPECT_EQ((**deleting)[0].error, ge::none);
}

TEST_F(coordinator_test, txn_commit_append_failures_map_as_kafka_4) {
  const std::vector<std::pair<ge, ge>> cases = {
      {ge::not_enough_replicas, ge::coordinator_not_available},
      {ge::not_enough_replicas_after_append, ge::coordinator_not_available},
      {ge::request_timed_out, ge::coordinator_not_available},
      {ge::not_leader_or_follower, ge::not_coordinator},
      {ge::kafka_storage_error, ge::not_coordinator},
      {ge::message_too_large, ge::unknown_server_error},
      {ge::invalid_producer_epoch, ge::invalid_producer_epoch},  // the log fenced a stale epoch
  };
  for (const auto& [append_error, answer] : cases) {
    log.hold = true;
    auto c = txn_commit(txn("s", {part("t", 0, 1)}));
    EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}, true).partitions[0].error, ge::unstable_offset_commit)
        << "appended, not yet committed";
    log.complete(append_error);
    EXPECT_EQ(errors(c), (std::vector<ge>{answer})) << to_string(append_error);
    EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}, true).partitions[0].error, ge::none) << "nothing left pending";
    EXPECT_TRUE(gc->find_group("s")->pending_txn_offsets.empty());
  }
}

TEST_F(coordinator_test, pending_txn_offsets_are_not_expired) {
  commit(simple_commit("s", {part("t", 0, 5), part("t", 1, 6)}));
  txn_commit(txn("s", {part("t", 0, 10)}));
  txn_commit(txn("p", {part("t", 0, 1)}, kPid + 1));  // a group with pending offsets only
  advance(config.offsets_retention_ms + config.offsets_retention_check_interval_ms);
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}});
  EXPECT_EQ(f.partitions[0].offset, 5) << "a transaction holds an offset for t-0: not expired";
  EXPECT_EQ(f.partitions[1].offset, -1) << "t-1 expired";
  ASSERT_NE(gc->find_group("p"), nullptr) << "a group with open transactions' offsets is not removed";
  marker(kPid + 1, true);
  EXPECT_EQ(gc->offset_fetch("p", tps{{"t", 0}}).partitions[0].offset, 1);
  marker(kPid, true);
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, 10);
}

TEST_F(coordinator_test, deleting_offsets_or_groups_drops_pending_txn_offsets) {
  // OffsetDelete writes a tombstone for a partition only a transaction holds an offset for (Kafka 4.x), and the
  // tombstone drops it: the commit marker that follows finds nothing.
  txn_commit(txn("s", {part("t", 0, 10), part("t", 1, 11)}));
  size_t before = log.records().size();
  auto d = offset_delete("s", tps{{"t", 0}});
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->partitions.at(0).error, ge::none);
  ASSERT_EQ(log.records().size(), before + 1);
  EXPECT_EQ(log.records().back().key, encode_key(offset_commit_key{"s", "t", 0}));
  EXPECT_FALSE(log.records().back().value.has_value());
  marker(kPid, true);
  auto f = gc->offset_fetch("s", tps{{"t", 0}, {"t", 1}});
  EXPECT_EQ(f.partitions[0].offset, -1);
  EXPECT_EQ(f.partitions[1].offset, 11);

  // DeleteGroups: tombstones for committed and pending-only partitions, then the group's.
  commit(simple_commit("g", {part("t", 0, 1)}));
  txn_commit(txn("g", {part("t", 0, 2), part("u", 0, 3)}, kPid + 1));
  before = log.records().size();
  auto del = delete_groups({"g"});
  EXPECT_EQ((**del)[0].error, ge::none);
  ASSERT_EQ(log.records().size(), before + 3);
  EXPECT_EQ(log.records()[before].key, encode_key(offset_commit_key{"g", "t", 0}));
  EXPECT_EQ(log.records()[before + 1].key, encode_key(offset_commit_key{"g", "u", 0}));
  EXPECT_EQ(log.records()[before + 2].key, encode_key(group_metadata_key{"g"}));
  EXPECT_EQ(gc->find_group("g"), nullptr);
  marker(kPid + 1, true);
  EXPECT_EQ(gc->find_group("g"), nullptr) << "nothing of the deleted group comes back";
  EXPECT_EQ(gc->offset_fetch("g", tps{{"t", 0}, {"u", 0}}, true).partitions[0].offset, -1);
}

// A coordinator rebuilt from the log (records with their offsets and batch producers, markers in offset order)
// holds the committed and the pending offsets the live one holds.
TEST_F(coordinator_test, replay_of_txn_batches_and_markers_gives_the_same_state) {
  std::string a = single_stable_member();
  commit({"g", 1, a, std::nullopt, -1, {part("t", 0, 5), part("t", 1, 6)}});
  txn_commit(txn("g", {part("t", 0, 10), part("t", 2, 12)}, 1));   // committed below
  txn_commit(txn("g", {part("t", 1, 99)}, 2));                     // aborted below
  commit({"g", 1, a, std::nullopt, -1, {part("t", 2, 20)}});       // newer than producer 1's t-2
  marker(1, true);
  marker(2, false);
  txn_commit(txn("g", {part("t", 3, 30, "open")}, 3));              // still open
  txn_commit(txn("s", {part("t", 0, 40)}, 3));                      // the same producer, another group
  txn_commit(txn("s", {part("t", 1, 41)}, 4));
  offset_delete("s", tps{{"t", 1}});                                // drops producer 4's pending offset
  // A transactional commit still waiting for the high watermark when its marker lands: replayed first.
  log.hold = true;
  auto held = txn_commit(txn("h", {part("t", 0, 50)}, 5));
  log.hold = false;
  log.marker(gc.get(), 5, true);  // offset after the held batch's; the live replay comes before the batch's
  log.complete();
  ASSERT_TRUE(held->has_value());

  group_coordinator fresh(-1, config, clock);
  log.load(fresh);

  auto same = [&](const std::string& id) {
    const group* live = gc->find_group(id);
    const group* loaded = fresh.find_group(id);
    ASSERT_NE(live, nullptr) << id;
    ASSERT_NE(loaded, nullptr) << id;
    ASSERT_EQ(loaded->offsets.size(), live->offsets.size()) << id;
    for (const auto& [tp, c] : live->offsets) {
      ASSERT_TRUE(loaded->offsets.count(tp)) << id << " " << tp.topic << "-" << tp.partition;
      EXPECT_EQ(loaded->offsets.at(tp).offset, c.offset);
      EXPECT_EQ(loaded->offsets.at(tp).metadata, c.metadata);
      EXPECT_EQ(loaded->offsets.at(tp).record_offset, c.record_offset);
    }
    ASSERT_EQ(loaded->pending_txn_offsets.size(), live->pending_txn_offsets.size()) << id;
    for (const auto& [pid, offsets] : live->pending_txn_offsets) {
      ASSERT_TRUE(loaded->pending_txn_offsets.count(pid)) << id << " producer " << pid;
      ASSERT_EQ(loaded->pending_txn_offsets.at(pid).size(), offsets.size());
      for (const auto& [tp, c] : offsets) {
        EXPECT_EQ(loaded->pending_txn_offsets.at(pid).at(tp).offset, c.offset);
        EXPECT_EQ(loaded->pending_txn_offsets.at(pid).at(tp).record_offset, c.record_offset);
      }
    }
  };
  same("g");
  same("s");
  same("h");
  // The values themselves.
  auto f = fresh.offset_fetch("g", tps{{"t", 0}, {"t", 1}, {"t", 2}, {"t", 3}}, true);
  EXPECT_EQ(f.partitions[0].offset, 10);
  EXPECT_EQ(f.partitions[1].offset, 6) << "producer 2 aborted";
  EXPECT_EQ(f.partitions[2].offset, 20) << "the later plain commit wins over producer 1's";
  EXPECT_EQ(f.partitions[3].error, ge::unstable_offset_commit) << "producer 3 is still open";
  EXPECT_EQ(fresh.find_group("g")->pending_txn_offsets.at(3).at({"t", 3}).metadata, "open");
  EXPECT_EQ(fresh.find_group("s")->pending_txn_offsets.count(4), 0u);
  EXPECT_EQ(fresh.offset_fetch("h", tps{{"t", 0}}).partitions[0].offset, 50);
  EXPECT_EQ(fresh.describe_group("g").state, "Stable");

  // Both finish the open transaction alike.
  marker(3, true);
  fresh.replay_end_txn(3, true);
  EXPECT_EQ(gc->offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, 40);
  EXPECT_EQ(fresh.offset_fetch("s", tps{{"t", 0}}).partitions[0].offset, 40);
  EXPECT_EQ(fresh.offset_fetch("g", tps{{"t", 3}}).partitions[0].offset, 30);
  EXPECT_TRUE(fresh.find_group("g")->pending_txn_offsets.empty());
}


// Kafka 4.x GroupCoordinatorShard.onPartitionsDeleted: a deleted topic's offsets go in every group, committed and
// pending transactional ones, in one append; the groups stay; other topics' offsets and partitions past the
// deleted topic's count are untouched.
TEST_F(coordinator_test, a_deleted_topic_takes_its_offsets_with_it) {
  commit(simple_commit("a", {part("gone", 0, 5), part("gone", 1, 6), part("kept", 0, 7)}));
  commit(simple_commit("b", {part("gone", 1, 8)}));
  txn_commit(txn("b", {part("gone", 0, 9), part("kept", 1, 10)}));
  commit(simple_commit("c", {part("gone", 3, 11)}));  // beyond the 2 partitions deleted: stays
  const int appends_before = log.appends;
  const size_t records_before = log.records().size();

  EXPECT_EQ(gc->on_partitions_deleted("gone", 2), 4u);
  log.pump(gc.get());
  EXPECT_EQ(log.appends, appends_before + 1) << "one batch";
  ASSERT_EQ(log.records().size(), records_before + 4);
  std::vector<bytes> keys;
  for (size_t i = records_before; i < log.records().size(); ++i) {
    EXPECT_FALSE(log.records()[i].value.has_value());
    keys.push_back(log.records()[i].key);
  }
  // Committed ones first (groups in order), then the pending transactional one.
  EXPECT_EQ(keys, (std::vector<bytes>{encode_key(offset_commit_key{"a", "gone", 0}), encode_key(offset_commit_key{"a", "gone", 1}),
                                      encode_key(offset_commit_key{"b", "gone", 1}), encode_key(offset_commit_key{"b", "gone", 0})}));

  auto a = gc->offset_fetch("a", std::nullopt);
  ASSERT_EQ(a.partitions.size(), 1u);
  EXPECT_EQ(a.partitions[0].tp, (topic_partition{"kept", 0}));
  EXPECT_TRUE(gc->offset_fetch("b", std::nullopt).partitions.empty());
  EXPECT_EQ(gc->find_group("b")->pending_txn_offsets.at(kPid).size(), 1u) << "kept-1 still pending";
  EXPECT_EQ(gc->offset_fetch("c", std::nullopt).partitions.size(), 1u);
  EXPECT_EQ(gc->describe_group("b").state, "Empty") << "the group stays";

  marker(kPid, true);
  auto b = gc->offset_fetch("b", std::nullopt);
  ASSERT_EQ(b.partitions.size(), 1u);
  EXPECT_EQ(b.partitions[0].tp, (topic_partition{"kept", 1})) << "the commit marker brings no deleted offset back";

  EXPECT_EQ(gc->on_partitions_deleted("gone", 2), 0u) << "nothing left to delete";
  EXPECT_EQ(gc->on_partitions_deleted("unknown", 4), 0u);

  group_coordinator fresh(-1, config, clock);
  log.load(fresh);
  EXPECT_EQ(fresh.offset_fetch("a", std::nullopt).partitions.size(), 1u);
  EXPECT_EQ(fresh.offset_fetch("b", std::nullopt).partitions.size(), 1u);
  EXPECT_EQ(fresh.on_partitions_deleted("kept", 2), 2u);
}

}  // namespace
}  // namespace sluice::groups::test
