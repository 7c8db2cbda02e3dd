#include "broker/txn/transaction_coordinator.h"

#include <algorithm>
#include <limits>

#include "base/logging.h"

namespace sluice::txn {

namespace {

/// Kafka's TransactionMetadata.isEpochExhausted: the epoch cannot be bumped (one value is kept for fencing).
bool epoch_exhausted(int16_t epoch) { return epoch >= std::numeric_limits<int16_t>::max() - 1; }

}  // namespace

std::string_view to_string(txn_state s) {
  switch (s) {
    case txn_state::empty: return "Empty";
    case txn_state::ongoing: return "Ongoing";
    case txn_state::prepare_commit: return "PrepareCommit";
    case txn_state::prepare_abort: return "PrepareAbort";
    case txn_state::complete_commit: return "CompleteCommit";
    case txn_state::complete_abort: return "CompleteAbort";
    case txn_state::dead: return "Dead";
    case txn_state::prepare_epoch_fence: return "PrepareEpochFence";
  }
  return "Unknown";
}

std::optional<txn_state> txn_state_from_string(std::string_view name) {
  for (int8_t i = 0; i <= static_cast<int8_t>(txn_state::prepare_epoch_fence); ++i) {
    if (to_string(static_cast<txn_state>(i)) == name) return static_cast<txn_state>(i);
  }
  return std::nullopt;
}

std::string_view to_string(transaction_coordinator::load_state s) {
  switch (s) {
    case transaction_coordinator::load_state::inactive: return "inactive";
    case transaction_coordinator::load_state::loading: return "loading";
    case transaction_coordinator::load_state::active: return "active";
  }
  return "?";
}

transaction_coordinator::transaction_coordinator(int32_t partition, txn_config config, const sluice::clock& clock,
                                                 std::function<result<int64_t>()> new_producer_id,
                                                 std::function<int32_t()> coordinator_epoch,
                                                 std::function<void(marker_job)> send_markers)
    : partition_(partition), config_(config), clock_(clock), new_producer_id_(std::move(new_producer_id)),
      coordinator_epoch_fn_(std::move(coordinator_epoch)), send_markers_(std::move(send_markers)) {}

// ---------------------------------------------------------------------------------------------------
// Ownership and replay

void transaction_coordinator::begin_loading() {
  txns_.clear();
  pending_last_epoch_.clear();
  state_ = load_state::loading;
  coordinator_epoch_ = coordinator_epoch_fn_ ? coordinator_epoch_fn_() : 0;
}

void transaction_coordinator::replay(const bytes& key, const std::optional<bytes>& value) {
  if (state_ == load_state::inactive) return;  // a write that completed after unload(): the next load reads it
  auto id = decode_key(key);
  if (!id) {
    log::warn("txn[{}]: skipping undecodable __transaction_state key: {}", partition_, id.err().message);
    return;
  }
  if (!value) {
    txns_.erase(*id);
    pending_last_epoch_.erase(*id);
    return;
  }
  auto v = decode_value(*value);
  if (!v) {
    log::warn("txn[{}]: skipping __transaction_state record of {}: {}", partition_, *id, v.err().message);
    return;
  }
  auto& m = txns_[*id];
  m.transactional_id = *id;
  const int16_t before = m.producer_epoch;
  const int64_t before_id = m.producer_id;
  m.producer_id = v->producer_id;
  m.previous_producer_id = v->previous_producer_id;
  m.producer_epoch = v->producer_epoch;
  m.timeout_ms = v->timeout_ms;
  m.state = v->state;
  m.partitions = v->partitions;
  m.start_timestamp_ms = v->start_timestamp_ms;
  m.last_update_timestamp_ms = v->last_update_timestamp_ms;
  m.pending.reset();
  if (auto it = pending_last_epoch_.find(*id); it != pending_last_epoch_.end()) {
    m.last_producer_epoch = it->second;
    pending_last_epoch_.erase(it);
  } else if (state_ == load_state::loading || before_id != m.producer_id) {
    m.last_producer_epoch = no_producer_epoch;  // not persisted (v0): unknown after a load
  } else if (before != m.producer_epoch) {
    m.last_producer_epoch = before;
  }
  if (m.state == txn_state::complete_commit || m.state == txn_state::complete_abort ||
      m.state == txn_state::empty) {
    m.markers_in_flight = false;
  }
  if (m.state == txn_state::dead) {
    txns_.erase(*id);
    return;
  }
  if (state_ == load_state::active &&
      (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort)) {
    start_markers(m);
  }
}

void transaction_coordinator::finish_loading() {
  state_ = load_state::active;
  const int64_t now = clock_.monotonic_ms();
  next_abort_check_ = now + config_.abort_timed_out_check_interval_ms;
  next_expiry_check_ = now + config_.remove_expired_check_interval_ms;
  size_t prepared = 0;
  for (auto& [id, m] : txns_) {
    if (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) {
      start_markers(m);  // Kafka completes every transaction it finds prepared on load
      ++prepared;
    }
  }
  log::info("txn[{}]: loaded {} transactional ids ({} prepared, completing), coordinator epoch {}", partition_,
            txns_.size(), prepared, coordinator_epoch_);
}

void transaction_coordinator::unload() {
  state_ = load_state::inactive;
  txns_.clear();
  pending_last_epoch_.clear();
  next_abort_check_.reset();
  next_expiry_check_.reset();
}

std::vector<txn_write> transaction_coordinator::take_writes() {
  auto out = std::move(writes_);
  writes_.clear();
  return out;
}

void transaction_coordinator::queue(std::vector<txn_record> records, std::function<void(txn_error)> done) {
  writes_.push_back({std::move(records), std::move(done)});
}

// ---------------------------------------------------------------------------------------------------
// Helpers

std::optional<txn_error> transaction_coordinator::check_producer(const std::string& id, int64_t producer_id,
                                                                 int16_t producer_epoch) const {
  if (auto e = not_serving()) return e;
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second.producer_id != producer_id) return txn_error::invalid_producer_id_mapping;
  if (it->second.producer_epoch != producer_epoch) return txn_error::producer_fenced;
  return std::nullopt;
}

std::optional<txn_error> transaction_coordinator::not_serving() const {
  if (state_ == load_state::inactive) return txn_error::not_coordinator;
  if (state_ == load_state::loading) return txn_error::coordinator_load_in_progress;
  return std::nullopt;
}

txn_log_value transaction_coordinator::snapshot(const transaction_metadata& m) const {
  txn_log_value v;
  v.producer_id = m.producer_id;
  v.previous_producer_id = m.previous_producer_id;
  v.producer_epoch = m.producer_epoch;
  v.timeout_ms = m.timeout_ms;
  v.state = m.state;
  v.partitions = m.partitions;
  v.start_timestamp_ms = m.start_timestamp_ms;
  v.last_update_timestamp_ms = wall();
  return v;
}

txn_record transaction_coordinator::transition(transaction_metadata& m, const txn_log_value& v) {
  m.pending = v.state;
  return txn_record{encode_key(m.transactional_id), encode_value(v)};
}

void transaction_coordinator::drop_pending(const std::string& id) {
  auto it = txns_.find(id);
  pending_last_epoch_.erase(id);
  if (it == txns_.end()) return;
  it->second.pending.reset();
  // An id created by this InitProducerId whose first record could not be written does not exist.
  if (it->second.producer_epoch == no_producer_epoch && it->second.state == txn_state::empty) txns_.erase(it);
}

txn_log_value transaction_coordinator::fence_and_abort(const transaction_metadata& m) const {
  // Kafka's prepareFenceProducerEpoch then prepareAbortOrCommit(PrepareAbort): the bumped epoch fences the
  // producer's in-flight writes at the partitions (the markers carry it). An exhausted epoch aborts unbumped.
  txn_log_value v = snapshot(m);
  if (!epoch_exhausted(m.producer_epoch)) v.producer_epoch = static_cast<int16_t>(m.producer_epoch + 1);
  v.state = txn_state::prepare_abort;
  return v;
}

void transaction_coordinator::start_markers(transaction_metadata& m) {
  if (m.markers_in_flight) return;
  m.markers_in_flight = true;
  marker_job job;
  job.transactional_id = m.transactional_id;
  job.producer_id = m.producer_id;
  job.producer_epoch = m.producer_epoch;
  job.commit = m.state == txn_state::prepare_commit;
  job.coordinator_epoch = coordinator_epoch_;
  job.partitions.assign(m.partitions.begin(), m.partitions.end());
  if (send_markers_) send_markers_(std::move(job));
}

// ---------------------------------------------------------------------------------------------------
// InitProducerId

coordinator_result<init_producer_id_result> transaction_coordinator::init_producer_id(
    const init_producer_id_request& r) {
  coordinator_result<init_producer_id_result> out;
  auto fail = [&](txn_error e) {
    out.response.error = e;
    return out;
  };
  if (r.transactional_id.empty()) return fail(txn_error::invalid_request);
  if (auto e = not_serving()) return fail(*e);
  if (r.timeout_ms <= 0 || r.timeout_ms > config_.max_timeout_ms) return fail(txn_error::invalid_transaction_timeout);

  auto it = txns_.find(r.transactional_id);
  if (it == txns_.end()) {
    auto id = new_producer_id_();
    if (!id) {
      log::error("txn[{}]: no producer id for {}: {}", partition_, r.transactional_id, id.err().message);
      return fail(txn_error::coordinator_not_available);
    }
    transaction_metadata fresh;
    fresh.transactional_id = r.transactional_id;
    fresh.producer_id = *id;
    fresh.timeout_ms = r.timeout_ms;
    fresh.last_update_timestamp_ms = wall();
    it = txns_.emplace(r.transactional_id, std::move(fresh)).first;
  }
  auto& m = it->second;
  const bool expected = r.expected_producer_id != no_producer_id || r.expected_producer_epoch != no_producer_epoch;

  if (m.pending) return fail(txn_error::concurrent_transactions);
  // KIP-360: a producer naming its current id may bump; so may one retrying a rotation it never heard back from.
  if (expected && !(m.producer_epoch == no_producer_epoch || r.expected_producer_id == m.producer_id ||
                    (r.expected_producer_id == m.previous_producer_id && epoch_exhausted(r.expected_producer_epoch)))) {
    return fail(txn_error::producer_fenced);
  }
  const std::string id = m.transactional_id;
  out.failed = [this, id](txn_error e) {
    drop_pending(id);
    return init_producer_id_result{map_append_error(e), no_producer_id, no_producer_epoch};
  };
  switch (m.state) {
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      return fail(txn_error::concurrent_transactions);
    case txn_state::ongoing: {
      // Abort the ongoing transaction, fencing its producer; the client retries and finds CompleteAbort.
      auto v = fence_and_abort(m);
      out.records.push_back(transition(m, v));
      pending_last_epoch_[id] = m.producer_epoch;
      out.response.error = txn_error::concurrent_transactions;
      return out;
    }
    case txn_state::empty:
    case txn_state::complete_commit:
    case txn_state::complete_abort: {
      txn_log_value v = snapshot(m);
      v.state = txn_state::empty;
      v.partitions.clear();
      v.timeout_ms = r.timeout_ms;
      v.start_timestamp_ms = -1;
      int16_t last_epoch = no_producer_epoch;
      const bool rotate = epoch_exhausted(m.producer_epoch) &&
                          (!expected || r.expected_producer_epoch == m.producer_epoch);
      if (rotate) {
        auto fresh = new_producer_id_();
        if (!fresh) return fail(txn_error::coordinator_not_available);
        v.previous_producer_id = m.producer_id;
        v.producer_id = *fresh;
        v.producer_epoch = 0;
        last_epoch = expected ? m.producer_epoch : no_producer_epoch;
      } else if (epoch_exhausted(m.producer_epoch)) {
        return fail(txn_error::producer_fenced);
      } else if (!expected || m.producer_epoch == no_producer_epoch || r.expected_producer_epoch == m.producer_epoch) {
        v.producer_epoch = static_cast<int16_t>(m.producer_epoch + 1);
        last_epoch = expected ? m.producer_epoch : no_producer_epoch;
      } else if (r.expected_producer_epoch == m.last_producer_epoch) {
        last_epoch = m.last_producer_epoch;  // a retry of the bump this coordinator already made: same epoch
      } else {
        return fail(txn_error::producer_fenced);
      }
      out.records.push_back(transition(m, v));
      pending_last_epoch_[id] = last_epoch;
      out.response = {txn_error::none, v.producer_id, v.producer_epoch};
      return out;
    }
    case txn_state::dead:
    case txn_state::prepare_epoch_fence:
      break;
  }
  log::error("txn[{}]: InitProducerId for {} in state {}", partition_, id, to_string(m.state));
  return fail(txn_error::unknown_server_error);
}

// ---------------------------------------------------------------------------------------------------
// AddPartitionsToTxn, EndTxn

coordinator_result<add_partitions_result> transaction_coordinator::add_partitions(const add_partitions_request& r) {
  coordinator_result<add_partitions_result> out;
  auto fail = [&](txn_error e) {
    out.response.error = e;
    return out;
  };
  if (auto e = check_producer(r.transactional_id, r.producer_id, r.producer_epoch)) return fail(*e);
  auto& m = txns_.at(r.transactional_id);
  if (m.pending) return fail(txn_error::concurrent_transactions);
  if (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) {
    return fail(txn_error::concurrent_transactions);
  }
  const bool all_in = std::all_of(r.partitions.begin(), r.partitions.end(),
                                  [&](const topic_partition& tp) { return m.partitions.count(tp) > 0; });
  if (m.state == txn_state::ongoing && all_in) return out;  // nothing new: no write
  txn_log_value v = snapshot(m);
  if (m.state != txn_state::ongoing) {
    v.partitions.clear();
    v.start_timestamp_ms = v.last_update_timestamp_ms;  // a new transaction starts now
  }
  v.state = txn_state::ongoing;
  v.partitions.insert(r.partitions.begin(), r.partitions.end());
  out.records.push_back(transition(m, v));
  const std::string id = m.transactional_id;
  out.failed = [this, id](txn_error e) {
    drop_pending(id);
    return add_partitions_result{map_append_error(e)};
  };
  return out;
}

std::vector<std::pair<topic_partition, txn_error>> transaction_coordinator::verify_partitions(
    const add_partitions_request& r) const {
  std::vector<std::pair<topic_partition, txn_error>> out;
  auto all = [&](txn_error e) {
    for (const auto& tp : r.partitions) out.emplace_back(tp, e);
    return out;
  };
  if (auto e = check_producer(r.transactional_id, r.producer_id, r.producer_epoch)) return all(*e);
  const auto& m = txns_.at(r.transactional_id);
  for (const auto& tp : r.partitions) {
    const bool in = m.state == txn_state::ongoing && m.partitions.count(tp) > 0;
    // Kafka 4.x (KIP-890): TRANSACTION_ABORTABLE, so the producer aborts rather than failing fatally.
    out.emplace_back(tp, in ? txn_error::none : txn_error::transaction_abortable);
  }
  return out;
}

coordinator_result<end_txn_result> transaction_coordinator::end_txn(const end_txn_request& r) {
  coordinator_result<end_txn_result> out;
  auto fail = [&](txn_error e) {
    out.response.error = e;
    return out;
  };
  // A client's EndTxn never bumps the epoch (transaction version 1): it must be the current one.
  if (auto e = check_producer(r.transactional_id, r.producer_id, r.producer_epoch)) return fail(*e);
  auto& m = txns_.at(r.transactional_id);
  if (m.pending) return fail(txn_error::concurrent_transactions);
  switch (m.state) {
    case txn_state::ongoing: {
      txn_log_value v = snapshot(m);
      v.state = r.commit ? txn_state::prepare_commit : txn_state::prepare_abort;
      out.records.push_back(transition(m, v));
      const std::string id = m.transactional_id;
      out.failed = [this, id](txn_error e) {
        drop_pending(id);
        return end_txn_result{map_append_error(e)};
      };
      return out;
    }
    case txn_state::complete_commit:
      return fail(r.commit ? txn_error::none : txn_error::invalid_txn_state);  // a retried commit
    case txn_state::complete_abort:
      return fail(r.commit ? txn_error::invalid_txn_state : txn_error::none);
    case txn_state::prepare_commit:
      return fail(r.commit ? txn_error::concurrent_transactions : txn_error::invalid_txn_state);
    case txn_state::prepare_abort:
      return fail(r.commit ? txn_error::invalid_txn_state : txn_error::concurrent_transactions);
    case txn_state::empty:
      return fail(txn_error::invalid_txn_state);
    case txn_state::dead:
    case txn_state::prepare_epoch_fence:
      break;
  }
  log::error("txn[{}]: EndTxn for {} in state {}", partition_, m.transactional_id, to_string(m.state));
  return fail(txn_error::unknown_server_error);
}

void transaction_coordinator::markers_written(const marker_job& job) {
  if (state_ != load_state::active) return;
  auto it = txns_.find(job.transactional_id);
  if (it == txns_.end()) return;
  auto& m = it->second;
  const txn_state prepared = job.commit ? txn_state::prepare_commit : txn_state::prepare_abort;
  if (m.state != prepared || m.producer_id != job.producer_id || m.producer_epoch != job.producer_epoch ||
      m.pending) {
    return;
  }
  txn_log_value v = snapshot(m);
  v.state = job.commit ? txn_state::complete_commit : txn_state::complete_abort;
  v.partitions.clear();
  std::vector<txn_record> records{transition(m, v)};
  const std::string id = m.transactional_id;
  queue(std::move(records), [this, id, job](txn_error e) {
    if (e == txn_error::none) return;
    // Kafka retries the completion while it is the coordinator; the markers stay written.
    log::warn("txn[{}]: completing {} failed: {}; retrying at the next timer", partition_, id, to_string(e));
    auto m = txns_.find(id);
    if (m == txns_.end()) return;
    m->second.pending.reset();
    m->second.markers_in_flight = false;  // the next abort check starts the markers again
  });
}

// ---------------------------------------------------------------------------------------------------
// Time

std::optional<int64_t> transaction_coordinator::next_deadline() const {
  if (state_ != load_state::active) return std::nullopt;
  std::optional<int64_t> best = next_abort_check_;
  if (next_expiry_check_ && (!best || *next_expiry_check_ < *best)) best = next_expiry_check_;
  return best;
}

void transaction_coordinator::on_timer() {
  if (state_ != load_state::active) return;
  const int64_t now = clock_.monotonic_ms();
  if (next_abort_check_ && *next_abort_check_ <= now) {
    next_abort_check_ = now + config_.abort_timed_out_check_interval_ms;
    abort_timed_out();
  }
  if (next_expiry_check_ && *next_expiry_check_ <= now) {
    next_expiry_check_ = now + config_.remove_expired_check_interval_ms;
    remove_expired();
  }
}

void transaction_coordinator::abort_timed_out() {
  const int64_t now = wall();
  for (auto& [id, m] : txns_) {
    if (m.pending) continue;
    if ((m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) && !m.markers_in_flight) {
      start_markers(m);  // a completion that failed earlier
      continue;
    }
    if (m.state != txn_state::ongoing || m.start_timestamp_ms + m.timeout_ms > now) continue;
    log::info("txn[{}]: aborting transaction {} of producer {} (epoch {}): older than its timeout {} ms", partition_,
              id, m.producer_id, m.producer_epoch, m.timeout_ms);
    auto v = fence_and_abort(m);
    std::vector<txn_record> records{transition(m, v)};
    pending_last_epoch_[id] = m.producer_epoch;
    queue(std::move(records), [this, key = id](txn_error e) {
      if (e != txn_error::none) {
        log::warn("txn[{}]: abort of timed-out {} failed: {}", partition_, key, to_string(e));
        drop_pending(key);
      }
    });
  }
}

void transaction_coordinator::remove_expired() {
  const int64_t now = wall();
  for (auto& [id, m] : txns_) {
    if (m.pending) continue;
    const bool idle = m.state == txn_state::empty || m.state == txn_state::complete_commit ||
                      m.state == txn_state::complete_abort;
    if (!idle || m.last_update_timestamp_ms + config_.transactional_id_expiration_ms > now) continue;
    log::info("txn[{}]: transactional id {} expired (idle since {}), removing it", partition_, id,
              m.last_update_timestamp_ms);
    m.pending = txn_state::dead;
    std::vector<txn_record> records{txn_record{encode_key(id), std::nullopt}};
    queue(std::move(records), [this, key = id](txn_error e) {
      if (e != txn_error::none) drop_pending(key);
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Reads

const transaction_metadata* transaction_coordinator::find(const std::string& id) const {
  auto it = txns_.find(id);
  return it == txns_.end() ? nullptr : &it->second;
}

std::vector<transaction_description> transaction_coordinator::describe(const std::vector<std::string>& ids) const {
  std::vector<transaction_description> out;
  for (const auto& id : ids) {
    transaction_description d;
    d.transactional_id = id;
    if (auto e = not_serving()) {
      d.error = *e;
    } else if (auto* m = find(id); !m) {
      d.error = txn_error::transactional_id_not_found;
    } else {
      d.state = m->state;
      d.timeout_ms = m->timeout_ms;
      d.start_timestamp_ms = m->start_timestamp_ms;
      d.producer_id = m->producer_id;
      d.producer_epoch = m->producer_epoch;
      d.partitions.assign(m->partitions.begin(), m->partitions.end());
    }
    out.push_back(std::move(d));
  }
  return out;
}

txn_error transaction_coordinator::list(const list_transactions_filter& filter,
                                        std::vector<transaction_listing>& out) const {
  if (auto e = not_serving()) return *e;
  const int64_t now = wall();
  for (const auto& [id, m] : txns_) {
    if (!filter.states.empty() &&
        std::find(filter.states.begin(), filter.states.end(), m.state) == filter.states.end()) {
      continue;
    }
    if (!filter.producer_ids.empty() &&
        std::find(filter.producer_ids.begin(), filter.producer_ids.end(), m.producer_id) == filter.producer_ids.end()) {
      continue;
    }
    if (filter.min_duration_ms >= 0 && now - m.start_timestamp_ms < filter.min_duration_ms) continue;
    out.push_back({id, m.producer_id, m.state});
  }
  return txn_error::none;
}

}  // namespace sluice::txn
