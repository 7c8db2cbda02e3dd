#include "broker/session.h"

#include <cctype>
#include <string_view>

namespace sluice::broker {

std::string security_protocol_of(const std::map<std::string, std::string>& config_values, const std::string& name) {
  auto it = config_values.find("listener.security.protocol.map");
  if (it == config_values.end()) return {};
  // "NAME:PROTOCOL,NAME:PROTOCOL", entries trimmed as Kafka's list parser does.
  std::string_view rest = it->second;
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto colon = entry.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key(trim(entry.substr(0, colon)));
    for (char& ch : key) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (key == name) {
      std::string protocol(trim(entry.substr(colon + 1)));
      for (char& ch : protocol) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return protocol;
    }
  }
  return {};
}

}  // namespace sluice::broker
