// OffsetForLeaderEpoch (key 23, KIP-101/KIP-279): for each partition, the largest leader epoch <= the
// requested one that this leader knows and the offset where it ends (the next epoch's start offset, or
// the LEO for the current epoch). Followers use it to truncate a divergent tail before fetching;
// consumers (KIP-320) to detect log truncation.
#include "broker/call_on.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::offset_for_leader_epoch_response;

task<response> offset_for_leader_epoch(broker_services& svc, request_context& rc, protocol::offset_for_leader_epoch_request& req) {
  response resp;
  const bool follower = rc.header.api_version >= 3 && req.replica_id >= 0;
  const bool follower_denied = follower && !cluster_authorized(svc, rc, acl_operation::cluster_action);
  for (const auto& rt : req.topics) {
    response::offset_for_leader_topic_result tr;
    tr.topic = rt.topic;
    auto t = svc.topics.find(rt.topic);
    const bool denied =
        follower_denied || (!follower && !authorized(svc, rc, acl_operation::describe, resource_type::topic, rt.topic));
    for (const auto& rp : rt.partitions) {
      response::epoch_end_offset out;
      out.partition = rp.partition;
      out.leader_epoch = -1;
      out.end_offset = -1;
      auto p = partition_of(t, rp.partition);
      if (denied) {
        out.error_code = error_code::topic_authorization_failed;
      } else if (!p) {
        out.error_code = missing_partition_error(t, rp.partition);
      } else if (!p->is_leader()) {
        out.error_code = error_code::not_leader_or_follower;
      } else if (rp.current_leader_epoch >= 0 && rp.current_leader_epoch != p->leader_epoch()) {
        out.error_code = rp.current_leader_epoch < p->leader_epoch() ? error_code::fenced_leader_epoch
                                                                     : error_code::unknown_leader_epoch;
      } else {
        const int32_t wanted = rp.leader_epoch;
        auto op = call_on(p->strand(), [p, wanted] { return p->end_offset_for_epoch(wanted); });
        const auto found = co_await std::move(op);
        out.error_code = error_code::none;
        out.leader_epoch = found.epoch;
        out.end_offset = found.start_offset;
      }
      tr.partitions.push_back(out);
    }
    resp.topics.push_back(std::move(tr));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
