#pragma once
// All partition logs of this broker across its log dirs (Kafka's LogManager). Directory names are
// "<topic>-<partition>", split at the LAST '-' (topic names may contain '-'). Each log dir also holds the
// two offset checkpoint files (see offset_checkpoint.h).
//
// Threading: the map of logs is guarded by a mutex, so create/get/remove/partitions may be called from any
// thread. The logs themselves are NOT thread-safe: each belongs to its partition's strand. flush_all() and
// close_all() touch every log, so call them only when no strand is using the logs (shutdown); a running
// broker flushes through each partition's strand and calls write_checkpoints(), which reads only each
// log's published checkpoint_state().
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "storage/background_flusher.h"
#include "storage/log.h"
#include "storage/offset_checkpoint.h"

namespace sluice::storage {

class log_manager {
 public:
  /// `log_dirs`: log.dirs (at least one). `default_config`: the config of logs found by load().
  log_manager(std::vector<std::filesystem::path> log_dirs, log_config default_config, sluice::clock& clock);
  ~log_manager();
  log_manager(const log_manager&) = delete;
  log_manager& operator=(const log_manager&) = delete;

  /// Creates missing log dirs and opens every "<topic>-<partition>" directory in them, recovering from the
  /// recovery points of recovery-point-offset-checkpoint. Deletes leftover "*-delete" directories; skips
  /// other entries. The same partition in two log dirs: errc::already_exists. I/O: errc::io_error.
  sluice::result<void> load();

  /// Creates the log of a new partition in the log dir holding the fewest partitions, or returns the
  /// existing one (Kafka's getOrCreateLog). Topic names follow Kafka's rule: 1..249 characters of
  /// [a-zA-Z0-9._-], not "." or ".."; partition >= 0; else errc::invalid_argument.
  sluice::result<log*> create(const std::string& topic, int32_t partition, log_config config);

  /// The log of a partition, or nullptr.
  log* get(const std::string& topic, int32_t partition) const;

  /// Closes the log and deletes its directory: renamed to "<topic>-<partition>.<32 hex>-delete" (so a crash
  /// mid-delete never leaves a half directory that loads), then removed by a background thread, as Kafka's
  /// delayed deletion of "-delete" directories (without its file.delete.delay.ms: at once). A directory still
  /// waiting at shutdown is removed by the destructor, or by the next load(). errc::not_found if absent.
  /// The caller makes sure no strand still uses the log.
  /// `rewrite_checkpoints` false: the caller removes several and calls write_checkpoints() once after them.
  sluice::result<void> remove(const std::string& topic, int32_t partition, bool rewrite_checkpoints = true);

  /// AlterReplicaLogDirs (KIP-113): moves the log of a partition to log dir `dest_index` (of log_dirs()) and returns
  /// the log that replaces it there (the old one is closed: its owner switches to the new one at once). The log is
  /// flushed and copied, file by file, into "<topic>-<partition>.<32 hex>-future" in the destination, fsynced, and
  /// only then swapped in: the old directory is renamed "-delete" (removed in the background), the future one takes
  /// the partition's name. A crash before that rename leaves the old log in place (load() drops the future copy);
  /// after it, load() finishes the move (a "-future" directory whose partition has no log is complete). Compaction
  /// files being written (".cleaned") are not copied. Already there: the current log. The caller runs this on the
  /// partition's strand (nothing else uses the log meanwhile; appends wait for the copy). Errors:
  /// errc::not_found (no such log), errc::invalid_argument (dest out of range), errc::io_error (the copy failed:
  /// the partial copy is removed and the old log stays in use).
  sluice::result<log*> move(const std::string& topic, int32_t partition, size_t dest_index);
  /// The index in log_dirs() of the log of a partition, or nullopt when it has none.
  std::optional<size_t> dir_index_of(const std::string& topic, int32_t partition) const;
  /// The index in log_dirs() whose absolute path is `path` exactly (Kafka's isLogDirOnline compares absolute
  /// paths), or nullopt.
  std::optional<size_t> find_log_dir(const std::string& path) const;
  /// Where create() will put this partition's log if it is created later (Kafka's maybeUpdatePreferredLogDir: an
  /// AlterReplicaLogDirs that came before the replica). Forgotten once used.
  void set_preferred_dir(const std::string& topic, int32_t partition, size_t dir_index);
  /// The name of a partition's "-future" directory is this many bytes longer than its own (".<32 hex>-future");
  /// Kafka refuses a move whose future name passes 255 bytes.
  static constexpr size_t future_suffix_bytes = 1 + 32 + 7;

  /// Every partition with a log, sorted.
  std::vector<std::pair<std::string, int32_t>> partitions() const;

  /// Flushes every log, then writes the checkpoints. See the threading note above.
  sluice::result<void> flush_all();
  /// Flushes and closes every log, writes the checkpoints (a clean shutdown: the next load rescans only
  /// past each recovery point) and forgets the logs.
  void close_all();
  /// Writes recovery-point-offset-checkpoint and log-start-offset-checkpoint in every log dir from each
  /// log's published checkpoint_state(). Safe while strands run.
  sluice::result<void> write_checkpoints();

  const std::vector<std::filesystem::path>& log_dirs() const { return log_dirs_; }
  const log_config& default_config() const { return default_config_; }

  /// "<topic>-<partition>" -> (topic, partition), splitting at the last '-'; nullopt if not of that form.
  static std::optional<topic_partition> parse_partition_dir(const std::string& name);

 private:
  struct entry {
    std::unique_ptr<storage::log> partition_log;
    size_t dir_index = 0;
  };
  sluice::result<void> write_checkpoints_locked();
  /// log::open, with rolls handing their fsyncs to flusher_.
  sluice::result<std::unique_ptr<log>> open_log(const std::filesystem::path& dir, const log_config& config,
                                                log_recovery_state state = {});

  std::vector<std::filesystem::path> log_dirs_;
  log_config default_config_;
  sluice::clock& clock_;
  // The fsyncs of rolled segments (storage/background_flusher.h). Declared before logs_: it outlives them.
  background_flusher flusher_;
  mutable std::mutex mutex_;
  std::map<topic_partition, entry> logs_;
  std::map<topic_partition, size_t> preferred_dirs_;  // set_preferred_dir

  // The background deleter of renamed "-delete" directories.
  void delete_in_background(std::filesystem::path doomed);
  void deleter_loop();
  std::mutex doomed_mutex_;
  std::condition_variable doomed_cv_;
  std::deque<std::filesystem::path> doomed_;
  bool stopping_ = false;
  std::thread deleter_;
};

}  // namespace sluice::storage
