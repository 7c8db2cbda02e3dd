// sluice_bench's output (bench.h): one `k=v` line per mode and, with --json, one JSON object that
// bench/run_bench.py parses.
#include <chrono>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "bench.h"

namespace sluice::bench {
namespace {

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) r += ' ';
    else r += c;
  }
  return r;
}

}  // namespace

void result::print(bool json) const {
  std::string line;
  for (auto& [k, v] : f) line += (line.empty() ? "" : " ") + k + "=" + v;
  std::printf("%s\n", line.c_str());
  if (json) {
    std::string j = "{";
    for (auto& [k, v] : f) {
      bool num = !v.empty() && v.find_first_not_of("0123456789.-e") == std::string::npos;
      j += (j.size() > 1 ? ", " : "") + ("\"" + k + "\": ") + (num ? v : "\"" + json_escape(v) + "\"");
    }
    std::printf("JSON %s}\n", j.c_str());
  }
  std::fflush(stdout);
}

result common_fields(const options& o, const char* mode, const std::string& topic) {
  result r;
  r.add("mode", mode);
  r.add("label", o.label.empty() ? (o.mock ? "mock" : "broker") : o.label);
  r.add("target", o.mock ? "mock(" + std::to_string(o.mock_brokers) + ")" : o.bootstrap);
  r.add("topic", topic);
  r.add("partitions", std::to_string(o.partitions));
  r.add("replication_factor", std::to_string(o.replication_factor));
  r.add("size", std::to_string(o.size));
  r.add("acks", o.acks);
  r.add("linger_ms", o.linger_ms.empty() ? "default" : o.linger_ms);
  r.add("compression", o.compression);
  return r;
}

std::string fresh_topic(const options& o, const char* mode) {
  if (!o.topic.empty()) return o.topic;
  return std::string("bench-") + mode + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000000);
}

}  // namespace sluice::bench
