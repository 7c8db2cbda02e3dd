#include "storage/offset_index.h"

#include <algorithm>
#include <climits>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

sluice::result<offset_index> offset_index::open(const std::filesystem::path& path, int64_t base_offset) {
  std::vector<uint8_t> bytes;
  auto f = detail::index_file::open(path, bytes);
  if (!f) return f.err();
  offset_index idx;
  idx.file_ = std::move(f.value());
  idx.base_offset_ = base_offset;
  idx.loaded_sane_ = bytes.size() % entry_size == 0;
  for (size_t p = 0; p + entry_size <= bytes.size(); p += entry_size) {
    const int64_t rel = detail::load_be<int32_t>(bytes.data() + p);
    const int64_t pos = detail::load_be<int32_t>(bytes.data() + p + 4);
    if (rel < 0 || pos < 0 ||
        (!idx.entries_.empty() && (base_offset + rel <= idx.entries_.back().offset ||
                                   pos <= idx.entries_.back().position))) {
      idx.loaded_sane_ = false;
      break;
    }
    idx.entries_.push_back({base_offset + rel, pos});
  }
  idx.persisted_ = idx.entries_.size();
  return idx;
}

bool offset_index::sane(int64_t log_size) const {
  if (!loaded_sane_) return false;
  return entries_.empty() || entries_.back().position < log_size;
}

sluice::result<void> offset_index::append(int64_t offset, int64_t position) {
  if (!entries_.empty() && (offset <= entries_.back().offset || position <= entries_.back().position)) {
    return make_error(errc::invalid_argument, "offset index entries must increase");
  }
  const int64_t rel = offset - base_offset_;
  if (rel < 0 || rel > INT32_MAX || position > INT32_MAX) {
    return make_error(errc::invalid_argument, "offset index entry out of int32 range");
  }
  entries_.push_back({offset, position});
  return {};
}

sluice::result<void> offset_index::flush() {
  if (auto w = write_pending(); !w) return w;
  return file_.flush();
}

sluice::result<void> offset_index::write_pending() {
  return file_.write_entries(persisted_, entries_.size(), entry_size, [&](size_t i, uint8_t* out) {
    detail::store_be<int32_t>(out, static_cast<int32_t>(entries_[i].offset - base_offset_));
    detail::store_be<int32_t>(out + 4, static_cast<int32_t>(entries_[i].position));
  });
}

offset_position offset_index::lookup(int64_t offset) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), offset,
                             [](int64_t o, const offset_position& e) { return o < e.offset; });
  if (it == entries_.begin()) return {base_offset_, 0};
  return *std::prev(it);
}

sluice::result<void> offset_index::truncate_to(int64_t offset) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), offset,
                             [](const offset_position& e, int64_t o) { return e.offset < o; });
  entries_.erase(it, entries_.end());
  loaded_sane_ = true;
  return file_.cut_entries(persisted_, entries_.size(), entry_size);
}

}  // namespace sluice::storage
