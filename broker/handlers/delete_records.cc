// DeleteRecords (key 21): moves partitions' log start offsets forward (KIP-107); whole segments below the
// new start are deleted and the checkpoint is written before answering.
#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::delete_records_response;

task<response> delete_records(broker_services& svc, request_context&, protocol::delete_records_request& req) {
  response resp;
  bool moved = false;
  for (const auto& dt : req.topics) {
    response::delete_records_topic_result tr;
    tr.name = dt.name;
    auto t = svc.topics.find(dt.name);
    for (const auto& dp : dt.partitions) {
      response::delete_records_partition_result pr;
      pr.partition_index = dp.partition_index;
      pr.low_watermark = -1;
      auto p = partition_of(t, dp.partition_index);
      if (!p || !p->is_leader()) {
        pr.error_code = p ? error_code::not_leader_or_follower : missing_partition_error(t, dp.partition_index);
      } else {
        const int64_t offset = dp.offset;
        auto delete_op = call_on(p->strand(), [p, offset] { return p->delete_records_before(offset); });
        auto r = co_await std::move(delete_op);
        if (r) {
          pr.error_code = error_code::none;
          pr.low_watermark = *r;
          moved = true;
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
