#include "storage/time_index.h"

#include <algorithm>
#include <climits>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

sluice::result<time_index> time_index::open(const std::filesystem::path& path, int64_t base_offset) {
  std::vector<uint8_t> bytes;
  auto f = detail::index_file::open(path, bytes);
  if (!f) return f.err();
  time_index idx;
  idx.file_ = std::move(f.value());
  idx.base_offset_ = base_offset;
  idx.loaded_sane_ = bytes.size() % entry_size == 0;
  for (size_t p = 0; p + entry_size <= bytes.size(); p += entry_size) {
    const int64_t ts = detail::load_be<int64_t>(bytes.data() + p);
    const int64_t rel = detail::load_be<int32_t>(bytes.data() + p + 8);
    if (rel < 0 || (!idx.entries_.empty() && (ts <= idx.entries_.back().timestamp ||
                                              base_offset + rel < idx.entries_.back().offset))) {
      idx.loaded_sane_ = false;
      break;
    }
    idx.entries_.push_back({ts, base_offset + rel});
  }
  idx.persisted_ = idx.entries_.size();
  return idx;
}

sluice::result<void> time_index::maybe_append(int64_t timestamp, int64_t offset) {
  if (!entries_.empty() && timestamp <= entries_.back().timestamp) return {};
  if (!entries_.empty() && offset < entries_.back().offset) return {};
  const int64_t rel = offset - base_offset_;
  if (rel < 0 || rel > INT32_MAX) return make_error(errc::invalid_argument, "time index offset out of range");
  entries_.push_back({timestamp, offset});
  return {};
}

sluice::result<void> time_index::flush() {
  if (auto w = write_pending(); !w) return w;
  return file_.flush();
}

sluice::result<void> time_index::write_pending() {
  return file_.write_entries(persisted_, entries_.size(), entry_size, [&](size_t i, uint8_t* out) {
    detail::store_be<int64_t>(out, entries_[i].timestamp);
    detail::store_be<int32_t>(out + 8, static_cast<int32_t>(entries_[i].offset - base_offset_));
  });
}

timestamp_offset time_index::lookup(int64_t timestamp) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), timestamp,
                             [](int64_t t, const timestamp_offset& e) { return t < e.timestamp; });
  if (it == entries_.begin()) return {-1, base_offset_};
  return *std::prev(it);
}

timestamp_offset time_index::last_entry() const {
  return entries_.empty() ? timestamp_offset{-1, base_offset_} : entries_.back();
}

sluice::result<void> time_index::truncate_to(int64_t offset) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [offset](const timestamp_offset& e) { return e.offset >= offset; });
  entries_.erase(it, entries_.end());
  loaded_sane_ = true;
  return file_.cut_entries(persisted_, entries_.size(), entry_size);
}

}  // namespace sluice::storage
