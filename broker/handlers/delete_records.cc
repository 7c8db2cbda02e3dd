// DeleteRecords (key 21): moves partitions' log start offsets forward (KIP-107); whole segments below the
// new start are deleted and the checkpoint is written before answering. In cluster mode a partition is answered
// once every in-sync follower reports a log start at or past the new one (Kafka's DelayedDeleteRecords: its
// low_watermark), so no replica serves the deleted records after the answer; REQUEST_TIMED_OUT after timeout_ms.
#include <map>
#include <string_view>
#include <utility>

#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::delete_records_response;

task<response> delete_records(broker_services& svc, request_context& rc, protocol::delete_records_request& req) {
  // Kafka keys the request by topic-partition: a partition named twice is answered once, for its last offset; a
  // topic named twice is one topic of the answer, and one with no partitions is not answered.
  struct wanted_topic {
    const std::string* name;
    std::vector<std::pair<int32_t, int64_t>> partitions;  // partition, offset
  };
  std::vector<wanted_topic> wanted;
  std::map<std::string_view, size_t> topic_at;
  std::map<std::pair<std::string_view, int32_t>, size_t> partition_at;
  for (const auto& dt : req.topics) {
    for (const auto& dp : dt.partitions) {
      auto [t, new_topic] = topic_at.try_emplace(dt.name, wanted.size());
      if (new_topic) wanted.push_back({&dt.name, {}});
      auto& parts = wanted[t->second].partitions;
      auto [at, new_partition] = partition_at.try_emplace({dt.name, dp.partition_index}, parts.size());
      if (new_partition) parts.emplace_back(dp.partition_index, dp.offset);
      else parts[at->second].second = dp.offset;
    }
  }
  response resp;
  bool moved = false;
  const auto until = wait_deadline::after(svc.clock, req.timeout_ms);
  for (const auto& w : wanted) {
    response::delete_records_topic_result tr;
    tr.name = *w.name;
    auto t = svc.topics.find(*w.name);
    const bool denied = !authorized(svc, rc, acl_operation::remove, resource_type::topic, *w.name);
    for (const auto& [index, offset] : w.partitions) {
      response::delete_records_partition_result pr;
      pr.partition_index = index;
      pr.low_watermark = -1;
      auto p = partition_of(t, index);
      if (denied) {
        pr.error_code = error_code::topic_authorization_failed;
      } else if (!p || !p->is_leader()) {
        pr.error_code = p ? error_code::not_leader_or_follower : missing_partition_error(t, index);
      } else {
        auto delete_op = call_on(p->strand(), [p, offset] { return p->delete_records_before(offset); });
        auto r = co_await std::move(delete_op);
        if (r) {
          moved = true;
          // GCC 12 destroys temporaries of a co_await full-expression twice: build the operation first.
          auto wait_op = p->wait_for_low_watermark(*r, until);
          const auto w = co_await std::move(wait_op);
          using outcome = low_watermark_wait::outcome;
          pr.error_code = w.how == outcome::reached     ? error_code::none
                          : w.how == outcome::not_leader ? error_code::not_leader_or_follower
                                                         : error_code::request_timed_out;
          if (w.how != outcome::not_leader) pr.low_watermark = w.low_watermark;
        } else {
          pr.error_code = to_kafka(r.err());
        }
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  if (moved) svc.topics.write_checkpoints();  // the new log start offsets survive a crash
  co_return resp;
}

}  // namespace sluice::broker::handlers
