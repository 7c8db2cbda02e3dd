#pragma once
// Log dir failures (Kafka's LogDirFailureChannel): an I/O error after which the log dir's data can no longer be
// trusted to be durable or consistent, so that the broker must stop serving it. Reported by storage for:
// - a failed fsync/fdatasync of a segment, an index or a directory (after a failed fsync, Linux may already have
//   dropped the dirty pages it could not write, and a later fsync can succeed without them);
// - a failed write that could not be cut back (the segment ends in a partial batch);
// - a failed write for any reason other than a full disk (ENOSPC, EDQUOT), which is cut back and answered
//   KAFKA_STORAGE_ERROR without failing the dir, so that appends work again once space returns;
// - a failed read or truncation of a segment (recovery never takes an unreadable file for a torn one);
// - a checkpoint or snapshot that cannot be replaced for a reason other than a full disk, and the leader-epoch
//   checkpoint for any reason (atomic_file.h);
// - a compaction swap that fails past its commit point.
// The operation that failed still returns its errc::io_error. With no handler set (unit tests, tools), a report
// only returns.
#include <filesystem>
#include <functional>
#include <string>

namespace sluice::storage {

/// `file`: the file or directory whose operation failed; `reason`: the operation and strerror text.
using log_dir_failure_handler = std::function<void(const std::filesystem::path& file, const std::string& reason)>;

/// Sets the process's handler (the broker sets one at start-up); thread-safe.
void set_log_dir_failure_handler(log_dir_failure_handler handler);

/// Calls the handler, if any; thread-safe. The handler may not return (the broker halts).
void report_log_dir_failure(const std::filesystem::path& file, const std::string& reason);

}  // namespace sluice::storage
