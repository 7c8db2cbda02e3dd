#include "storage/transaction_index.h"

#include <cstdio>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

namespace {
constexpr int16_t entry_version = 0;
}  // namespace

std::vector<uint8_t> transaction_index::encode(const aborted_txn& txn) {
  std::vector<uint8_t> b(aborted_txn_entry_size);
  detail::store_be<int16_t>(b.data(), entry_version);
  detail::store_be<int64_t>(b.data() + 2, txn.producer_id);
  detail::store_be<int64_t>(b.data() + 10, txn.first_offset);
  detail::store_be<int64_t>(b.data() + 18, txn.last_offset);
  detail::store_be<int64_t>(b.data() + 26, txn.last_stable_offset);
  return b;
}

sluice::result<transaction_index> transaction_index::open(const std::filesystem::path& path) {
  std::vector<uint8_t> contents;
  auto f = detail::index_file::open(path, contents);
  if (!f) return f.err();
  transaction_index idx;
  idx.file_ = std::move(*f);
  if (contents.size() % aborted_txn_entry_size != 0) {
    return make_error(errc::corrupt_message, path.string() + ": size " + std::to_string(contents.size()) +
                                                 " is not a multiple of " + std::to_string(aborted_txn_entry_size));
  }
  for (size_t pos = 0; pos < contents.size(); pos += aborted_txn_entry_size) {
    const uint8_t* p = contents.data() + pos;
    const auto version = detail::load_be<int16_t>(p);
    if (version != entry_version) {
      return make_error(errc::corrupt_message, path.string() + ": entry version " + std::to_string(version));
    }
    aborted_txn t{detail::load_be<int64_t>(p + 2), detail::load_be<int64_t>(p + 10),
                  detail::load_be<int64_t>(p + 18), detail::load_be<int64_t>(p + 26)};
    if (!idx.entries_.empty() && t.last_offset <= idx.entries_.back().last_offset) {
      return make_error(errc::corrupt_message, path.string() + ": last offsets out of order at entry " +
                                                   std::to_string(idx.entries_.size()));
    }
    idx.entries_.push_back(t);
  }
  return idx;
}

sluice::result<void> transaction_index::append(const aborted_txn& txn) {
  if (!entries_.empty() && txn.last_offset <= entries_.back().last_offset) {
    return make_error(errc::invalid_argument, "aborted transaction at " + std::to_string(txn.last_offset) +
                                                  " is not after the last one at " +
                                                  std::to_string(entries_.back().last_offset));
  }
  auto bytes = encode(txn);
  auto w = file_.write_at(static_cast<int64_t>(entries_.size() * aborted_txn_entry_size), bytes);
  if (!w) return w;
  entries_.push_back(txn);
  return {};
}

bool transaction_index::collect_aborted(int64_t fetch_offset, int64_t upper_bound,
                                        std::vector<aborted_txn>& out) const {
  for (const auto& t : entries_) {
    if (t.last_offset >= fetch_offset && t.first_offset < upper_bound) out.push_back(t);
    if (t.last_stable_offset >= upper_bound) return true;
  }
  return false;
}

sluice::result<void> transaction_index::truncate_to(int64_t offset) {
  size_t keep = 0;
  while (keep < entries_.size() && entries_[keep].last_offset < offset) ++keep;
  if (keep == entries_.size()) return {};
  auto t = file_.truncate(static_cast<int64_t>(keep * aborted_txn_entry_size));
  if (!t) return t;
  entries_.resize(keep);
  return {};
}

sluice::result<void> transaction_index::reset() { return truncate_to(INT64_MIN); }

sluice::result<void> transaction_index::flush() { return file_.flush(); }

void transaction_index::close() { file_.close(); }

sluice::result<void> transaction_index::rename_to(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::rename(file_.path(), path, ec);
  if (ec) return make_error(errc::io_error, "rename " + file_.path().string() + ": " + ec.message());
  file_.set_path(path);
  return {};
}

}  // namespace sluice::storage
