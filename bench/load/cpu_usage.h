#pragma once
// cpu_usage: CPU seconds (user + system) of this process and of other processes (the broker), for the figures
// "CPU seconds per million records" of sluice_load.
#include <optional>
#include <vector>

namespace sluice::bench {

/// This process, all threads: getrusage(RUSAGE_SELF) user + system time, in seconds (microsecond resolution).
double self_cpu_seconds();

/// Process `pid`, all threads: utime + stime of /proc/<pid>/stat (fields 14 and 15) divided by sysconf(_SC_CLK_TCK),
/// in seconds (10 ms resolution at the usual 100 ticks per second). nullopt when the file cannot be read or parsed
/// (no such process, another user's process on a hardened /proc).
std::optional<double> process_cpu_seconds(int pid);

/// Sum of process_cpu_seconds over `pids`; nullopt when `pids` is empty or any of them cannot be read.
std::optional<double> processes_cpu_seconds(const std::vector<int>& pids);

}  // namespace sluice::bench
