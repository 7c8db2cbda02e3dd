#pragma once
// Fault injection's answers (broker/fault_injection.h): the response a request gets when a rule's action is
// "error", built from the request as Kafka's AbstractRequest.getErrorResponse builds it (every partition, group
// or coordinator key the request names carries the error), and whether a request names a topic.
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "protocol/messages/all.h"
#include "protocol/messages/fields.h"

namespace sluice::broker::handlers {

using protocol::error_code;

// Per-API answers. Each returns true when it filled `out`.
inline bool fault_error(const protocol::produce_request& q, int16_t, error_code e, protocol::produce_response& out) {
  for (const auto& t : q.topic_data) {
    auto& rt = out.responses.emplace_back();
    rt.name = t.name;
    rt.topic_id = t.topic_id;  // v13+ name topics by id
    for (const auto& p : t.partition_data) {
      auto& rp = rt.partition_responses.emplace_back();
      rp.index = p.index;
      rp.error_code = e;
      rp.base_offset = -1;
    }
  }
  return true;
}

inline bool fault_error(const protocol::fetch_request& q, int16_t, error_code e, protocol::fetch_response& out) {
  for (const auto& t : q.topics) {
    auto& rt = out.responses.emplace_back();
    rt.topic = t.topic;
    rt.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition;
      rp.error_code = e;
      rp.high_watermark = -1;
    }
  }
  out.session_id = 0;
  return true;
}

/// Every requested partition answered with `e`, for APIs whose topics carry `name` and whose partitions carry
/// `partition_index` in both request and response (ListOffsets, OffsetCommit).
template <typename InTopics, typename OutTopics>
bool named_partitions_error(const InTopics& in, OutTopics& out, error_code e) {
  for (const auto& t : in) {
    auto& rt = out.emplace_back();
    rt.name = t.name;
    for (const auto& p : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      rp.error_code = e;
    }
  }
  return true;
}

inline bool fault_error(const protocol::list_offsets_request& q, int16_t, error_code e,
                        protocol::list_offsets_response& out) {
  return named_partitions_error(q.topics, out.topics, e);
}

inline bool fault_error(const protocol::metadata_request& q, int16_t, error_code e, protocol::metadata_response& out) {
  // Kafka answers every named topic with the error (and no brokers); a request for all topics gets none.
  if (q.topics)
    for (const auto& t : *q.topics) {
      auto& rt = out.topics.emplace_back();
      rt.name = t.name;
      rt.topic_id = t.topic_id;
      rt.error_code = e;
    }
  return true;
}

inline bool fault_error(const protocol::offset_commit_request& q, int16_t, error_code e,
                        protocol::offset_commit_response& out) {
  named_partitions_error(q.topics, out.topics, e);
  for (size_t i = 0; i < q.topics.size(); ++i) out.topics[i].topic_id = q.topics[i].topic_id;  // v10+: by id
  return true;
}

inline bool fault_error(const protocol::offset_fetch_request& q, int16_t v, error_code e,
                        protocol::offset_fetch_response& out) {
  if (v >= 8) {
    for (const auto& g : q.groups) {
      auto& rg = out.groups.emplace_back();
      rg.group_id = g.group_id;
      rg.error_code = e;
    }
  } else {
    out.error_code = e;  // v2-7: the group's error at the top (v0-1 have it per partition only)
    if (q.topics)
      for (const auto& t : *q.topics) {
        auto& rt = out.topics.emplace_back();
        rt.name = t.name;
        for (int32_t p : t.partition_indexes) {
          auto& rp = rt.partitions.emplace_back();
          rp.partition_index = p;
          rp.committed_offset = -1;
          rp.error_code = e;
        }
      }
  }
  return true;
}

inline bool fault_error(const protocol::find_coordinator_request& q, int16_t v, error_code e,
                        protocol::find_coordinator_response& out) {
  if (v >= 4) {
    for (const auto& k : q.coordinator_keys) {
      auto& c = out.coordinators.emplace_back();
      c.key = k;
      c.node_id = -1;
      c.port = -1;
      c.error_code = e;
      c.error_message = std::nullopt;
    }
  } else {
    out.error_code = e;
    out.node_id = -1;
    out.port = -1;
    out.error_message = std::nullopt;
  }
  return true;
}

/// Every other API: the response's top-level error code where its schema has one (JoinGroup, SyncGroup,
/// Heartbeat, LeaveGroup, InitProducerId, ListGroups, EndTxn, AddOffsetsToTxn, DescribeCluster, ...); false
/// when it has none (the API cannot get an "error" fault).
template <typename Req, typename Resp>
bool fault_error(const Req&, int16_t, error_code e, Resp& out) {
  if constexpr (requires { out.error_code = e; }) {
    out.error_code = e;
    return true;
  } else {
    return false;
  }
}

/// Whether an "error" fault can be answered for API `key`.
inline bool fault_error_supported(int16_t key) {
  bool supported = false;
  protocol::visit_request_type(key, [&](auto req_tag) {
    protocol::visit_response_type(key, [&](auto resp_tag) {
      typename decltype(req_tag)::type q;
      typename decltype(resp_tag)::type r;
      supported = fault_error(q, 0, error_code::unknown_server_error, r);
    });
  });
  return supported;
}

namespace detail {
template <typename T>
struct is_vec : std::false_type {};
template <typename T>
struct is_vec<std::vector<T>> : std::true_type {};
template <typename T>
struct is_opt : std::false_type {};
template <typename T>
struct is_opt<std::optional<T>> : std::true_type {};

template <typename T, typename P>
void walk_topics(const T& x, std::string_view field, P& found) {
  if (found.hit) return;
  if constexpr (protocol::has_field_list<T>) {
    protocol::field_list<T>::each(x, [&](const auto& member, const protocol::field_info& info) {
      walk_topics(member, info.name, found);
    });
  } else if constexpr (is_opt<T>::value) {
    if (x) walk_topics(*x, field, found);
  } else if constexpr (is_vec<T>::value) {
    for (const auto& e : x) walk_topics(e, field, found);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if ((field == "name" || field == "topic" || field == "topic_name") && x == found.name) found.hit = true;
  } else if constexpr (std::is_same_v<T, protocol::uuid>) {
    if (field == "topic_id" && found.id && x == *found.id) found.hit = true;
  }
}
}  // namespace detail

/// True when `req` names topic `name` in a topic-name field, or its id `id` in a topic-id field.
template <typename Req>
bool request_mentions_topic(const Req& req, std::string_view name, std::optional<protocol::uuid> id) {
  struct {
    std::string_view name;
    std::optional<protocol::uuid> id;
    bool hit = false;
  } found{name, id};
  detail::walk_topics(req, "", found);
  return found.hit;
}

}  // namespace sluice::broker::handlers
