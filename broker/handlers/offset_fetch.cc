// OffsetFetch (key 9): committed offsets of one group (v0-7) or several (v8+, KIP-709); a null topic list
// (v2+) asks for every committed partition. Partitions without a commit answer offset -1.
#include "broker/group_service.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::offset_fetch_response;

namespace {

using tp_list = std::optional<std::vector<groups::topic_partition>>;

/// `member_id` / `member_epoch` (v9+, KIP-848): the consumer group member asking, checked against its epoch.
task<groups::offset_fetch_result> fetch_one(broker_services& svc, const std::string& group_id, tp_list partitions,
                                            bool require_stable, std::optional<std::string> member_id = {},
                                            int32_t member_epoch = -1) {
  auto s = svc.groups.shard_for(group_id);
  if (!s) co_return groups::offset_fetch_result{groups::group_error::not_coordinator, {}};
  auto work = [group_id, partitions, require_stable, member_id, member_epoch](groups::group_coordinator& c) {
    return c.offset_fetch(group_id, partitions, require_stable, member_id, member_epoch);
  };
  co_return co_await group_run(svc.groups, s, std::move(work));
}

// Groups the coordinator's flat answer by topic, in order of first appearance.
template <typename Topic, typename Partition>
std::vector<Topic> by_topic(const std::vector<groups::offset_fetch_partition>& parts) {
  std::vector<Topic> out;
  for (const auto& p : parts) {
    if (out.empty() || out.back().name != p.tp.topic) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Topic& t) { return t.name == p.tp.topic; });
      if (it == out.end()) {
        out.push_back({});
        out.back().name = p.tp.topic;
      } else {
        std::rotate(it, it + 1, out.end());  // keep it last so the next partitions land in it
      }
    }
    Partition q;
    q.partition_index = p.tp.partition;
    q.committed_offset = p.offset;
    q.committed_leader_epoch = p.leader_epoch;
    q.metadata = p.metadata;
    q.error_code = to_kafka(p.error);
    out.back().partitions.push_back(std::move(q));
  }
  return out;
}

/// Kafka answers a requested topic without partitions with an entry of its own (no partitions), unlike most APIs.
template <typename Topic, typename RequestTopics>
void add_requested_empty_topics(std::vector<Topic>& out, const RequestTopics& requested) {
  for (const auto& t : requested) {
    if (!t.partition_indexes.empty()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const Topic& o) { return o.name == t.name; })) {
      out.push_back({});
      out.back().name = t.name;
    }
  }
}

/// Authorization (Kafka's handleOffsetFetchRequest): Describe on each topic. Requested partitions of a topic
/// without it are taken out of `parts` into the returned list (answered TOPIC_AUTHORIZATION_FAILED); for "every
/// partition" (null) the answer is filtered by `keep_authorized`.
std::vector<groups::topic_partition> take_denied(broker_services& svc, request_context& rc, tp_list& parts) {
  std::vector<groups::topic_partition> denied;
  if (!parts || svc.authorizer == nullptr) return denied;
  std::erase_if(*parts, [&](const groups::topic_partition& tp) {
    if (authorized(svc, rc, acl_operation::describe, resource_type::topic, tp.topic)) return false;
    denied.push_back(tp);
    return true;
  });
  return denied;
}

void keep_authorized(broker_services& svc, request_context& rc, groups::offset_fetch_result& r) {
  if (svc.authorizer == nullptr) return;
  std::erase_if(r.partitions, [&](const groups::offset_fetch_partition& p) {
    return !authorized(svc, rc, acl_operation::describe, resource_type::topic, p.tp.topic);
  });
}

template <typename Topic, typename Partition>
void add_denied(std::vector<Topic>& out, const std::vector<groups::topic_partition>& denied) {
  for (const auto& tp : denied) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Topic& t) { return t.name == tp.topic; });
    if (it == out.end()) {
      out.push_back({});
      out.back().name = tp.topic;
      it = out.end() - 1;
    }
    Partition q;
    q.partition_index = tp.partition;
    q.committed_offset = -1;
    q.committed_leader_epoch = -1;
    q.metadata = "";
    q.error_code = error_code::topic_authorization_failed;
    it->partitions.push_back(std::move(q));
  }
}

}  // namespace

task<response> offset_fetch(broker_services& svc, request_context& rc, protocol::offset_fetch_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  if (version >= 8) {
    for (auto& g : req.groups) {
      // v10 (KIP-848) names topics by id: resolved to names here; unknown ids are answered UNKNOWN_TOPIC_ID on each
      // of their partitions, and the answer names topics by id (a committed topic that no longer exists has none
      // and is left out).
      std::vector<response::offset_fetch_response_topics> unknown_ids;
      if (version >= 10 && g.topics) {
        std::erase_if(*g.topics, [&](protocol::offset_fetch_request::offset_fetch_request_topics& t) {
          if (auto known = svc.topics.find(from_wire(t.topic_id))) {
            t.name = known->name;
            return false;
          }
          response::offset_fetch_response_topics u;
          u.topic_id = t.topic_id;
          for (int32_t p : t.partition_indexes)
            u.partitions.push_back({p, -1, -1, "", error_code::unknown_topic_id, {}});
          unknown_ids.push_back(std::move(u));
          return true;
        });
      }
      tp_list parts;
      if (g.topics) {
        parts.emplace();
        for (const auto& t : *g.topics)
          for (int32_t p : t.partition_indexes) parts->push_back({t.name, p});
      }
      response::offset_fetch_response_group out;
      out.group_id = g.group_id;
      if (!authorized(svc, rc, acl_operation::describe, resource_type::group, g.group_id)) {
        out.error_code = error_code::group_authorization_failed;
        resp.groups.push_back(std::move(out));
        continue;
      }
      const auto denied = take_denied(svc, rc, parts);
      auto r = co_await fetch_one(svc, g.group_id, parts, req.require_stable, g.member_id, g.member_epoch);
      if (!g.topics) keep_authorized(svc, rc, r);
      out.error_code = to_kafka(r.error);
      out.topics = by_topic<response::offset_fetch_response_topics, response::offset_fetch_response_partitions>(r.partitions);
      add_denied<response::offset_fetch_response_topics, response::offset_fetch_response_partitions>(out.topics, denied);
      if (g.topics) add_requested_empty_topics(out.topics, *g.topics);
      if (version >= 10) {
        std::erase_if(out.topics, [&](response::offset_fetch_response_topics& t) {
          auto known = svc.topics.find(t.name);
          if (!known) return true;
          t.topic_id = to_wire(known->id);
          return false;
        });
        for (auto& u : unknown_ids) out.topics.push_back(std::move(u));
      }
      resp.groups.push_back(std::move(out));
    }
    co_return resp;
  }
  tp_list parts;
  if (req.topics) {
    parts.emplace();
    for (const auto& t : *req.topics)
      for (int32_t p : t.partition_indexes) parts->push_back({t.name, p});
  }
  if (!authorized(svc, rc, acl_operation::describe, resource_type::group, req.group_id)) {
    resp.error_code = error_code::group_authorization_failed;
    if (version < 2 && req.topics)  // no top-level error before v2: on every partition
      for (const auto& t : *req.topics) {
        response::offset_fetch_response_topic out;
        out.name = t.name;
        for (int32_t p : t.partition_indexes)
          out.partitions.push_back({p, -1, -1, "", error_code::group_authorization_failed, {}});
        resp.topics.push_back(std::move(out));
      }
    co_return resp;
  }
  const auto denied = take_denied(svc, rc, parts);
  auto r = co_await fetch_one(svc, req.group_id, parts, version >= 7 && req.require_stable);
  if (!req.topics) keep_authorized(svc, rc, r);
  if (to_kafka(r.error) != error_code::none && version < 2 && parts) {
    // No top-level error before v2: Kafka puts the group's error on every partition.
    for (const auto& tp : *parts) r.partitions.push_back({tp, -1, -1, "", r.error});
  }
  resp.error_code = to_kafka(r.error);
  resp.topics = by_topic<response::offset_fetch_response_topic, response::offset_fetch_response_partition>(r.partitions);
  add_denied<response::offset_fetch_response_topic, response::offset_fetch_response_partition>(resp.topics, denied);
  if (req.topics) add_requested_empty_topics(resp.topics, *req.topics);
  co_return resp;
}

}  // namespace sluice::broker::handlers
