#pragma once
// Log compaction in the background (Kafka's LogCleaner and LogCleanerManager): log.cleaner.threads threads,
// each taking the dirtiest compacted log (cleanup.policy contains "compact") and running one pass of
// storage/log_cleaner.h over it: the plan and the swap on the partition's strand, the reading and writing
// on the cleaner thread, off the request path.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/topic_registry.h"
#include "storage/offset_checkpoint.h"

namespace sluice::broker {

/// Broker keys (Kafka's names and defaults): log.cleaner.enable (true), log.cleaner.threads (1),
/// log.cleaner.dedupe.buffer.size (134217728 bytes, split between the threads; a pass allocates only what
/// its dirty bytes can need, at most its share, and frees it after), log.cleaner.io.buffer.load.factor (0.9),
/// log.cleaner.io.max.bytes.per.second (unlimited), log.cleaner.backoff.ms (15000: the sleep when no log
/// needs cleaning). Topic keys: min.cleanable.dirty.ratio, min.compaction.lag.ms, max.compaction.lag.ms,
/// delete.retention.ms (with their log.cleaner.* broker defaults).
///
/// A log is cleaned when its dirty ratio (bytes at or above its cleaner checkpoint over the bytes of its
/// cleanable segments) reaches min.cleanable.dirty.ratio, when its oldest dirty segment is older than
/// max.compaction.lag.ms, or when the delete horizon of its kept tombstones has passed (KIP-534); the
/// dirtiest goes first. Checkpoints: "cleaner-offset-checkpoint" in each log dir (Kafka's name and format),
/// written after each pass.
///
/// Threads: its own (std::thread); the partition work goes to the partitions' strands and is waited for.
/// stop() must run before the io_context stops. /metrics: kafka_log_logcleanermanager_max_dirty_percent,
/// kafka_log_logcleaner_max_compaction_delay_secs, sluice_log_cleaner_{passes,bytes_read,bytes_written,bytes_freed,
/// records_removed}_total.
class log_cleaner_manager {
 public:
  log_cleaner_manager(const broker_config& config, topic_registry& topics, sluice::clock& clock);
  ~log_cleaner_manager();

  void start();
  /// Stops the threads (a pass under way is abandoned: its ".cleaned" files are removed) and joins them.
  void stop();

  /// Totals since start, for /metrics and tests (any thread).
  struct totals {
    int64_t passes = 0;           // passes that installed or found nothing to rewrite
    int64_t bytes_read = 0;
    int64_t bytes_written = 0;
    int64_t bytes_freed = 0;
    int64_t records_removed = 0;
    double max_dirty_ratio = 0;   // of the last selection round (Kafka's max-dirty-percent / 100)
    int64_t max_compaction_delay_ms = 0;  // of the last selection round: how far past max.compaction.lag.ms
  };
  totals stats() const;

 private:
  struct candidate;
  void run();
  bool clean_filthiest();
  void write_checkpoints();
  void load_checkpoints();

  const broker_config& config_;
  topic_registry& topics_;
  sluice::clock& clock_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  int collector_ = 0;  // the /metrics collector's handle

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  // First dirty offset per log, with the id of the topic it belongs to once a selection round has seen it (a
  // topic deleted and made again under its name starts dirty from its log start, as Kafka drops the entry).
  struct checkpoint {
    int64_t offset = 0;
    std::optional<coordination::topic_id> topic;
  };
  std::map<storage::topic_partition, checkpoint> checkpoints_;
  std::map<storage::topic_partition, int64_t> delete_horizons_;  // latest kept tombstone horizon per log
  std::set<storage::topic_partition> in_progress_;
  totals totals_;
};

}  // namespace sluice::broker
