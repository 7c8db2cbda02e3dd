#include "storage/producer_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <iterator>

#include "base/logging.h"
#include "storage/atomic_file.h"
#include "storage/byte_order.h"
#include "storage/crc32c.h"
#include "storage/errc.h"
#include "storage/index_file.h"

namespace sluice::storage {

// Snapshot file format (ours; Kafka's file name, all integers big-endian):
//
//   offset size  field
//        0    4  magic "SLPS"
//        4    2  version (1)
//        6    4  CRC32C of every byte after this field
//       10    8  map end offset (the offset in the file name)
//       18    4  producer count
//       22       producers, each:
//                  producer id int64, producer epoch int16, coordinator epoch int32,
//                  current txn first offset int64, last timestamp int64, batch count int32 (<= 5),
//                  then per batch (oldest first): first seq int32, last seq int32, first offset int64,
//                  last offset int64, max timestamp int64
//
// Unlike Kafka's snapshot (which keeps only the last batch of each producer) every cached batch is kept,
// so retries of any of the last 5 batches are still deduplicated after a restart.
namespace {

constexpr uint8_t kMagic[4] = {'S', 'L', 'P', 'S'};
constexpr int16_t kVersion = 1;
constexpr size_t kHeaderSize = 22;
constexpr size_t kEntrySize = 8 + 2 + 4 + 8 + 8 + 4;
constexpr size_t kBatchSize = 4 + 4 + 8 + 8 + 8;
constexpr std::string_view kSuffix = ".snapshot";

std::optional<int64_t> parse_snapshot_name(const std::string& name) {
  if (name.size() != 20 + kSuffix.size() || name.compare(20, kSuffix.size(), kSuffix) != 0) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    if (v > (INT64_MAX - (name[i] - '0')) / 10) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

bool in_sequence(int32_t last_seq, int32_t next_seq) {
  return int64_t{next_seq} == int64_t{last_seq} + 1 || (next_seq == 0 && last_seq == INT32_MAX);
}

}  // namespace

int32_t batch_last_sequence(int32_t base_sequence, int32_t last_offset_delta) {
  if (base_sequence > INT32_MAX - last_offset_delta) return last_offset_delta - (INT32_MAX - base_sequence) - 1;
  return base_sequence + last_offset_delta;
}

const producer_batch_metadata* producer_state_entry::find_duplicate(int16_t epoch, int32_t first_seq,
                                                                    int32_t last_seq) const {
  if (epoch != producer_epoch) return nullptr;
  for (const auto& b : batches)
    if (b.first_seq == first_seq && b.last_seq == last_seq) return &b;
  return nullptr;
}

producer_state_manager::producer_state_manager(std::filesystem::path dir, int64_t expiration_ms)
    : dir_(std::move(dir)), expiration_ms_(expiration_ms) {}

void producer_state_manager::apply(producer_state_entry& entry, const record_batch_header& h) {
  if (entry.producer_epoch != h.producer_epoch) {
    // A new epoch starts a new sequence space: the old epoch's batches can never be duplicates any more.
    entry.batches.clear();
    entry.producer_epoch = h.producer_epoch;
  }
  entry.batches.push_back({h.base_sequence, batch_last_sequence(h.base_sequence, h.last_offset_delta), h.base_offset,
                           h.last_offset(), h.max_timestamp});
  while (entry.batches.size() > producer_batch_window) entry.batches.pop_front();
  entry.last_timestamp = h.max_timestamp;
}

sluice::result<std::optional<producer_batch_metadata>> producer_state_manager::check_and_stage(
    pending_append& pending, const record_batch_header& h, append_origin origin) const {
  const bool check_sequence = origin == append_origin::client;
  const int64_t pid = h.producer_id;
  const int32_t first_seq = h.base_sequence;
  static const producer_state_entry kNone;
  auto cit = producers_.find(pid);
  const producer_state_entry& current = cit == producers_.end() ? kNone : cit->second;

  // Duplicates are looked up among the batches already in the log (Kafka's analyzeAndValidateProducerState,
  // client origin only).
  const auto* dup = check_sequence ? current.find_duplicate(h.producer_epoch, first_seq,
                                                            batch_last_sequence(first_seq, h.last_offset_delta))
                                   : nullptr;
  if (dup) {
    return std::optional<producer_batch_metadata>(*dup);
  }

  auto [uit, fresh] = pending.updated.try_emplace(pid);
  producer_state_entry& updated = uit->second;
  if (fresh) {
    updated.producer_id = pid;
    updated.producer_epoch = current.producer_epoch;
    updated.coordinator_epoch = current.coordinator_epoch;
    updated.current_txn_first_offset = current.current_txn_first_offset;
    updated.last_timestamp = current.last_timestamp;
  }
  // uit, fresh: init-captures, since clang before 16 cannot capture structured bindings (the SLUICE_FUZZ build).
  auto fail = [&, uit = uit, fresh = fresh](errc code, std::string message)
      -> sluice::result<std::optional<producer_batch_metadata>> {
    if (fresh && updated.batches.empty()) pending.updated.erase(uit);
    return make_error(code, std::move(message));
  };

  // Epoch (Kafka's checkProducerEpoch): since 2.7 a client gets INVALID_PRODUCER_EPOCH, never PRODUCER_FENCED.
  if (h.producer_epoch < updated.producer_epoch) {
    return fail(errc::invalid_producer_epoch,
                "epoch " + std::to_string(h.producer_epoch) + " of producer " + std::to_string(pid) +
                    " is older than the last seen epoch " + std::to_string(updated.producer_epoch));
  }
  // Sequence (Kafka's checkSequence, client origin only).
  if (!check_sequence) {
    // A coordinator's batch carries RecordBatch.NO_SEQUENCE.
  } else if (h.producer_epoch != updated.producer_epoch) {
    if (first_seq != 0 && updated.producer_epoch != -1) {
      return fail(errc::out_of_order_sequence,
                  "new epoch " + std::to_string(h.producer_epoch) + " of producer " + std::to_string(pid) +
                      " must start at sequence 0, got " + std::to_string(first_seq));
    }
  } else {
    int32_t last_seq = -1;
    if (!updated.batches.empty()) {
      last_seq = updated.batches.back().last_seq;
    } else if (h.producer_epoch == current.producer_epoch) {
      last_seq = current.last_seq();
    }
    // No current epoch (unknown, expired or deleted producer): any sequence is accepted (KIP-360).
    if (current.producer_epoch != -1 && !in_sequence(last_seq, first_seq)) {
      return fail(errc::out_of_order_sequence,
                  "out of order sequence for producer " + std::to_string(pid) + ": " + std::to_string(first_seq) +
                      " (incoming), " + std::to_string(last_seq) + " (last appended)");
    }
  }
  if (h.is_transactional()) {
    if (updated.current_txn_first_offset < 0) updated.current_txn_first_offset = h.base_offset;
  } else if (updated.current_txn_first_offset >= 0) {
    return fail(errc::invalid_txn_state, "producer " + std::to_string(pid) + " has a transaction open since offset " +
                                             std::to_string(updated.current_txn_first_offset) +
                                             ": a non-transactional batch is not allowed");
  }
  apply(updated, h);
  return std::optional<producer_batch_metadata>();
}

void producer_state_manager::commit(pending_append&& pending) {
  for (auto& [pid, upd] : pending.updated) {
    if (upd.batches.empty()) continue;
    auto& entry = producers_[pid];
    entry.producer_id = pid;
    if (entry.producer_epoch != upd.producer_epoch) {
      entry.batches.clear();
      entry.producer_epoch = upd.producer_epoch;
    }
    for (auto& b : upd.batches) entry.batches.push_back(b);
    while (entry.batches.size() > producer_batch_window) entry.batches.pop_front();
    entry.last_timestamp = upd.last_timestamp;
    entry.coordinator_epoch = upd.coordinator_epoch;
    if (entry.current_txn_first_offset < 0 && upd.current_txn_first_offset >= 0) {
      open_txns_[upd.current_txn_first_offset] = pid;
    }
    entry.current_txn_first_offset = upd.current_txn_first_offset;
    map_end_offset_ = std::max(map_end_offset_, entry.batches.back().last_offset + 1);
  }
}

void producer_state_manager::replay(const record_batch_header& h) {
  map_end_offset_ = std::max(map_end_offset_, h.last_offset() + 1);
  if (h.producer_id < 0 || h.is_control()) return;  // markers: replay_marker
  auto& entry = producers_[h.producer_id];
  entry.producer_id = h.producer_id;
  if (h.is_transactional() && entry.current_txn_first_offset < 0) {
    entry.current_txn_first_offset = h.base_offset;
    open_txns_[h.base_offset] = h.producer_id;
  }
  apply(entry, h);
}

sluice::result<void> producer_state_manager::check_marker(const record_batch_header& h, const end_txn_marker& m) const {
  const auto* e = find(h.producer_id);
  if (!e) return {};
  if (h.producer_epoch < e->producer_epoch) {
    return make_error(errc::invalid_producer_epoch, "marker epoch " + std::to_string(h.producer_epoch) +
                                                        " of producer " + std::to_string(h.producer_id) +
                                                        " is older than " + std::to_string(e->producer_epoch));
  }
  if (m.coordinator_epoch < e->coordinator_epoch) {
    return make_error(errc::coordinator_fenced, "marker of coordinator epoch " + std::to_string(m.coordinator_epoch) +
                                                    " for producer " + std::to_string(h.producer_id) +
                                                    ", which has seen epoch " + std::to_string(e->coordinator_epoch));
  }
  return {};
}

completed_txn producer_state_manager::complete_txn(const record_batch_header& h, const end_txn_marker& m) {
  map_end_offset_ = std::max(map_end_offset_, h.last_offset() + 1);
  auto& entry = producers_[h.producer_id];
  entry.producer_id = h.producer_id;
  if (entry.producer_epoch != h.producer_epoch) {
    entry.batches.clear();  // a bumped epoch (a fenced producer) starts a new sequence space
    entry.producer_epoch = h.producer_epoch;
  }
  entry.coordinator_epoch = m.coordinator_epoch;
  entry.last_timestamp = h.max_timestamp;
  completed_txn t{h.producer_id, h.base_offset, h.base_offset, !m.commit, false};
  if (entry.current_txn_first_offset >= 0) {
    t.first_offset = entry.current_txn_first_offset;
    t.has_data = true;
    open_txns_.erase(entry.current_txn_first_offset);
    entry.current_txn_first_offset = -1;
  }
  if (t.has_data && t.last_offset >= high_watermark_) unreplicated_txns_[t.first_offset] = t;
  return t;
}

int64_t producer_state_manager::last_stable_offset_after(const completed_txn& t) const {
  for (const auto& [first, pid] : open_txns_) {
    if (pid != t.producer_id) return first;
  }
  return t.last_offset + 1;
}

std::optional<int64_t> producer_state_manager::first_unstable_offset() const {
  std::optional<int64_t> best;
  if (!open_txns_.empty()) best = open_txns_.begin()->first;
  if (!unreplicated_txns_.empty() && (!best || unreplicated_txns_.begin()->first < *best)) {
    best = unreplicated_txns_.begin()->first;
  }
  return best;
}

void producer_state_manager::on_high_watermark_updated(int64_t hw) {
  high_watermark_ = hw;
  std::erase_if(unreplicated_txns_, [hw](const auto& kv) { return kv.second.last_offset < hw; });
}

void producer_state_manager::rebuild_open_transactions() {
  open_txns_.clear();
  unreplicated_txns_.clear();
  for (const auto& [pid, e] : producers_) {
    if (e.current_txn_first_offset >= 0) open_txns_[e.current_txn_first_offset] = pid;
  }
}

size_t producer_state_manager::remove_expired(int64_t now_ms) {
  return std::erase_if(producers_, [&](const auto& kv) {
    const auto& e = kv.second;
    return e.current_txn_first_offset < 0 && now_ms - e.last_timestamp >= expiration_ms_;
  });
}

const producer_state_entry* producer_state_manager::find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

void producer_state_manager::reset(int64_t offset) {
  producers_.clear();
  open_txns_.clear();
  unreplicated_txns_.clear();
  map_end_offset_ = offset;
}

// ---- snapshots ------------------------------------------------------------------------------------------

std::filesystem::path producer_state_manager::snapshot_path(int64_t offset) const {
  return dir_ / detail::segment_file_name(offset, ".snapshot");
}

std::vector<uint8_t> producer_state_manager::encode_snapshot() const {
  size_t size = kHeaderSize;
  for (const auto& [pid, e] : producers_) size += kEntrySize + kBatchSize * e.batches.size();
  std::vector<uint8_t> out(size);
  uint8_t* p = out.data();
  std::copy(std::begin(kMagic), std::end(kMagic), p);
  detail::store_be<int16_t>(p + 4, kVersion);
  detail::store_be<int64_t>(p + 10, map_end_offset_);
  detail::store_be<int32_t>(p + 18, static_cast<int32_t>(producers_.size()));
  p += kHeaderSize;
  for (const auto& [pid, e] : producers_) {
    detail::store_be<int64_t>(p, e.producer_id);
    detail::store_be<int16_t>(p + 8, e.producer_epoch);
    detail::store_be<int32_t>(p + 10, e.coordinator_epoch);
    detail::store_be<int64_t>(p + 14, e.current_txn_first_offset);
    detail::store_be<int64_t>(p + 22, e.last_timestamp);
    detail::store_be<int32_t>(p + 30, static_cast<int32_t>(e.batches.size()));
    p += kEntrySize;
    for (const auto& b : e.batches) {
      detail::store_be<int32_t>(p, b.first_seq);
      detail::store_be<int32_t>(p + 4, b.last_seq);
      detail::store_be<int64_t>(p + 8, b.first_offset);
      detail::store_be<int64_t>(p + 16, b.last_offset);
      detail::store_be<int64_t>(p + 24, b.max_timestamp);
      p += kBatchSize;
    }
  }
  detail::store_be<uint32_t>(out.data() + 6, crc32c(std::span<const uint8_t>(out.data() + 10, out.size() - 10)));
  return out;
}

sluice::result<std::map<int64_t, producer_state_entry>> producer_state_manager::decode_snapshot(
    std::span<const uint8_t> bytes) {
  auto bad = [](const std::string& why) { return make_error(errc::corrupt_message, "producer snapshot: " + why); };
  if (bytes.size() < kHeaderSize || !std::equal(std::begin(kMagic), std::end(kMagic), bytes.data())) {
    return bad("bad magic or size");
  }
  if (detail::load_be<int16_t>(bytes.data() + 4) != kVersion) return bad("unknown version");
  if (detail::load_be<uint32_t>(bytes.data() + 6) != crc32c(bytes.subspan(10))) return bad("CRC mismatch");
  const int32_t count = detail::load_be<int32_t>(bytes.data() + 18);
  if (count < 0) return bad("negative producer count");
  std::map<int64_t, producer_state_entry> out;
  size_t pos = kHeaderSize;
  for (int32_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < kEntrySize) return bad("truncated entry");
    const uint8_t* p = bytes.data() + pos;
    producer_state_entry e;
    e.producer_id = detail::load_be<int64_t>(p);
    e.producer_epoch = detail::load_be<int16_t>(p + 8);
    e.coordinator_epoch = detail::load_be<int32_t>(p + 10);
    e.current_txn_first_offset = detail::load_be<int64_t>(p + 14);
    e.last_timestamp = detail::load_be<int64_t>(p + 22);
    const int32_t nb = detail::load_be<int32_t>(p + 30);
    pos += kEntrySize;
    if (nb < 0 || static_cast<size_t>(nb) > producer_batch_window || bytes.size() - pos < kBatchSize * nb) {
      return bad("bad batch count");
    }
    for (int32_t j = 0; j < nb; ++j) {
      const uint8_t* b = bytes.data() + pos;
      e.batches.push_back({detail::load_be<int32_t>(b), detail::load_be<int32_t>(b + 4), detail::load_be<int64_t>(b + 8),
                           detail::load_be<int64_t>(b + 16), detail::load_be<int64_t>(b + 24)});
      pos += kBatchSize;
    }
    out[e.producer_id] = std::move(e);
  }
  if (pos != bytes.size()) return bad("trailing bytes");
  return out;
}

sluice::result<std::filesystem::path> producer_state_manager::take_snapshot(bool durable) {
  const auto bytes = encode_snapshot();
  // A snapshot that cannot be written for a full disk leaves the older ones, from which a restart replays more of
  // the log; any other failure fails the dir (storage/atomic_file.h).
  auto path = snapshot_path(map_end_offset_);
  auto r = replace_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                        full_disk::keeps_old_file, durable);
  if (!r) return r.err();
  last_snapshot_offset_ = map_end_offset_;
  return path;
}

std::vector<int64_t> producer_state_manager::snapshot_offsets() const {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (auto o = parse_snapshot_name(name)) {
      out.push_back(*o);
    } else if (name.size() > 4 && name.ends_with(".snapshot.tmp")) {
      std::error_code rm;
      std::filesystem::remove(entry.path(), rm);  // a snapshot write interrupted by a crash
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<int64_t> producer_state_manager::load_latest_snapshot(int64_t max_offset, int64_t now_ms) {
  producers_.clear();
  open_txns_.clear();
  unreplicated_txns_.clear();
  map_end_offset_ = -1;
  auto offsets = snapshot_offsets();
  std::error_code ec;
  for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) {
    const auto path = snapshot_path(*it);
    if (*it > max_offset) {
      std::filesystem::remove(path, ec);  // beyond the log end: the log was truncated or its tail torn
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto decoded = decode_snapshot(bytes);
    if (!decoded || detail::load_be<int64_t>(bytes.data() + 10) != *it) {
      sluice::log::warn("storage: deleting unreadable producer snapshot {}: {}", path.string(),
                        decoded ? "offset does not match its name" : decoded.err().message);
      std::filesystem::remove(path, ec);
      continue;
    }
    producers_ = std::move(*decoded);
    map_end_offset_ = *it;
    last_snapshot_offset_ = *it;
    remove_expired(now_ms);
    rebuild_open_transactions();
    return *it;
  }
  return std::nullopt;
}

void producer_state_manager::delete_snapshots_before(int64_t offset) {
  auto offsets = snapshot_offsets();
  std::error_code ec;
  for (size_t i = 0; i + 1 < offsets.size(); ++i)
    if (offsets[i] < offset) std::filesystem::remove(snapshot_path(offsets[i]), ec);
}

void producer_state_manager::delete_snapshots_after(int64_t offset) {
  if (last_snapshot_offset_ > offset) last_snapshot_offset_ = -1;
  std::error_code ec;
  for (int64_t o : snapshot_offsets())
    if (o > offset) std::filesystem::remove(snapshot_path(o), ec);
}

}  // namespace sluice::storage
