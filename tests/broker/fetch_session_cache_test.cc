// broker/fetch_session_cache.h: KIP-227 session rules (epochs, errors, updates, forgotten partitions), what an
// incremental answer keeps, the fairness order, and eviction, on a manual clock.
#include <gtest/gtest.h>

#include <map>

#include "base/clock.h"
#include "broker/fetch_session_cache.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using req = protocol::fetch_request;
using resp = protocol::fetch_response;

cached_fetch_partition part(const std::string& topic, int32_t p, int64_t offset = 0, int64_t hw = 0) {
  cached_fetch_partition c;
  c.topic = topic;
  c.partition = p;
  c.max_bytes = 1 << 20;
  c.fetch_offset = offset;
  c.high_watermark = hw;
  c.local_log_start_offset = 0;
  return c;
}

std::vector<cached_fetch_partition> parts(const std::string& topic, int n) {
  std::vector<cached_fetch_partition> out;
  for (int i = 0; i < n; ++i) out.push_back(part(topic, i));
  return out;
}

req::fetch_topic topic_req(const std::string& topic, std::vector<std::pair<int32_t, int64_t>> partitions) {
  req::fetch_topic ft;
  ft.topic = topic;
  for (auto [p, offset] : partitions) {
    req::fetch_partition fp;
    fp.partition = p;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1000;
    ft.partitions.push_back(fp);
  }
  return ft;
}

req::forgotten_topic forget(const std::string& topic, std::vector<int32_t> partitions) {
  req::forgotten_topic f;
  f.topic = topic;
  f.partitions = std::move(partitions);
  return f;
}

/// The answer a fetch of `inc.topics` would build: every partition with `hw`, no records, no error.
resp answer_all(const fetch_session_cache::incremental& inc, int64_t hw) {
  resp r;
  for (const auto& ft : inc.topics) {
    resp::fetchable_topic_response tr;
    tr.topic = ft.topic;
    for (const auto& fp : ft.partitions) {
      resp::partition_data pd;
      pd.partition_index = fp.partition;
      pd.high_watermark = hw;
      pd.log_start_offset = 0;
      pd.records_ = protocol::records{};
      tr.partitions.push_back(pd);
    }
    r.responses.push_back(std::move(tr));
  }
  return r;
}

std::vector<std::pair<std::string, int32_t>> order(const fetch_session_cache::incremental& inc) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& ft : inc.topics)
    for (const auto& fp : ft.partitions) out.emplace_back(ft.topic, fp.partition);
  return out;
}

TEST(FetchSessionCache, EpochsAndSessionErrors) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  const int32_t id = cache.maybe_create(false, false, parts("a", 3));
  ASSERT_GT(id, 0);
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.total_partitions(), 3);

  EXPECT_EQ(cache.begin_incremental(id ^ 1, 1, false, {}, {}).error,
            error_code::fetch_session_id_not_found);
  EXPECT_EQ(cache.begin_incremental(id, 2, false, {}, {}).error, error_code::invalid_fetch_session_epoch);
  EXPECT_EQ(cache.begin_incremental(id, 1, true, {}, {}).error, error_code::fetch_session_topic_id_error);

  auto first = cache.begin_incremental(id, 1, false, {}, {});
  ASSERT_EQ(first.error, error_code::none);
  EXPECT_EQ(first.expected_epoch, 2);
  EXPECT_EQ(order(first), (std::vector<std::pair<std::string, int32_t>>{{"a", 0}, {"a", 1}, {"a", 2}}));
  // The same epoch again (a retried request) is refused: the session moved on.
  EXPECT_EQ(cache.begin_incremental(id, 1, false, {}, {}).error, error_code::invalid_fetch_session_epoch);
  auto second = cache.begin_incremental(id, 2, false, {}, {});
  ASSERT_EQ(second.error, error_code::none);
  // The first request's answer comes after the second began: it is refused, with the session's id.
  auto r = answer_all(first, 5);
  cache.finish(first, r);
  EXPECT_EQ(r.error_code, error_code::invalid_fetch_session_epoch);
  EXPECT_EQ(r.session_id, id);
  EXPECT_TRUE(r.responses.empty());

  EXPECT_TRUE(cache.remove(id));
  EXPECT_FALSE(cache.remove(id));
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.total_partitions(), 0);
}

TEST(FetchSessionCache, IncrementalAnswersOnlyChanges) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  const int32_t id = cache.maybe_create(false, false, parts("a", 4));  // every cached high watermark is 0

  auto inc = cache.begin_incremental(id, 1, false, {}, {});
  auto r = answer_all(inc, 0);
  r.responses[0].partitions[1].high_watermark = 7;                          // moved
  r.responses[0].partitions[2].error_code = error_code::not_leader_or_follower;  // error
  cache.finish(inc, r);
  ASSERT_EQ(r.responses.size(), 1u);
  ASSERT_EQ(r.responses[0].partitions.size(), 2u);
  EXPECT_EQ(r.responses[0].partitions[0].partition_index, 1);
  EXPECT_EQ(r.responses[0].partitions[1].partition_index, 2);
  EXPECT_EQ(r.session_id, id);

  // Nothing changed for 0, 1 and 3; partition 2 had an error, so its cached high watermark is -1: answered again.
  inc = cache.begin_incremental(id, 2, false, {}, {});
  auto quiet = answer_all(inc, 0);
  quiet.responses[0].partitions[1].high_watermark = 7;
  cache.finish(inc, quiet);
  ASSERT_EQ(quiet.responses.size(), 1u);
  ASSERT_EQ(quiet.responses[0].partitions.size(), 1u);
  EXPECT_EQ(quiet.responses[0].partitions[0].partition_index, 2);

  inc = cache.begin_incremental(id, 3, false, {}, {});
  auto none = answer_all(inc, 0);
  none.responses[0].partitions[1].high_watermark = 7;
  cache.finish(inc, none);
  EXPECT_TRUE(none.responses.empty());  // nothing to tell: no topic entries at all

  // A moved log start offset and a diverging epoch are answered.
  inc = cache.begin_incremental(id, 4, false, {}, {});
  auto more = answer_all(inc, 0);
  more.responses[0].partitions[1].high_watermark = 7;
  more.responses[0].partitions[0].log_start_offset = 3;
  more.responses[0].partitions[3].diverging_epoch.epoch = 2;
  cache.finish(inc, more);
  ASSERT_EQ(more.responses[0].partitions.size(), 2u);
  EXPECT_EQ(more.responses[0].partitions[0].partition_index, 0);
  EXPECT_EQ(more.responses[0].partitions[1].partition_index, 3);
}

TEST(FetchSessionCache, PartitionsWithRecordsMoveToTheEnd) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  const int32_t id = cache.maybe_create(false, false, parts("a", 3));
  auto inc = cache.begin_incremental(id, 1, false, {}, {});
  auto r = answer_all(inc, 0);
  static const uint8_t batch[10] = {};
  r.responses[0].partitions[0].records_ = protocol::records::from_memory(batch);  // partition 0 returned records
  cache.finish(inc, r);
  ASSERT_EQ(r.responses[0].partitions.size(), 1u);
  inc = cache.begin_incremental(id, 2, false, {}, {});
  EXPECT_EQ(order(inc), (std::vector<std::pair<std::string, int32_t>>{{"a", 1}, {"a", 2}, {"a", 0}}));
}

TEST(FetchSessionCache, UpdatesAddsAndForgets) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  const int32_t id = cache.maybe_create(false, false, parts("a", 2));
  // Partition a-1 moves to offset 42, b-0 joins, a-0 is forgotten.
  auto inc = cache.begin_incremental(id, 1, false, {topic_req("a", {{1, 42}}), topic_req("b", {{0, 5}})},
                                     {forget("a", {0, 9})});
  ASSERT_EQ(inc.error, error_code::none);
  ASSERT_EQ(order(inc), (std::vector<std::pair<std::string, int32_t>>{{"a", 1}, {"b", 0}}));
  EXPECT_EQ(inc.topics[0].partitions[0].fetch_offset, 42);
  EXPECT_EQ(inc.topics[0].partitions[0].partition_max_bytes, 1000);
  EXPECT_EQ(inc.topics[1].partitions[0].fetch_offset, 5);
  EXPECT_EQ(cache.total_partitions(), 2);

  // Forgetting the last partitions ends the session: the request is fetched as sessionless.
  auto last = cache.begin_incremental(id, 2, false, {}, {forget("a", {1}), forget("b", {0})});
  EXPECT_EQ(last.error, error_code::none);
  EXPECT_TRUE(last.closed);
  EXPECT_EQ(last.session, nullptr);
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.begin_incremental(id, 3, false, {}, {}).error, error_code::fetch_session_id_not_found);
}

TEST(FetchSessionCache, TopicIdSessionsKeyByIdNotName) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  protocol::uuid u1, u2;
  u1.bytes[0] = 1;
  u2.bytes[0] = 2;
  auto c = part("", 0);
  c.topic_id = u1;
  const int32_t id = cache.maybe_create(false, true, {c});
  req::fetch_topic ft;  // names are absent in version 13+
  ft.topic_id = u2;
  req::fetch_partition fp;
  fp.partition = 0;
  ft.partitions.push_back(fp);
  auto inc = cache.begin_incremental(id, 1, true, {ft}, {});
  ASSERT_EQ(inc.topics.size(), 2u);  // a different id is a different partition, though both names are ""
  EXPECT_EQ(inc.topics[0].topic_id, u1);
  EXPECT_EQ(inc.topics[1].topic_id, u2);
  req::forgotten_topic f;
  f.topic_id = u1;
  f.partitions = {0};
  inc = cache.begin_incremental(id, 2, true, {}, {f});
  ASSERT_EQ(inc.topics.size(), 1u);
  EXPECT_EQ(inc.topics[0].topic_id, u2);
}

TEST(FetchSessionCache, TopicIdSessionsKeepTheNameTheirIdResolvedTo) {
  manual_clock clock;
  fetch_session_cache cache(clock, 10);
  protocol::uuid u1, u2;
  u1.bytes[0] = 1;
  u2.bytes[0] = 2;
  auto c = part("orders", 0);  // created by a full fetch that resolved u1 to "orders"
  c.topic_id = u1;
  const int32_t id = cache.maybe_create(false, true, {c});
  std::map<int, std::string> names{{1, "orders"}, {2, ""}};  // u2 unknown for now
  auto name_of = [&](const protocol::uuid& u) { return names[u.bytes[0]]; };
  req::fetch_topic ft;  // an update of u1/0 (names are absent on the wire in 13+) and a new partition u2/0
  ft.topic_id = u1;
  req::fetch_partition fp;
  fp.partition = 0;
  fp.fetch_offset = 7;
  ft.partitions.push_back(fp);
  req::fetch_topic ft2 = ft;
  ft2.topic_id = u2;
  names[1] = "";  // u1 deleted since: the update keeps the session's name
  auto inc = cache.begin_incremental(id, 1, true, {ft, ft2}, {}, name_of);
  ASSERT_EQ(inc.topics.size(), 2u);
  EXPECT_EQ(inc.topics[0].topic, "orders");
  EXPECT_EQ(inc.topics[0].partitions[0].fetch_offset, 7);
  EXPECT_EQ(inc.topics[1].topic, "");  // still unknown
  names[2] = "payments";  // u2 known now: resolved on the next request, then kept
  inc = cache.begin_incremental(id, 2, true, {}, {}, name_of);
  EXPECT_EQ(inc.topics[1].topic, "payments");
  names[2] = "";
  inc = cache.begin_incremental(id, 3, true, {}, {}, name_of);
  EXPECT_EQ(inc.topics[1].topic, "payments");
}

TEST(FetchSessionCache, EvictionWhenFull) {
  manual_clock clock;
  fetch_session_cache cache(clock, 2, /*eviction_ms=*/1000);
  const int32_t a = cache.maybe_create(false, false, parts("a", 5));
  const int32_t b = cache.maybe_create(false, false, parts("b", 1));
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  // Full, nothing stale, both consumer sessions younger than eviction_ms: a consumer cannot evict; a follower
  // (privileged) evicts the smallest consumer session.
  EXPECT_EQ(cache.maybe_create(false, false, parts("c", 100)), 0);
  const int32_t f = cache.maybe_create(true, false, parts("f", 1));
  ASSERT_GT(f, 0);
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(cache.begin_incremental(b, 1, false, {}, {}).error, error_code::fetch_session_id_not_found);

  // Session a is used again at t=600; at t=1100 f (unused since 0) is stale: a new consumer session takes its slot.
  clock.advance_ms(600);
  ASSERT_EQ(cache.begin_incremental(a, 1, false, {}, {}).error, error_code::none);
  clock.advance_ms(500);
  const int32_t d = cache.maybe_create(false, false, parts("d", 1));
  ASSERT_GT(d, 0);
  EXPECT_EQ(cache.evictions(), 2);
  EXPECT_EQ(cache.begin_incremental(f, 1, false, {}, {}).error, error_code::fetch_session_id_not_found);

  // Nothing stale now (a used at 600, d made at 1100); a is older than eviction_ms, so a larger consumer session
  // may evict it, a smaller one may not (evictable entries compare by size).
  clock.advance_ms(200);  // t=1300
  ASSERT_EQ(cache.begin_incremental(a, 2, false, {}, {}).error, error_code::none);  // touch a: creation 0, old
  EXPECT_EQ(cache.maybe_create(false, false, parts("e", 2)), 0);
  const int32_t g = cache.maybe_create(false, false, parts("g", 6));
  ASSERT_GT(g, 0);
  EXPECT_EQ(cache.begin_incremental(a, 3, false, {}, {}).error, error_code::fetch_session_id_not_found);
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.total_partitions(), 7);
}

TEST(FetchSessionCache, ZeroSlotsMakesNoSession) {
  manual_clock clock;
  fetch_session_cache cache(clock, 0);
  EXPECT_EQ(cache.maybe_create(true, false, parts("a", 1)), 0);
  EXPECT_EQ(cache.size(), 0);
}

}  // namespace
}  // namespace sluice::broker
