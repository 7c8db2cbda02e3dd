#include "broker/topic_name.h"

namespace sluice::broker {

std::optional<std::string> invalid_topic_name_reason(std::string_view name) {
  if (name.empty()) return "Topic name is illegal, it can't be empty";
  if (name == "." || name == "..") return "Topic name cannot be \".\" or \"..\"";
  if (name.size() > 249)
    return "Topic name is illegal, it can't be longer than 249 characters, topic name: " + std::string(name);
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok)
      return "Topic name \"" + std::string(name) +
             "\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'";
  }
  return std::nullopt;
}

bool topic_names_collide(std::string_view a, std::string_view b) {
  if (a == b || a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '.' ? '_' : a[i], y = b[i] == '.' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace sluice::broker
