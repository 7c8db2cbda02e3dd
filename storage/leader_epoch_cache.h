#pragma once
// Leader epochs of one partition (KIP-101, KIP-279): for every leader epoch, the first offset written in
// it. A follower asks the leader where its latest epoch ends (OffsetForLeaderEpoch) and truncates there,
// so a divergent uncommitted tail written under an old leader is removed.
//
// File `<partition dir>/leader-epoch-checkpoint`, Kafka's text format:
//   0              <- version
//   2              <- number of entries
//   0 0            <- epoch, start offset
//   3 1200
// Rewritten atomically on every change (changes happen once per leader change, not per append).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "base/result.h"

namespace sluice::storage {

inline constexpr const char* leader_epoch_checkpoint_file = "leader-epoch-checkpoint";

struct epoch_entry {
  int32_t epoch;
  int64_t start_offset;
  friend bool operator==(const epoch_entry&, const epoch_entry&) = default;
};

/// Not thread-safe: owned by the log, used on the partition's strand.
class leader_epoch_cache {
 public:
  /// Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
  static constexpr int32_t undefined_epoch = -1;
  static constexpr int64_t undefined_offset = -1;

  /// Loads `<dir>/leader-epoch-checkpoint` (missing: empty). A malformed file is an error
  /// (errc::corrupt_message); the caller may start empty then.
  static sluice::result<leader_epoch_cache> load(const std::filesystem::path& dir);
  explicit leader_epoch_cache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// Records that `epoch` starts at `start_offset` (Kafka's assign): ignored unless `epoch` is newer than
  /// the latest one; entries whose start offset is >= `start_offset` are replaced. Persists on change.
  sluice::result<void> assign(int32_t epoch, int64_t start_offset);

  /// The latest epoch, or undefined_epoch when empty.
  int32_t latest_epoch() const { return entries_.empty() ? undefined_epoch : entries_.back().epoch; }

  /// OffsetForLeaderEpoch (Kafka's endOffsetFor): for `requested_epoch`, the largest epoch <= it that this
  /// log knows and the offset where that epoch ended (the start offset of the next epoch, or
  /// `log_end_offset` for the latest). {undefined_epoch, undefined_offset} when the requested epoch is
  /// newer than any known or the cache is empty.
  epoch_entry end_offset_for(int32_t requested_epoch, int64_t log_end_offset) const;

  /// Truncation (KIP-101): removes entries starting at or after `offset`. Persists on change.
  sluice::result<void> truncate_from_end(int64_t offset);
  /// Log start moved to `offset` (retention, DeleteRecords): the entry covering it now starts there and
  /// older entries go. Persists on change.
  sluice::result<void> truncate_from_start(int64_t offset);
  /// Forgets every entry and deletes the file.
  void clear();

  const std::vector<epoch_entry>& entries() const { return entries_; }

 private:
  sluice::result<void> persist() const;
  std::filesystem::path dir_;
  std::vector<epoch_entry> entries_;  // ascending epochs and start offsets
};

}  // namespace sluice::storage
