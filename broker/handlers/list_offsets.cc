// ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3, KIP-734), earliest-local (-4,
// KIP-405), latest tiered (-5, KIP-1005) and earliest pending upload (-6, v11, KIP-1023) as Kafka answers them
// without tiered storage, and by timestamp through the time index (KIP-79).
#include <map>
#include <set>
#include <string>
#include <utility>

#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::list_offsets_response;

namespace {
constexpr int64_t kLatest = -1, kEarliest = -2, kMaxTimestamp = -3, kEarliestLocal = -4, kLatestTiered = -5,
                  kEarliestPendingUpload = -6;

/// The version a special timestamp needs (Kafka's ListOffsetsRequest: -3 v7 (KIP-734), -4 v8 (KIP-405),
/// -5 v9 (KIP-1005), -6 v11 (KIP-1023)); older versions get UNSUPPORTED_VERSION for the partition.
int16_t version_needed(int64_t timestamp) {
  switch (timestamp) {
    case kMaxTimestamp: return 7;
    case kEarliestLocal: return 8;
    case kLatestTiered: return 9;
    case kEarliestPendingUpload: return 11;
    default: return 0;
  }
}

struct lookup {
  result<int64_t> offset = int64_t{-1};
  int64_t timestamp = -1;
};
}  // namespace

task<response> list_offsets(broker_services& svc, request_context& rc, protocol::list_offsets_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  // v1+: a partition named twice gets one answer, INVALID_REQUEST (Kafka's duplicatePartitions).
  std::map<std::pair<std::string, int32_t>, int> named;
  std::set<std::pair<std::string, int32_t>> duplicates_answered;
  if (version >= 1)
    for (const auto& lt : req.topics)
      for (const auto& lp : lt.partitions) ++named[{lt.name, lp.partition_index}];
  for (const auto& lt : req.topics) {
    response::list_offsets_topic_response tr;
    tr.name = lt.name;
    auto t = svc.topics.find(lt.name);
    const bool denied = !authorized(svc, rc, acl_operation::describe, resource_type::topic, lt.name);
    for (const auto& lp : lt.partitions) {
      response::list_offsets_partition_response pr;
      pr.partition_index = lp.partition_index;
      pr.timestamp = -1;
      pr.offset = -1;
      pr.leader_epoch = -1;
      if (denied) {
        pr.error_code = error_code::topic_authorization_failed;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      if (version >= 1 && named[{lt.name, lp.partition_index}] > 1) {
        if (!duplicates_answered.insert({lt.name, lp.partition_index}).second) continue;
        pr.error_code = error_code::invalid_request;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      if (version < version_needed(lp.timestamp)) {  // before the partition is looked up, as Kafka
        pr.error_code = error_code::unsupported_version;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      auto p = partition_of(t, lp.partition_index);
      if (!p || !p->is_leader()) {
        pr.error_code = p ? error_code::not_leader_or_follower : missing_partition_error(t, lp.partition_index);
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      if (lp.current_leader_epoch >= 0 && lp.current_leader_epoch != p->leader_epoch()) {
        pr.error_code = lp.current_leader_epoch < p->leader_epoch() ? error_code::fenced_leader_epoch
                                                                     : error_code::unknown_leader_epoch;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      pr.error_code = error_code::none;
      pr.leader_epoch = p->leader_epoch();
      // KIP-98: latest is the last stable offset for read_committed (v2+ isolation_level 1), else the HW.
      if (lp.timestamp == kLatest) {
        pr.offset = version >= 2 && req.isolation_level == 1 ? p->last_stable_offset() : p->high_watermark();
      } else if (lp.timestamp == kEarliest || lp.timestamp == kEarliestLocal) {
        pr.offset = p->log_start_offset();
      } else if (lp.timestamp == kLatestTiered || lp.timestamp == kEarliestPendingUpload) {
        // KIP-1005 and KIP-1023 without a remote log: Kafka 4.4 answers offset -1, leader epoch -1 (nothing is
        // tiered, nothing waits for upload).
        pr.offset = -1;
        pr.leader_epoch = -1;
      } else if (lp.timestamp == kMaxTimestamp || lp.timestamp >= 0) {
        const int64_t ts = lp.timestamp;
        auto lookup_op = call_on(p->strand(), [p, ts] {
          auto r = ts == kMaxTimestamp ? p->max_timestamp_and_offset() : p->offset_for_timestamp(ts);
          if (!r) return lookup{r.err(), -1};
          return lookup{r->offset, r->timestamp};
        });
        auto found = co_await std::move(lookup_op);
        if (!found.offset) {
          pr.error_code = to_kafka(found.offset.err());
        } else {
          pr.offset = *found.offset;
          pr.timestamp = found.timestamp;  // the found record's timestamp, as Kafka answers
          if (pr.offset >= p->high_watermark()) pr.offset = pr.timestamp = -1;  // never above what consumers see
          if (pr.offset < 0) pr.leader_epoch = -1;  // nothing found: Kafka answers no epoch
        }
      } else {
        // A negative timestamp no version defines (-7 and below): Kafka 4.4 answers UNSUPPORTED_VERSION, no epoch.
        pr.error_code = error_code::unsupported_version;
        pr.leader_epoch = -1;
      }
      if (version == 0) pr.old_style_offsets = {pr.offset};
      tr.partitions.push_back(std::move(pr));
    }
    if (!lt.partitions.empty()) resp.topics.push_back(std::move(tr));  // Kafka: no entry for a topic without partitions
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
