#include "compat/diff/json_codec.h"

namespace sluice::diff {

std::string to_hex(const uint8_t* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(digits[data[i] >> 4]);
    s.push_back(digits[data[i] & 15]);
  }
  return s;
}

std::vector<uint8_t> from_hex(std::string_view text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::runtime_error("bad hex digit");
  };
  if (text.size() % 2) throw std::runtime_error("odd hex length");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 2)
    out.push_back(static_cast<uint8_t>(nibble(text[i]) * 16 + nibble(text[i + 1])));
  return out;
}

const boost::json::value* find_field(const boost::json::object& o, const protocol::field_info& info) {
  if (auto it = o.find(info.name); it != o.end()) return &it->value();
  if (auto it = o.find(info.kafka_name); it != o.end()) return &it->value();
  if (!info.name.empty() && info.name.back() == '_') {  // records_, key_: also without the suffix
    if (auto it = o.find(info.name.substr(0, info.name.size() - 1)); it != o.end()) return &it->value();
  }
  return nullptr;
}

}  // namespace sluice::diff
