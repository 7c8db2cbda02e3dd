// storage::log, transactions (KIP-98): markers, the aborted-transaction index, the first unstable offset.
#include "base/logging.h"
#include "storage/errc.h"
#include "storage/log.h"
#include "storage/segment.h"

namespace sluice::storage {

sluice::result<log::marker_result> log::append_marker(int64_t producer_id, int16_t producer_epoch,
                                                      const end_txn_marker& m, int32_t leader_epoch) {
  const int64_t now = clock_.now_ms();
  auto batch = build_end_txn_marker_batch(producer_id, producer_epoch, m, now);
  auto h = decode_record_batch_header(batch.data());
  if (auto ok = producer_state_->check_marker(h, m); !ok) return ok.err();
  if (should_roll(static_cast<int64_t>(batch.size()), 1, now, now)) {
    if (auto r = roll(); !r) return r.err();
  }
  const int64_t offset = log_end_offset_;
  set_base_offset(batch, offset);
  set_partition_leader_epoch(batch, leader_epoch);
  if (config_.message_timestamp_type == timestamp_type::log_append_time) set_log_append_time(batch, now);
  if (auto r = active().append(batch); !r) return r.err();
  log_end_offset_ = offset + 1;
  unflushed_records_ += 1;
  h = decode_record_batch_header(batch.data());
  auto completed = apply_marker_batch(active(), h, batch);
  if (!completed) return completed.err();
  producer_state_->set_map_end_offset(log_end_offset_);
  return marker_result{offset, completed->value()};  // the batch built above is an end-transaction marker
}

sluice::result<void> log::check_marker(int64_t producer_id, int16_t producer_epoch, const end_txn_marker& m) const {
  auto batch = build_end_txn_marker_batch(producer_id, producer_epoch, m, clock_.now_ms());
  return producer_state_->check_marker(decode_record_batch_header(batch.data()), m);
}

sluice::result<std::optional<completed_txn>> log::apply_marker_batch(segment& seg, const record_batch_header& h,
                                                                     std::span<const uint8_t> batch) {
  auto m = parse_end_txn_marker(batch);
  if (!m) {
    if (m.err().code == errc::not_found) {  // another control record type: no transaction ends
      producer_state_->set_map_end_offset(std::max(producer_state_->map_end_offset(), h.last_offset() + 1));
      return std::optional<completed_txn>{};
    }
    return sluice::error{m.err().code, dir_.string() + ": marker at " + std::to_string(h.base_offset) + ": " +
                                           m.err().message};
  }
  const auto t = producer_state_->complete_txn(h, *m);
  if (!t.has_data || !t.aborted || seg.last_aborted_offset() >= t.last_offset) return std::optional<completed_txn>{t};
  const aborted_txn entry{t.producer_id, t.first_offset, t.last_offset, producer_state_->last_stable_offset_after(t)};
  if (auto r = seg.append_aborted(entry); !r) return r.err();
  return std::optional<completed_txn>{t};
}

std::vector<aborted_txn> log::collect_aborted(int64_t fetch_offset, int64_t upper_bound) const {
  std::vector<aborted_txn> out;
  auto it = segments_.upper_bound(fetch_offset);
  if (it != segments_.begin()) --it;
  // A transaction begun before upper_bound may have its marker (and so its entry) in any later segment.
  for (; it != segments_.end(); ++it) {
    if (it->second->collect_aborted(fetch_offset, upper_bound, out)) break;
  }
  return out;
}

}  // namespace sluice::storage
