#include "storage/leader_epoch_cache.h"

#include <fstream>
#include <sstream>
#include <string>

#include "storage/atomic_file.h"
#include "storage/errc.h"
#include "storage/offset_checkpoint.h"

namespace sluice::storage {

sluice::result<leader_epoch_cache> leader_epoch_cache::load(const std::filesystem::path& dir) {
  leader_epoch_cache cache(dir);
  const auto file = dir / leader_epoch_checkpoint_file;
  std::ifstream in(file);
  if (!in) return cache;
  auto bad = [&](const std::string& what) { return make_error(errc::corrupt_message, file.string() + ": " + what); };
  std::string line;
  if (!std::getline(in, line)) return cache;
  if (line != "0") return bad("unsupported version '" + line + "'");
  if (!std::getline(in, line)) return bad("missing entry count");
  int64_t count = -1;
  std::istringstream(line) >> count;
  if (count < 0 || count > 1'000'000) return bad("bad entry count '" + line + "'");
  for (int64_t i = 0; i < count; ++i) {
    if (!std::getline(in, line)) return bad("expected " + std::to_string(count) + " entries");
    std::istringstream fields(line);
    int64_t epoch = -1;
    int64_t offset = -1;
    std::string extra;
    if (!(fields >> epoch >> offset) || (fields >> extra) || epoch < 0 || epoch > INT32_MAX || offset < 0)
      return bad("malformed entry '" + line + "'");
    if (!cache.entries_.empty() &&
        (epoch <= cache.entries_.back().epoch || offset < cache.entries_.back().start_offset))
      return bad("entries out of order at '" + line + "'");
    cache.entries_.push_back({static_cast<int32_t>(epoch), offset});
  }
  return cache;
}

sluice::result<void> leader_epoch_cache::persist() const {
  std::string text = "0\n" + std::to_string(entries_.size()) + "\n";
  for (const auto& e : entries_) text += std::to_string(e.epoch) + " " + std::to_string(e.start_offset) + "\n";
  // Unlike a periodic checkpoint, the file must hold what memory holds: a missing entry would come back after a
  // restart as an epoch starting at the wrong offset (OffsetsForLeaderEpoch, follower truncation). So even a full
  // disk fails the dir here, as Kafka's checkpoint write does (KafkaStorageException).
  return replace_file(dir_ / leader_epoch_checkpoint_file, text, full_disk::fails_dir);
}

sluice::result<void> leader_epoch_cache::assign(int32_t epoch, int64_t start_offset) {
  if (epoch < 0 || start_offset < 0) return {};
  if (!entries_.empty() && epoch <= entries_.back().epoch) return {};
  while (!entries_.empty() && entries_.back().start_offset >= start_offset) entries_.pop_back();
  entries_.push_back({epoch, start_offset});
  return persist();
}

epoch_entry leader_epoch_cache::end_offset_for(int32_t requested_epoch, int64_t log_end_offset) const {
  if (requested_epoch == undefined_epoch || entries_.empty()) return {undefined_epoch, undefined_offset};
  if (requested_epoch == entries_.back().epoch) return {requested_epoch, log_end_offset};
  // The first entry with an epoch above the requested one: the requested epoch (or the newest one below
  // it) ended where that entry starts.
  size_t higher = 0;
  while (higher < entries_.size() && entries_[higher].epoch <= requested_epoch) ++higher;
  if (higher == entries_.size()) return {undefined_epoch, undefined_offset};  // newer than anything known
  if (higher == 0) return {requested_epoch, entries_[0].start_offset};       // older than anything known
  return {entries_[higher - 1].epoch, entries_[higher].start_offset};
}

sluice::result<void> leader_epoch_cache::truncate_from_end(int64_t offset) {
  const size_t before = entries_.size();
  while (!entries_.empty() && entries_.back().start_offset >= offset) entries_.pop_back();
  return entries_.size() == before ? sluice::result<void>{} : persist();
}

sluice::result<void> leader_epoch_cache::truncate_from_start(int64_t offset) {
  // Keep the last entry starting at or below `offset` (moved up to it) and everything after.
  size_t keep_from = 0;
  while (keep_from + 1 < entries_.size() && entries_[keep_from + 1].start_offset <= offset) ++keep_from;
  if (entries_.empty() || (keep_from == 0 && entries_[0].start_offset >= offset)) return {};
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(keep_from));
  if (entries_[0].start_offset < offset) entries_[0].start_offset = offset;
  return persist();
}

void leader_epoch_cache::clear() {
  entries_.clear();
  std::error_code ec;
  std::filesystem::remove(dir_ / leader_epoch_checkpoint_file, ec);
}

}  // namespace sluice::storage
