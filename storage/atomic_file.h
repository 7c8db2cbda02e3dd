#pragma once
// Files replaced whole (checkpoints, snapshots): written to "<file>.tmp", fsynced, renamed over the file, the
// directory fsynced, so that a crash leaves either the old file or the new one.
#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace sluice::storage {

/// What a full disk (ENOSPC, EDQUOT before the rename) means for the caller.
enum class full_disk {
  /// The previous file is still whole and a later write replaces it (periodic checkpoints, snapshots that can be
  /// rebuilt from the log): an errc::io_error for the caller only.
  keeps_old_file,
  /// The file must hold what memory holds (the leader-epoch checkpoint): a log dir failure, as any other error.
  fails_dir,
};

/// Replaces `file` with `bytes`. Errors: errc::io_error. Every failure other than a full disk under
/// full_disk::keeps_old_file (EIO, a failed fsync of the file or its directory, a failed rename) is also reported
/// with report_log_dir_failure (storage/log_dir_failure.h; Kafka: the checkpoint's IOException takes the dir
/// offline): after it, what the disk holds is unknown.
/// `durable` false: the same without the two fsyncs, for a file its owner has synced later (log.cc: the producer
/// snapshot of a roll, synced by the background flush of the rolled segment). Until then a crash can leave the new
/// name with fewer bytes, which the owner's reader must refuse.
sluice::result<void> replace_file(const std::filesystem::path& file, std::string_view bytes, full_disk on_full_disk,
                                  bool durable = true);

}  // namespace sluice::storage
