#include "storage/log_cleaner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "storage/byte_order.h"
#include "storage/errc.h"
#include "storage/index_file.h"
#include "storage/record_batch.h"
#include "storage/scan_reader.h"
#include "storage/segment.h"

namespace sluice::storage {

// ---- offset_map -----------------------------------------------------------------------------------------

namespace {

// A 64-bit hash of `key` under `seed` (multiply-xorshift over 8-byte words, then a final avalanche). Two
// seeds give the map's 128-bit key hash.
uint64_t hash64(std::span<const uint8_t> key, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  uint64_t h = seed ^ (key.size() * m);
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) {
    uint64_t k;
    std::memcpy(&k, key.data() + i, 8);
    k *= m;
    k ^= k >> 47;
    k *= m;
    h ^= k;
    h *= m;
  }
  uint64_t tail = 0;
  for (size_t j = 0; i + j < key.size(); ++j) tail |= uint64_t{key[i + j]} << (8 * j);
  h ^= tail;
  h *= m;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

offset_map::offset_map(size_t memory_bytes, double load_factor) {
  const size_t n = std::max<size_t>(2, memory_bytes / slot_bytes);
  slots_.resize(n);
  max_entries_ = std::max<size_t>(1, static_cast<size_t>(std::floor(static_cast<double>(n) * load_factor)));
  max_entries_ = std::min(max_entries_, n - 1);  // one slot always stays empty: probing ends
}

size_t offset_map::find(uint64_t hi, uint64_t lo) const {
  size_t i = static_cast<size_t>(lo % slots_.size());
  while (slots_[i].offset >= 0 && (slots_[i].hash_hi != hi || slots_[i].hash_lo != lo)) {
    i = i + 1 == slots_.size() ? 0 : i + 1;
  }
  return i;
}

void offset_map::put(std::span<const uint8_t> key, int64_t offset) {
  const uint64_t hi = hash64(key, 0x9e3779b97f4a7c15ULL);
  const uint64_t lo = hash64(key, 0x2545f4914f6cdd1dULL);
  const size_t i = find(hi, lo);
  if (slots_[i].offset < 0) {
    if (size_ >= slots_.size() - 1) return;  // callers stop at full(); never fill the last slot
    slots_[i].hash_hi = hi;
    slots_[i].hash_lo = lo;
    ++size_;
  }
  slots_[i].offset = offset;
  latest_offset_ = std::max(latest_offset_, offset);
}

int64_t offset_map::get(std::span<const uint8_t> key) const {
  const uint64_t hi = hash64(key, 0x9e3779b97f4a7c15ULL);
  const uint64_t lo = hash64(key, 0x2545f4914f6cdd1dULL);
  return slots_[find(hi, lo)].offset;
}

void offset_map::clear() {
  std::fill(slots_.begin(), slots_.end(), slot{});
  size_ = 0;
  latest_offset_ = -1;
}

// ---- cleaning_plan ----------------------------------------------------------------------------------------

int64_t cleaning_plan::dirty_bytes() const {
  int64_t n = 0;
  for (const auto& s : segments)
    if (s.next_offset > first_dirty_offset) n += s.size_bytes;
  return n;
}

int64_t cleaning_plan::total_bytes() const {
  int64_t n = 0;
  for (const auto& s : segments) n += s.size_bytes;
  return n;
}

// ---- io_throttler -----------------------------------------------------------------------------------------

io_throttler::io_throttler(double bytes_per_second, sluice::clock& clock, std::function<void(int64_t)> sleep_ms)
    : rate_(bytes_per_second), clock_(clock), sleep_(std::move(sleep_ms)), start_ms_(clock.monotonic_ms()) {}

void io_throttler::maybe_throttle(int64_t total_bytes) {
  if (!(rate_ > 0) || std::isinf(rate_)) return;
  const double due_ms = static_cast<double>(total_bytes) / rate_ * 1000.0;
  const int64_t elapsed = clock_.monotonic_ms() - start_ms_;
  const int64_t ahead = static_cast<int64_t>(due_ms) - elapsed;
  if (ahead > 0) sleep_(ahead);
}

// ---- clean_log --------------------------------------------------------------------------------------------

namespace {

// One segment file read batch by batch through a descriptor of our own.
class segment_file_reader {
 public:
  static sluice::result<segment_file_reader> open(const std::filesystem::path& dir, const cleanable_segment& s) {
    const auto path = dir / detail::segment_file_name(s.base_offset, ".log");
    if (s.file) return segment_file_reader(s.file, s.size_bytes, path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return detail::io_error("open (removed while cleaning?)", path);
    return segment_file_reader(std::make_shared<const file_handle>(fd), s.size_bytes, path);
  }

  // The next whole batch, or an empty span at the end (the plan's size bounds the scan: the segment is
  // inactive, so that is all of it). Errors: errc::corrupt_message.
  sluice::result<std::span<const uint8_t>> next() {
    if (pos_ + log_overhead > size_) return std::span<const uint8_t>{};
    const uint8_t* p = reader_->get(pos_, log_overhead);
    if (p == nullptr) return detail::io_error("read", path_);
    const int64_t total = int64_t{detail::load_be<int32_t>(p + batch_field::batch_length)} + log_overhead;
    if (total < record_batch_header_size || pos_ + total > size_) {
      return make_error(errc::corrupt_message, "bad batch length at position " + std::to_string(pos_) + " of " +
                                                   path_.string());
    }
    p = reader_->get(pos_, static_cast<size_t>(total));
    if (p == nullptr) return detail::io_error("read", path_);
    pos_ += total;
    return std::span<const uint8_t>(p, static_cast<size_t>(total));
  }

 private:
  segment_file_reader(std::shared_ptr<const file_handle> file, int64_t size, std::filesystem::path path)
      : file_(std::move(file)), size_(size), path_(std::move(path)),
        reader_(std::make_unique<detail::scan_reader>(file_->fd(), size)) {}
  std::shared_ptr<const file_handle> file_;
  int64_t size_;
  int64_t pos_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<detail::scan_reader> reader_;
};

// The records of one batch: the batch's own bytes, or its decompressed payload kept alive here.
struct batch_records {
  std::vector<uint8_t> decompressed;
  std::span<const uint8_t> bytes;
};

sluice::result<batch_records> records_of(const record_batch_header& h, std::span<const uint8_t> batch) {
  batch_records out;
  const auto payload = batch.subspan(record_batch_header_size);
  if (h.compression() == compression_codec::none) {
    out.bytes = payload;
    return out;
  }
  auto d = decompress(h.compression(), payload);
  if (!d) return d.err();
  out.decompressed = std::move(*d);
  out.bytes = out.decompressed;
  return out;
}

bool is_aborted(const cleaning_plan& plan, const record_batch_header& h) {
  if (!h.is_transactional() || h.is_control()) return false;
  return std::any_of(plan.aborted.begin(), plan.aborted.end(), [&](const aborted_txn& t) {
    return t.producer_id == h.producer_id && t.first_offset <= h.base_offset && h.base_offset <= t.last_offset;
  });
}

class cleaner_pass {
 public:
  cleaner_pass(const cleaning_plan& plan, const cleaning_options& options, offset_map& map, cleaning_result& out)
      : plan_(plan), options_(options), map_(map), out_(out) {}

  // Maps the dirty part; sets out_.end_offset.
  sluice::result<void> build_map() {
    map_.clear();
    out_.end_offset = plan_.first_uncleanable_offset;
    for (const auto& s : plan_.segments) {
      if (s.next_offset <= plan_.first_dirty_offset) continue;
      bool full = false;
      auto done = for_each_batch(s, [&](std::span<const uint8_t> batch) -> sluice::result<bool> {
        const auto h = decode_record_batch_header(batch.data());
        if (h.last_offset() < plan_.first_dirty_offset || h.is_control() || is_aborted(plan_, h)) return true;
        auto recs = records_of(h, batch);
        if (!recs) return recs.err();
        auto it = record_iterator::over_records(h, recs->bytes);
        record_view r;
        while (it.next(r)) {
          if (r.offset < plan_.first_dirty_offset || !r.key) continue;
          if (map_.full()) {  // everything below this record is mapped
            out_.end_offset = r.offset;
            full = true;
            return false;
          }
          map_.put(bytes_of(*r.key), r.offset);
        }
        if (it.error()) return *it.error();
        return true;
      });
      if (!done) return done.err();
      if (full) break;
    }
    out_.stats.keys_mapped = map_.size();
    return {};
  }

  // Rewrites every segment below the end offset, in groups.
  sluice::result<void> rewrite() {
    std::vector<cleanable_segment> group;
    int64_t group_bytes = 0;
    auto flush_group = [&]() -> sluice::result<void> {
      if (group.empty()) return {};
      auto r = rewrite_group(group);
      group.clear();
      group_bytes = 0;
      return r;
    };
    for (const auto& s : plan_.segments) {
      if (s.base_offset >= out_.end_offset) break;
      const bool fits = group.empty() || (group_bytes + s.size_bytes <= plan_.segment_bytes &&
                                          s.next_offset - group.front().base_offset <= INT32_MAX);
      if (!fits) {
        if (auto r = flush_group(); !r) return r;
      }
      group.push_back(s);
      group_bytes += s.size_bytes;
    }
    return flush_group();
  }

 private:
  // Calls fn(batch) for each whole batch of segment `s`, with step() before each (cancellation, throttle) and
  // each batch's bytes counted as read; fn returns false to stop. Returns whether the segment was read to its end.
  template <typename F>
  sluice::result<bool> for_each_batch(const cleanable_segment& s, F&& fn) {
    auto reader = segment_file_reader::open(plan_.dir, s);
    if (!reader) return reader.err();
    for (;;) {
      if (auto r = step(); !r) return r.err();
      auto batch = reader->next();
      if (!batch) return batch.err();
      if (batch->empty()) return true;
      out_.stats.bytes_read += static_cast<int64_t>(batch->size());
      auto more = fn(*batch);
      if (!more) return more.err();
      if (!*more) return false;
    }
  }

  sluice::result<void> step() {
    if (options_.cancelled && options_.cancelled()) return make_error(errc::io_error, "cleaning cancelled");
    if (options_.throttle) options_.throttle(out_.stats.bytes_read + out_.stats.bytes_written);
    return {};
  }

  sluice::result<void> rewrite_group(const std::vector<cleanable_segment>& group) {
    const int64_t base = group.front().base_offset;
    group_changed_ = group.size() > 1;  // segments merged: a rewrite even if every batch stays
    auto seg = segment::create(plan_.dir, base, plan_.index_interval_bytes, options_.now_ms, segment_suffix::cleaned);
    if (!seg) return seg.err();
    bool ok = false;
    struct remove_on_failure {
      segment& s;
      bool& ok;
      ~remove_on_failure() {
        if (!ok) (void)s.remove_files();
      }
    } guard{**seg, ok};
    cleaned_group g;
    g.sources = group;
    g.base_offset = base;
    std::vector<uint8_t> pending;  // batches written in chunks of about 1 MiB
    auto write_pending = [&]() -> sluice::result<void> {
      if (pending.empty()) return {};
      auto r = (*seg)->append(pending);
      out_.stats.bytes_written += static_cast<int64_t>(pending.size());
      pending.clear();
      return r;
    };
    std::optional<record_batch_header> last;  // the group's last batch, when nothing of it was kept
    for (const auto& s : group) {
      g.bytes_before += s.size_bytes;
      auto done = for_each_batch(s, [&](std::span<const uint8_t> batch) -> sluice::result<bool> {
        const size_t before = pending.size();
        if (auto r = filter_batch(batch, pending); !r) return r.err();
        if (pending.size() == before) last = decode_record_batch_header(batch.data());
        else last.reset();
        if (pending.size() >= (size_t{1} << 20)) {
          if (auto r = write_pending(); !r) return r.err();
        }
        return true;
      });
      if (!done) return done.err();
      if (auto r = write_pending(); !r) return r;
      // An aborted transaction keeps its index entry while its ABORT marker stays: an entry without its marker
      // would make read_committed consumers skip every later batch of that producer, looking for the marker.
      for (const auto& t : plan_.aborted) {
        if (t.last_offset >= s.base_offset && t.last_offset < s.next_offset && kept_markers_.count(t.last_offset)) {
          if (auto r = (*seg)->append_aborted(t); !r) return r;
        }
      }
    }
    if (last) {
      // The cleaned segment ends where its sources did: an empty batch without producer at the last batch's
      // offsets (clients skip it), so the swap's next offset, which a restart uses to find the segments it
      // replaces, covers every source.
      append_filler_batch(*last, pending);
      if (auto r = write_pending(); !r) return r;
    }
    if (auto r = (*seg)->on_become_inactive(); !r) return r;
    g.bytes_after = (*seg)->size_bytes();
    (*seg)->close();
    if (!group_changed_) return {};  // every batch copied as it was: nothing to swap (the guard removes the files)
    ok = true;
    out_.groups.push_back(std::move(g));
    return {};
  }

  // Appends what survives of `batch` to `out`.
  sluice::result<void> filter_batch(std::span<const uint8_t> batch, std::vector<uint8_t>& out) {
    const auto h = decode_record_batch_header(batch.data());
    // An earlier pass's filler (an empty batch with no producer): dropped; the group's end gets one again if needed.
    if (h.records_count == 0 && h.producer_id < 0 && !h.is_control()) return {};
    if (h.is_control()) return filter_marker(h, batch, out);
    const bool aborted = is_aborted(plan_, h);
    auto recs = records_of(h, batch);
    if (!recs) return recs.err();
    const bool tombstones_live = !h.has_delete_horizon() || options_.now_ms < h.base_timestamp;
    std::vector<record_view> kept;
    kept.reserve(static_cast<size_t>(std::max(0, h.records_count)));
    bool kept_tombstone = false;
    int32_t total = 0;
    auto it = record_iterator::over_records(h, recs->bytes);
    record_view r;
    while (it.next(r)) {
      ++total;
      if (aborted) {
        ++out_.stats.aborted_records_removed;
        continue;
      }
      if (!r.key) continue;  // keyless records cannot be compacted: Kafka drops them too
      const bool latest = r.offset >= out_.end_offset || r.offset >= map_.get(bytes_of(*r.key));
      if (!latest) continue;
      if (!r.value) {
        if (!tombstones_live) {
          ++out_.stats.tombstones_removed;
          continue;
        }
        kept_tombstone = true;
      }
      kept.push_back(r);
    }
    if (it.error()) return *it.error();
    out_.stats.records_read += total;
    out_.stats.records_retained += static_cast<int64_t>(kept.size());
    if (h.is_transactional() && !kept.empty()) txn_has_data_[h.producer_id] = true;
    const bool set_horizon = kept_tombstone && !h.has_delete_horizon();
    if (kept_tombstone && h.has_delete_horizon()) note_horizon(h.base_timestamp);
    if (static_cast<int32_t>(kept.size()) == total && !set_horizon) {
      out.insert(out.end(), batch.begin(), batch.end());  // unchanged
      return {};
    }
    group_changed_ = true;
    if (set_horizon) note_horizon(options_.now_ms + options_.delete_retention_ms);
    if (kept.empty()) {
      auto last = plan_.producer_last_offsets.find(h.producer_id);
      if (h.producer_id >= 0 && last != plan_.producer_last_offsets.end() && last->second == h.last_offset()) {
        ++out_.stats.empty_batches_retained;
        append_empty_batch(h, out);
      }
      return {};
    }
    return append_rebuilt_batch(h, kept, set_horizon, kept_tombstone, out);
  }

  // A COMMIT/ABORT marker (Kafka's CleanedTransactionMetadata): kept while its transaction has records left in
  // the log (its data batches come before it, in this pass's walk from the log start); once none is left it gets a
  // delete horizon (now + delete.retention.ms, KIP-534) and after that it goes, so that a read_committed consumer
  // that began before the horizon still sees it. A removed marker that is its producer's last batch keeps its
  // header (RETAIN_EMPTY), as a data batch would.
  sluice::result<void> filter_marker(const record_batch_header& h, std::span<const uint8_t> batch,
                                     std::vector<uint8_t>& out) {
    const bool has_data = txn_has_data_[h.producer_id];
    txn_has_data_.erase(h.producer_id);  // the marker ends the producer's transaction
    if (has_data) {
      kept_markers_.insert(h.base_offset);
      out.insert(out.end(), batch.begin(), batch.end());
      return {};
    }
    if (h.has_delete_horizon() && options_.now_ms >= h.base_timestamp) {
      group_changed_ = true;  // its .txnindex entry goes with it (rewrite_group)
      ++out_.stats.markers_removed;
      auto last = plan_.producer_last_offsets.find(h.producer_id);
      if (last != plan_.producer_last_offsets.end() && last->second == h.last_offset()) append_empty_batch(h, out);
      return {};
    }
    kept_markers_.insert(h.base_offset);
    if (h.has_delete_horizon()) {  // waiting for its horizon
      note_horizon(h.base_timestamp);
      out.insert(out.end(), batch.begin(), batch.end());
      return {};
    }
    auto recs = records_of(h, batch);
    if (!recs) return recs.err();
    std::vector<record_view> kept;
    auto it = record_iterator::over_records(h, recs->bytes);
    record_view r;
    while (it.next(r)) kept.push_back(r);
    if (it.error()) return *it.error();
    if (kept.empty()) {
      out.insert(out.end(), batch.begin(), batch.end());
      return {};
    }
    group_changed_ = true;
    note_horizon(options_.now_ms + options_.delete_retention_ms);
    return append_rebuilt_batch(h, kept, true, false, out);
  }

  // A batch header with no records, keeping the producer's offsets and sequence (Kafka's writeEmptyHeader).
  static void append_empty_batch(const record_batch_header& h, std::vector<uint8_t>& out) {
    append_header_only(h, static_cast<int16_t>(h.attributes & ~batch_attribute::compression_mask), out);
  }

  // The offsets of `h` as an empty plain batch: no producer, not transactional, no control bit.
  static void append_filler_batch(const record_batch_header& h, std::vector<uint8_t>& out) {
    record_batch_header plain = h;
    plain.producer_id = -1;
    plain.producer_epoch = -1;
    plain.base_sequence = -1;
    append_header_only(plain, static_cast<int16_t>(h.attributes & batch_attribute::timestamp_type_bit), out);
  }

  static void append_header_only(const record_batch_header& h, int16_t attributes, std::vector<uint8_t>& out) {
    const size_t at = out.size();
    out.resize(at + record_batch_header_size);
    uint8_t* p = out.data() + at;
    detail::store_be<int64_t>(p + batch_field::base_offset, h.base_offset);
    detail::store_be<int32_t>(p + batch_field::batch_length, record_batch_header_size - log_overhead);
    detail::store_be<int32_t>(p + batch_field::partition_leader_epoch, h.partition_leader_epoch);
    p[batch_field::magic] = static_cast<uint8_t>(record_batch_magic_v2);
    detail::store_be<int16_t>(p + batch_field::attributes, attributes);
    detail::store_be<int32_t>(p + batch_field::last_offset_delta, h.last_offset_delta);
    detail::store_be<int64_t>(p + batch_field::base_timestamp, h.max_timestamp);
    detail::store_be<int64_t>(p + batch_field::max_timestamp, h.max_timestamp);
    detail::store_be<int64_t>(p + batch_field::producer_id, h.producer_id);
    detail::store_be<int16_t>(p + batch_field::producer_epoch, h.producer_epoch);
    detail::store_be<int32_t>(p + batch_field::base_sequence, h.base_sequence);
    detail::store_be<int32_t>(p + batch_field::records_count, 0);
    recompute_crc(std::span<uint8_t>(p, record_batch_header_size));
  }

  // The kept records as one batch of the same codec; offsets and the last offset delta unchanged
  // (Kafka's MemoryRecords.filterTo with overrideLastOffset).
  // A horizon stays only on a batch that still holds a tombstone (Kafka's containsTombstonesOrMarker).
  sluice::result<void> append_rebuilt_batch(const record_batch_header& h, const std::vector<record_view>& kept,
                                            bool set_horizon, bool kept_tombstone, std::vector<uint8_t>& out) {
    const bool log_append_time = h.ts_type() == timestamp_type::log_append_time;
    const bool keep_horizon = h.has_delete_horizon() && kept_tombstone;
    int64_t base_ts = kept.front().timestamp;  // records carry absolute timestamps: any base re-encodes them
    if (keep_horizon) base_ts = h.base_timestamp;
    else if (set_horizon) base_ts = options_.now_ms + options_.delete_retention_ms;
    int64_t max_ts = log_append_time ? h.max_timestamp : -1;
    std::vector<uint8_t> records;
    for (const auto& r : kept) {
      if (!log_append_time) max_ts = std::max(max_ts, r.timestamp);
      encode_record(records, static_cast<int32_t>(r.offset - h.base_offset), r.timestamp - base_ts, r.key, r.value,
                    r.headers);
    }
    std::vector<uint8_t> payload;
    if (h.compression() != compression_codec::none) {
      auto c = compress(h.compression(), records, plan_.levels);
      if (!c) return c.err();
      payload = std::move(*c);
    } else {
      payload = std::move(records);
    }
    int16_t attributes = static_cast<int16_t>(h.attributes & ~batch_attribute::delete_horizon_bit);
    if (set_horizon || keep_horizon) attributes = static_cast<int16_t>(attributes | batch_attribute::delete_horizon_bit);
    const size_t at = out.size();
    out.resize(at + record_batch_header_size + payload.size());
    uint8_t* p = out.data() + at;
    detail::store_be<int64_t>(p + batch_field::base_offset, h.base_offset);
    detail::store_be<int32_t>(p + batch_field::batch_length,
                      static_cast<int32_t>(record_batch_header_size + payload.size() - log_overhead));
    detail::store_be<int32_t>(p + batch_field::partition_leader_epoch, h.partition_leader_epoch);
    p[batch_field::magic] = static_cast<uint8_t>(record_batch_magic_v2);
    detail::store_be<int16_t>(p + batch_field::attributes, attributes);
    detail::store_be<int32_t>(p + batch_field::last_offset_delta, h.last_offset_delta);
    detail::store_be<int64_t>(p + batch_field::base_timestamp, base_ts);
    detail::store_be<int64_t>(p + batch_field::max_timestamp, max_ts);
    detail::store_be<int64_t>(p + batch_field::producer_id, h.producer_id);
    detail::store_be<int16_t>(p + batch_field::producer_epoch, h.producer_epoch);
    detail::store_be<int32_t>(p + batch_field::base_sequence, h.base_sequence);
    detail::store_be<int32_t>(p + batch_field::records_count, static_cast<int32_t>(kept.size()));
    std::copy(payload.begin(), payload.end(), p + record_batch_header_size);
    recompute_crc(std::span<uint8_t>(p, record_batch_header_size + payload.size()));
    return {};
  }

  void note_horizon(int64_t horizon) { out_.latest_delete_horizon = std::max(out_.latest_delete_horizon, horizon); }

  const cleaning_plan& plan_;
  const cleaning_options& options_;
  offset_map& map_;
  cleaning_result& out_;
  bool group_changed_ = false;  // some batch of the group being written was not copied as it was
  // Producer id -> whether its current transaction kept a record so far in this pass's walk.
  std::map<int64_t, bool> txn_has_data_;
  // Offsets of the markers written to the output (their aborted-transaction entries stay).
  std::set<int64_t> kept_markers_;
};

}  // namespace

sluice::result<cleaning_result> clean_log(const cleaning_plan& plan, const cleaning_options& options,
                                          offset_map& map) {
  cleaning_result result;
  cleaner_pass pass(plan, options, map, result);
  if (auto r = pass.build_map(); !r) return r.err();
  if (auto r = pass.rewrite(); !r) {
    // Groups already written are dropped with the pass.
    for (const auto& g : result.groups) segment::remove_files_of(plan.dir, g.base_offset, segment_suffix::cleaned);
    return r.err();
  }
  return result;
}

}  // namespace sluice::storage
