// OffsetCommit (key 8): stores committed offsets in __consumer_offsets; answers after the append.
// Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION, as Kafka's metadata check does.
#include <algorithm>
#include <map>

#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::offset_commit_response;

task<response> offset_commit(broker_services& svc, request_context& rc, protocol::offset_commit_request& req) {
  const int16_t version = rc.header.api_version;
  // v10 (KIP-848) names topics by id: each is resolved to its name first (Kafka: an unknown id is the empty name,
  // and its partitions answer UNKNOWN_TOPIC_ID).
  std::vector<bool> unknown_id(req.topics.size(), false);
  if (version >= 10) {
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      auto t = svc.topics.find(from_wire(req.topics[ti].topic_id));
      req.topics[ti].name = t ? t->name : "";
      unknown_id[ti] = !t;
    }
  }
  // Answers indexed like the request.
  std::vector<std::vector<error_code>> codes(req.topics.size());
  groups::offset_commit_request r;
  r.group_id = req.group_id;
  r.generation_id = version >= 1 ? req.generation_id_or_member_epoch : -1;
  r.member_id = version >= 1 ? req.member_id : "";
  r.group_instance_id = req.group_instance_id;
  r.retention_time_ms = (version >= 2 && version <= 4) ? req.retention_time_ms : -1;
  r.api_version = version;
  std::vector<std::pair<size_t, size_t>> where;  // r.partitions[i] answers codes[first][second]
  const bool group_denied = !authorized(svc, rc, acl_operation::read, resource_type::group, req.group_id);
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    auto topic = svc.topics.find(t.name);
    const bool topic_denied = !group_denied && !authorized(svc, rc, acl_operation::read, resource_type::topic, t.name);
    codes[ti].resize(t.partitions.size(), error_code::none);
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const auto& p = t.partitions[pi];
      if (unknown_id[ti] && !group_denied) {
        codes[ti][pi] = error_code::unknown_topic_id;
        continue;
      }
      if (group_denied || topic_denied) {
        codes[ti][pi] = group_denied ? error_code::group_authorization_failed : error_code::topic_authorization_failed;
        continue;
      }
      if (!topic || p.partition_index < 0 || p.partition_index >= static_cast<int32_t>(topic->partitions.size())) {
        codes[ti][pi] = error_code::unknown_topic_or_partition;
        continue;
      }
      r.partitions.push_back({{t.name, p.partition_index}, p.committed_offset, p.committed_leader_epoch,
                              p.committed_metadata, version == 1 ? p.commit_timestamp : -1, topic->id});
      where.emplace_back(ti, pi);
    }
  }
  if (!r.partitions.empty()) {
    auto s = svc.groups.shard_for(req.group_id);
    if (!s) {
      for (auto [ti, pi] : where) codes[ti][pi] = error_code::not_coordinator;
    } else {
      auto op = [r = std::move(r)](groups::group_coordinator& c) mutable { return c.offset_commit(std::move(r)); };
      auto result = co_await group_write_call<groups::offset_commit_result>(svc.groups, s, std::move(op));
      for (size_t i = 0; i < where.size() && i < result.partitions.size(); ++i) {
        codes[where[i].first][where[i].second] = to_kafka(result.partitions[i].error);
      }
    }
  }
  response resp;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    // Kafka answers an unknown topic in KafkaApis (an entry even without partitions); a known topic's partitions
    // come back from the coordinator, so a known topic named without partitions gets no entry.
    if (req.topics[ti].partitions.empty() && !unknown_id[ti] && svc.topics.find(req.topics[ti].name)) continue;
    response::offset_commit_response_topic t;
    t.name = req.topics[ti].name;
    t.topic_id = req.topics[ti].topic_id;
    for (size_t pi = 0; pi < req.topics[ti].partitions.size(); ++pi) {
      t.partitions.push_back({req.topics[ti].partitions[pi].partition_index, codes[ti][pi]});
    }
    if (version >= 10) {
      // Kafka's answer keys topics by id from v10: entries of one id (two unknown ones: the zero id) make one.
      auto same = std::find_if(resp.topics.begin(), resp.topics.end(),
                               [&](const auto& o) { return o.topic_id == t.topic_id; });
      if (same != resp.topics.end()) {
        same->partitions.insert(same->partitions.end(), t.partitions.begin(), t.partitions.end());
        continue;
      }
    }
    resp.topics.push_back(std::move(t));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
