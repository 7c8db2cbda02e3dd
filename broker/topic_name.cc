#include "broker/topic_name.h"

namespace sluice::broker {

namespace {

// The length Java's String.length() gives for these UTF-8 bytes: one UTF-16 code unit per character, two for
// a character beyond U+FFFF (a 4-byte sequence). Kafka counts the 249-character limit in those units.
size_t utf16_length(std::string_view utf8) {
  size_t n = 0;
  for (unsigned char c : utf8) {
    if ((c & 0xC0) != 0x80) ++n;  // not a continuation byte: a new character
    if (c >= 0xF0) ++n;           // a 4-byte sequence: a surrogate pair in UTF-16
  }
  return n;
}

}  // namespace

std::optional<std::string> invalid_topic_name_reason(std::string_view name) {
  // Kafka 3.4+ Topic.validate: "Topic name is invalid: " + the first rule broken, in this order.
  const std::string prefix = "Topic name is invalid: ";
  if (name.empty()) return prefix + "the empty string is not allowed";
  if (name == ".") return prefix + "'.' is not allowed";
  if (name == "..") return prefix + "'..' is not allowed";
  if (utf16_length(name) > kMaxTopicNameLength)
    return prefix + "the length of '" + std::string(name) + "' is longer than the max allowed length " +
           std::to_string(kMaxTopicNameLength);
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok)
      return prefix + "'" + std::string(name) +
             "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'";
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
