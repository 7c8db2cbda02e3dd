#include "broker/coordinator/internal_log.h"

#include <unistd.h>

#include "base/logging.h"
#include "broker/error_map.h"
#include "broker/purgatory.h"
#include "storage/control_record.h"
#include "storage/errc.h"
#include "storage/record_batch.h"

namespace sluice::broker::coordinator {

internal_writer::internal_writer(std::shared_ptr<partition> part, sluice::clock& clock, int64_t commit_timeout_ms,
                                 std::function<int32_t()> min_insync_replicas)
    : part_(std::move(part)), clock_(clock), commit_timeout_ms_(commit_timeout_ms),
      min_insync_replicas_(std::move(min_insync_replicas)) {}

void internal_writer::append(const std::vector<internal_record>& records,
                             std::function<void(protocol::error_code)> done) {
  append(records, std::nullopt, [done = std::move(done)](protocol::error_code e, int64_t) { done(e); });
}

void internal_writer::append(const std::vector<internal_record>& records, const std::optional<producer_stamp>& producer,
                             std::function<void(protocol::error_code, int64_t base_offset)> done) {
  storage::record_batch_builder builder;
  if (producer) {
    builder.set_producer(producer->producer_id, producer->producer_epoch, base_sequence_);
    builder.set_transactional();
  } else if (base_sequence_ >= 0) {
    builder.set_producer(-1, -1, base_sequence_);
  }
  const int64_t now = clock_.now_ms();
  for (const auto& r : records) {
    std::string_view key(reinterpret_cast<const char*>(r.key.data()), r.key.size());
    std::optional<std::string_view> value;
    if (r.value) value = std::string_view(reinterpret_cast<const char*>(r.value->data()), r.value->size());
    builder.add(key, value, now);
  }
  auto batch = builder.build();
  const int32_t min_isr = min_insync_replicas_();
  const uint64_t term = part_->leadership_changes();
  auto appended = part_->append(std::span<uint8_t>(batch.data(), batch.size()), -1, min_isr,
                                storage::append_origin::coordinator);
  if (!appended) {
    log::warn("coordinator: append to {}-{} failed: {}", part_->topic(), part_->index(), appended.err().message);
    done(to_kafka(appended.err()), -1);
    return;
  }
  const int64_t base_offset = appended->base_offset;
  part_->wait_for_high_watermark(appended->last_offset + 1, term, min_isr,
                                 wait_deadline::after(clock_, commit_timeout_ms_),
                                 [done = std::move(done), base_offset](hw_wait_result r) { done(to_kafka(r), base_offset); });
}

size_t replay_log(partition& part, const replay_visitor& visit) {
  int64_t offset = part.log_start_offset();
  const int64_t end = part.log_end_offset();
  size_t records = 0;
  std::vector<uint8_t> buf;
  while (offset < end) {
    auto r = part.read_for_follower(offset, 1 << 20, true);
    if (!r || r->region.size == 0 || !r->region.file) {
      if (!r) log::error("coordinator: replay of {}-{} stopped at {}: {}", part.topic(), part.index(), offset, r.err().message);
      break;
    }
    buf.resize(static_cast<size_t>(r->region.size));
    ssize_t n = ::pread(r->region.file->fd(), buf.data(), buf.size(), r->region.position);
    if (n != static_cast<ssize_t>(buf.size())) {
      log::error("coordinator: replay of {}-{}: short read at {}", part.topic(), part.index(), offset);
      break;
    }
    std::span<const uint8_t> rest(buf.data(), buf.size());
    int64_t next_offset = offset;
    while (rest.size() >= static_cast<size_t>(storage::log_overhead)) {
      auto h = storage::parse_record_batch_header(rest);
      if (!h) break;
      auto batch = rest.first(static_cast<size_t>(h->size_bytes()));
      rest = rest.subspan(batch.size());
      next_offset = h->last_offset() + 1;
      if (h->is_control()) {
        if (!visit.marker || h->base_offset < offset) continue;
        auto m = storage::parse_end_txn_marker(batch);
        if (!m) {
          // Other control records (LEADER_CHANGE, ...) are no markers; anything else is worth a line.
          if (m.err().code != storage::errc::not_found) {
            log::warn("coordinator: replay of {}-{}: skipping the control batch at {}: {}", part.topic(), part.index(),
                      h->base_offset, m.err().message);
          }
          continue;
        }
        visit.marker({h->base_offset, h->producer_id, h->producer_epoch, m->commit, m->coordinator_epoch});
        continue;
      }
      if (h->compression() != storage::compression_codec::none) continue;
      auto it = storage::record_iterator::open(batch);
      if (!it) continue;
      const record_context batch_ctx{-1, h->producer_id, h->producer_epoch, h->is_transactional()};
      storage::record_view rv;
      while (it->next(rv)) {
        if (rv.offset < offset || !rv.key) continue;
        record_bytes key(rv.key->begin(), rv.key->end());
        std::optional<record_bytes> value;
        if (rv.value) value = record_bytes(rv.value->begin(), rv.value->end());
        record_context ctx = batch_ctx;
        ctx.offset = rv.offset;
        visit.record(key, value, ctx);
        ++records;
      }
    }
    if (next_offset <= offset) break;
    offset = next_offset;
  }
  return records;
}

size_t replay_log(partition& part,
                  const std::function<void(const record_bytes& key, const std::optional<record_bytes>& value)>& visit) {
  replay_visitor v;
  v.record = [&visit](const record_bytes& key, const std::optional<record_bytes>& value, const record_context&) {
    visit(key, value);
  };
  return replay_log(part, v);
}

}  // namespace sluice::broker::coordinator
