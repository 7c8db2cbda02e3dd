// ListOffsets (key 2): earliest (-2), latest (-1), earliest-local (-4, KIP-405) and by timestamp.
// Max timestamp (-3, KIP-734) and exact by-timestamp lookup come with the time index (storage issue);
// until then a timestamp query answers the latest offset.
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::list_offsets_response;

namespace {
constexpr int64_t kLatest = -1, kEarliest = -2, kEarliestLocal = -4;
constexpr int8_t kReadCommitted = 1;
}  // namespace

task<response> list_offsets(handler_context& hc, request_context& rc, protocol::list_offsets_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  for (const auto& lt : req.topics) {
    response::list_offsets_topic_response tr;
    tr.name = lt.name;
    auto t = hc.topics.find(lt.name);
    for (const auto& lp : lt.partitions) {
      response::list_offsets_partition_response pr;
      pr.partition_index = lp.partition_index;
      pr.timestamp = -1;
      pr.offset = -1;
      pr.leader_epoch = -1;
      if (!t || lp.partition_index < 0 || lp.partition_index >= static_cast<int32_t>(t->partitions.size())) {
        pr.error_code = error_code::unknown_topic_or_partition;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      const auto& p = t->partitions[static_cast<size_t>(lp.partition_index)];
      if (lp.current_leader_epoch >= 0 && lp.current_leader_epoch != p->leader_epoch()) {
        pr.error_code = lp.current_leader_epoch < p->leader_epoch() ? error_code::fenced_leader_epoch
                                                                     : error_code::unknown_leader_epoch;
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      pr.error_code = error_code::none;
      pr.leader_epoch = p->leader_epoch();
      // read_committed sees up to the last stable offset, equal to the high watermark without transactions.
      const int64_t latest = p->high_watermark();
      (void)kReadCommitted;
      if (lp.timestamp == kEarliest || lp.timestamp == kEarliestLocal) {
        pr.offset = p->log_start_offset();
      } else {
        pr.offset = latest;
      }
      if (version == 0) pr.old_style_offsets = {pr.offset};
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
