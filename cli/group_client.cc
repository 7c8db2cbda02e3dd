#include "cli/group_client.h"

#include <fmt/format.h>

#include <algorithm>

#include "protocol/messages/consumer_protocol_assignment.h"
#include "protocol/messages/consumer_protocol_subscription.h"
#include "protocol/messages/offset_commit.h"
#include "protocol/messages/offset_fetch.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace sluice::cli {

namespace {
constexpr int16_t consumer_protocol_version = 3;  // what kafka-clients 3.x/4.x write
}  // namespace

std::vector<uint8_t> encode_subscription(const std::vector<std::string>& topics, const assignment& owned,
                                         int32_t generation) {
  protocol::consumer_protocol_subscription s;
  s.topics = topics;
  for (const auto& [topic, partitions] : owned) {
    protocol::consumer_protocol_subscription::topic_partition tp;
    tp.topic = topic;
    tp.partitions = partitions;
    s.owned_partitions.push_back(std::move(tp));
  }
  s.generation_id = generation;
  protocol::writer w;
  w.write_int16(consumer_protocol_version);
  s.encode(w, consumer_protocol_version);
  return w.finish().bytes;
}

std::optional<std::vector<std::string>> decode_subscription_topics(std::span<const uint8_t> bytes) {
  if (bytes.size() < 2) return std::nullopt;
  protocol::reader r(bytes);
  const int16_t version = r.read_int16("version");
  if (!r.ok() || version < 0) return std::nullopt;
  protocol::consumer_protocol_subscription s;
  s.decode(r, std::min(version, consumer_protocol_version));
  if (!r.ok()) return std::nullopt;
  return s.topics;
}

std::vector<uint8_t> encode_assignment(const assignment& a) {
  protocol::consumer_protocol_assignment pa;
  for (const auto& [topic, partitions] : a) {
    protocol::consumer_protocol_assignment::topic_partition tp;
    tp.topic = topic;
    tp.partitions = partitions;
    pa.assigned_partitions.push_back(std::move(tp));
  }
  protocol::writer w;
  w.write_int16(consumer_protocol_version);
  pa.encode(w, consumer_protocol_version);
  return w.finish().bytes;
}

assignment decode_assignment(std::span<const uint8_t> bytes) {
  assignment out;
  if (bytes.size() < 2) return out;
  protocol::reader r(bytes);
  const int16_t version = r.read_int16("version");
  if (!r.ok() || version < 0) return out;
  protocol::consumer_protocol_assignment pa;
  pa.decode(r, std::min(version, consumer_protocol_version));
  if (!r.ok()) return out;
  for (auto& tp : pa.assigned_partitions) {
    auto& list = out[tp.topic];
    list.insert(list.end(), tp.partitions.begin(), tp.partitions.end());
    std::sort(list.begin(), list.end());
  }
  return out;
}

std::map<std::string, assignment> range_assign(const std::map<std::string, std::vector<std::string>>& subscriptions,
                                               const std::map<std::string, int32_t>& partition_counts) {
  std::map<std::string, assignment> out;
  std::map<std::string, std::vector<std::string>> members_of;  // topic -> member ids, sorted (std::map order)
  for (const auto& [member, topics] : subscriptions) {
    out[member];
    for (const auto& t : topics) members_of[t].push_back(member);
  }
  for (auto& [topic, members] : members_of) {
    auto count = partition_counts.find(topic);
    if (count == partition_counts.end() || count->second <= 0) continue;
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    const int32_t n = count->second, m = static_cast<int32_t>(members.size());
    const int32_t per = n / m, extra = n % m;
    for (int32_t i = 0; i < m; ++i) {
      const int32_t start = per * i + std::min(i, extra);
      const int32_t length = per + (i < extra ? 1 : 0);
      if (length == 0) continue;
      auto& list = out[members[i]][topic];
      for (int32_t p = start; p < start + length; ++p) list.push_back(p);
    }
  }
  return out;
}

std::map<topic_partition, committed_offset> offset_fetch(connection& c, const std::string& group,
                                                         const std::optional<assignment>& topics) {
  const int16_t v = c.pick(protocol::api_key::offset_fetch, 1, 9);
  protocol::offset_fetch_request req;
  if (v >= 8) {
    protocol::offset_fetch_request::offset_fetch_request_group g;
    g.group_id = group;
    if (topics) {
      std::vector<protocol::offset_fetch_request::offset_fetch_request_topics> list;
      for (const auto& [name, partitions] : *topics) {
        protocol::offset_fetch_request::offset_fetch_request_topics t;
        t.name = name;
        t.partition_indexes = partitions;
        list.push_back(std::move(t));
      }
      g.topics = std::move(list);
    } else {
      g.topics = std::nullopt;
    }
    req.groups.push_back(std::move(g));
  } else {
    req.group_id = group;
    if (topics) {
      std::vector<protocol::offset_fetch_request::offset_fetch_request_topic> list;
      for (const auto& [name, partitions] : *topics) {
        protocol::offset_fetch_request::offset_fetch_request_topic t;
        t.name = name;
        t.partition_indexes = partitions;
        list.push_back(std::move(t));
      }
      req.topics = std::move(list);
    } else {
      if (v < 2) throw failure(exit_code::kafka_error, "UNSUPPORTED_VERSION: OffsetFetch of every topic needs v2+");
      req.topics = std::nullopt;
    }
  }
  auto resp = c.call<protocol::offset_fetch_response>(req, v);
  std::map<topic_partition, committed_offset> out;
  auto take = [&](const std::string& topic, const auto& p) {
    if (p.error_code != protocol::error_code::none)
      kafka_failure(p.error_code, std::nullopt, fmt::format("OffsetFetch of group '{}' ({}-{})", group, topic, p.partition_index));
    if (p.committed_offset < 0) return;
    committed_offset& o = out[{topic, p.partition_index}];
    o.offset = p.committed_offset;
    o.leader_epoch = p.committed_leader_epoch;
    o.metadata = p.metadata;
  };
  if (v >= 8) {
    for (const auto& g : resp.groups) {
      if (g.error_code != protocol::error_code::none)
        kafka_failure(g.error_code, std::nullopt, fmt::format("OffsetFetch of group '{}'", group));
      for (const auto& t : g.topics)
        for (const auto& p : t.partitions) take(t.name, p);
    }
  } else {
    if (resp.error_code != protocol::error_code::none)
      kafka_failure(resp.error_code, std::nullopt, fmt::format("OffsetFetch of group '{}'", group));
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions) take(t.name, p);
  }
  return out;
}

std::map<topic_partition, protocol::error_code> offset_commit(connection& c, const std::string& group,
                                                              int32_t generation, const std::string& member_id,
                                                              const std::map<topic_partition, int64_t>& offsets) {
  std::map<topic_partition, protocol::error_code> out;
  if (offsets.empty()) return out;
  const int16_t v = c.pick(protocol::api_key::offset_commit, 2, 9);
  protocol::offset_commit_request req;
  req.group_id = group;
  req.generation_id_or_member_epoch = generation;
  req.member_id = member_id;
  for (const auto& [tp, offset] : offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.first) {
      protocol::offset_commit_request::offset_commit_request_topic t;
      t.name = tp.first;
      req.topics.push_back(std::move(t));
    }
    protocol::offset_commit_request::offset_commit_request_partition p;
    p.partition_index = tp.second;
    p.committed_offset = offset;
    p.committed_metadata = std::string();
    req.topics.back().partitions.push_back(std::move(p));
  }
  auto resp = c.call<protocol::offset_commit_response>(req, v);
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) out[{t.name, p.partition_index}] = p.error_code;
  return out;
}

protocol::describe_groups_response::described_group describe_group(connection& c, const std::string& group) {
  const int16_t v = c.pick(protocol::api_key::describe_groups, 0, 5);
  protocol::describe_groups_request req;
  req.groups.push_back(group);
  auto resp = c.call<protocol::describe_groups_response>(req, v);
  if (resp.groups.empty()) throw failure(exit_code::kafka_error, fmt::format("DescribeGroups of '{}': empty answer", group));
  auto g = std::move(resp.groups.front());
  if (g.error_code != protocol::error_code::none)
    kafka_failure(g.error_code, std::nullopt, fmt::format("DescribeGroups of '{}'", group));
  return g;
}

}  // namespace sluice::cli
