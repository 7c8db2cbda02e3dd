#include "bench/load/cpu_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace sluice::bench {

double self_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

std::optional<double> process_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After ')': field 3 (state) is the first; utime is field 14, stime field 15.
  for (int i = 3; i <= 15; ++i) {
    if (!(rest >> field)) return std::nullopt;
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  return static_cast<double>(utime + stime) / static_cast<double>(ticks);
}

std::optional<double> processes_cpu_seconds(const std::vector<int>& pids) {
  if (pids.empty()) return std::nullopt;
  double total = 0;
  for (int pid : pids) {
    auto s = process_cpu_seconds(pid);
    if (!s) return std::nullopt;
    total += *s;
  }
  return total;
}

}  // namespace sluice::bench
