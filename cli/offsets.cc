#include "cli/offsets.h"

#include <fmt/format.h>

#include "protocol/messages/list_offsets.h"

namespace sluice::cli {

std::map<int32_t, int64_t> list_offsets(cluster& kafka, const topic_info& topic, const std::vector<int32_t>& partitions,
                                        int64_t timestamp) {
  std::map<int32_t, std::vector<int32_t>> by_leader;
  for (int32_t p : partitions) {
    if (p < 0 || static_cast<size_t>(p) >= topic.partitions.size())
      throw failure(exit_code::kafka_error,
                    fmt::format("UNKNOWN_TOPIC_OR_PARTITION: topic '{}' has no partition {}", topic.name, p));
    int32_t leader = topic.partitions[p].leader;
    if (leader < 0)
      throw failure(exit_code::kafka_error,
                    fmt::format("LEADER_NOT_AVAILABLE: partition {}-{} has no leader", topic.name, p));
    by_leader[leader].push_back(p);
  }
  std::map<int32_t, int64_t> out;
  for (const auto& [leader, list] : by_leader) {
    auto& c = kafka.node(leader);
    const int16_t v = c.pick(protocol::api_key::list_offsets, 1, 10);
    protocol::list_offsets_request req;
    req.replica_id = -1;  // a consumer
    req.isolation_level = 0;
    req.timeout_ms = static_cast<int32_t>(kafka.timeout().count());
    protocol::list_offsets_request::list_offsets_topic t;
    t.name = topic.name;
    for (int32_t p : list) {
      protocol::list_offsets_request::list_offsets_partition lp;
      lp.partition_index = p;
      lp.timestamp = timestamp;
      t.partitions.push_back(lp);
    }
    req.topics.push_back(std::move(t));
    auto resp = c.call<protocol::list_offsets_response>(req, v);
    for (const auto& rt : resp.topics)
      for (const auto& rp : rt.partitions) {
        if (rp.error_code != protocol::error_code::none)
          kafka_failure(rp.error_code, std::nullopt, fmt::format("ListOffsets of {}-{}", rt.name, rp.partition_index));
        out[rp.partition_index] = rp.offset;
      }
  }
  return out;
}

}  // namespace sluice::cli
