#include "cli/fetcher.h"

#include <fmt/format.h>

#include <thread>

#include "protocol/messages/fetch.h"
#include "storage/compression.h"
#include "storage/record_batch.h"

namespace sluice::cli {

namespace {
bool retriable(protocol::error_code e) {
  using protocol::error_code;
  return e == error_code::not_leader_or_follower || e == error_code::leader_not_available ||
         e == error_code::fenced_leader_epoch || e == error_code::unknown_leader_epoch ||
         e == error_code::request_timed_out || e == error_code::offset_not_available;
}
}  // namespace

fetcher::fetcher(context& ctx, std::string topic, std::map<int32_t, int64_t> positions, int32_t max_wait_ms)
    : ctx_(ctx), topic_(std::move(topic)), positions_(std::move(positions)), max_wait_ms_(max_wait_ms) {
  for (const auto& [p, _] : positions_) high_watermarks_[p] = -1;
}

bool fetcher::at_end() const {
  for (const auto& [p, pos] : positions_) {
    auto hw = high_watermarks_.at(p);
    if (hw < 0 || pos < hw) return false;
  }
  return true;
}

bool fetcher::poll(const std::function<bool(const consumed_record&)>& on_record) {
  if (!meta_) meta_ = ctx_.kafka().topic(topic_);
  const topic_info& topic = *meta_;
  std::map<int32_t, std::vector<int32_t>> by_leader;
  for (const auto& [p, _] : positions_) {
    if (static_cast<size_t>(p) >= topic.partitions.size())
      throw failure(exit_code::kafka_error, fmt::format("UNKNOWN_TOPIC_OR_PARTITION: topic '{}' has no partition {}", topic_, p));
    by_leader[topic.partitions[p].leader].push_back(p);
  }
  bool refresh = false;
  for (const auto& [leader, parts] : by_leader) {
    if (leader < 0) {
      refresh = true;
      continue;
    }
    auto& c = ctx_.kafka().node(leader);
    const int16_t v = c.pick(protocol::api_key::fetch, 4, 12);
    protocol::fetch_request req;
    req.replica_id = -1;
    req.max_wait_ms = max_wait_ms_;
    req.min_bytes = 1;
    req.max_bytes = 16 << 20;
    req.isolation_level = 0;
    req.session_id = 0;
    req.session_epoch = -1;
    protocol::fetch_request::fetch_topic ft;
    ft.topic = topic_;
    for (int32_t p : parts) {
      protocol::fetch_request::fetch_partition fp;
      fp.partition = p;
      fp.fetch_offset = positions_[p];
      fp.partition_max_bytes = 1 << 20;
      ft.partitions.push_back(fp);
    }
    req.topics.push_back(std::move(ft));
    auto resp = c.call<protocol::fetch_response>(req, v, ctx_.options().timeout + std::chrono::milliseconds(max_wait_ms_));
    if (resp.error_code != protocol::error_code::none) kafka_failure(resp.error_code, std::nullopt, "Fetch");
    for (const auto& tr : resp.responses)
      for (const auto& pd : tr.partitions) {
        const int32_t p = pd.partition_index;
        if (!positions_.count(p)) continue;
        if (pd.error_code != protocol::error_code::none) {
          if (retriable(pd.error_code)) {
            refresh = true;
            continue;
          }
          if (pd.error_code == protocol::error_code::offset_out_of_range && reset_) {
            positions_[p] = reset_(p, positions_[p]);
            continue;
          }
          kafka_failure(pd.error_code, std::nullopt, fmt::format("Fetch {}-{} at offset {}", topic_, p, positions_[p]));
        }
        high_watermarks_[p] = pd.high_watermark;
        if (!pd.records_ || pd.records_->size() == 0) continue;
        std::span<const uint8_t> bytes = pd.records_->bytes;
        int64_t& pos = positions_[p];
        while (!bytes.empty()) {
          auto h = storage::parse_record_batch_header(bytes);
          if (!h) break;  // a partial batch at the end of the answer: fetched again next time
          const auto batch = bytes.first(static_cast<size_t>(h->size_bytes()));
          bytes = bytes.subspan(batch.size());
          if (h->last_offset() < pos) continue;
          if (h->is_control()) {
            pos = h->last_offset() + 1;
            continue;
          }
          std::vector<uint8_t> inflated;
          std::optional<storage::record_iterator> it;
          if (h->compression() != storage::compression_codec::none) {
            auto d = storage::decompress(h->compression(), batch.subspan(storage::record_batch_header_size));
            if (!d) throw failure(exit_code::kafka_error, fmt::format("CORRUPT_MESSAGE: batch at {}-{}@{}: {}", topic_, p, h->base_offset, d.err().message));
            inflated = std::move(*d);
            it.emplace(storage::record_iterator::over_records(*h, inflated));
          } else {
            auto opened = storage::record_iterator::open(batch);
            if (!opened) throw failure(exit_code::kafka_error, fmt::format("CORRUPT_MESSAGE: batch at {}-{}@{}: {}", topic_, p, h->base_offset, opened.err().message));
            it.emplace(std::move(*opened));
          }
          storage::record_view rv;
          consumed_record r;
          r.topic = topic_;
          r.partition = p;
          while (it->next(rv)) {
            if (rv.offset < pos) continue;
            r.offset = rv.offset;
            r.timestamp = rv.timestamp;
            r.key = rv.key;
            r.value = rv.value;
            r.headers.clear();
            for (const auto& hd : rv.headers) r.headers.emplace_back(hd.key, hd.value);
            pos = rv.offset + 1;
            if (!on_record(r)) return false;
          }
          if (it->error()) throw failure(exit_code::kafka_error, fmt::format("CORRUPT_MESSAGE: {}-{}@{}: {}", topic_, p, h->base_offset, it->error()->message));
          pos = std::max(pos, h->last_offset() + 1);
        }
      }
  }
  if (refresh) {  // the next poll re-reads the metadata
    meta_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

}  // namespace sluice::cli
