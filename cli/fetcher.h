#pragma once
// fetcher: reads partitions of one topic from their leaders with Fetch (sessionless full fetches, KIP-227's
// session epoch -1; read_uncommitted), walks the v2 batches of each answer (control batches skipped,
// compressed batches decompressed) and hands each record at or after the partition's position to a callback.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "cli/context.h"
#include "cli/record_format.h"

namespace sluice::cli {

class fetcher {
 public:
  /// `positions`: partition -> next offset to read.
  fetcher(context& ctx, std::string topic, std::map<int32_t, int64_t> positions, int32_t max_wait_ms = 500);

  /// One Fetch to each leader; `on_record` returns false to stop at once (the rest of the answer is dropped and
  /// the position stays after the last record handed over). Returns false when stopped.
  /// Retriable partition errors (leader moves) refresh the metadata; others throw failure(kafka_error).
  bool poll(const std::function<bool(const consumed_record&)>& on_record);

  /// What to do when a position is out of the log (OFFSET_OUT_OF_RANGE: the records were deleted by retention, or
  /// the topic was made again): the new position of the partition, as the Java consumer's auto.offset.reset does.
  /// Without one, OFFSET_OUT_OF_RANGE is a failure (a position the user asked for, `consume --from 100`).
  void on_out_of_range(std::function<int64_t(int32_t partition, int64_t position)> reset) { reset_ = std::move(reset); }

  const std::map<int32_t, int64_t>& positions() const { return positions_; }
  /// The high watermark each partition had in its last answer (-1 before any).
  const std::map<int32_t, int64_t>& high_watermarks() const { return high_watermarks_; }
  /// True when every partition's position reached the high watermark of its last answer.
  bool at_end() const;

 private:
  context& ctx_;
  std::string topic_;
  std::map<int32_t, int64_t> positions_;
  std::map<int32_t, int64_t> high_watermarks_;
  int32_t max_wait_ms_;
  std::optional<topic_info> meta_;  // re-read after a retriable partition error
  std::function<int64_t(int32_t, int64_t)> reset_;
};

}  // namespace sluice::cli
