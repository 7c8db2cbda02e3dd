#include "cli/record_format.h"

namespace sluice::cli {

std::string unescape_format(std::string_view f) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 1 < f.size()) {
      switch (f[i + 1]) {
        case 'n': out += '\n'; ++i; continue;
        case 't': out += '\t'; ++i; continue;
        case 'r': out += '\r'; ++i; continue;
        case '\\': out += '\\'; ++i; continue;
        default: break;
      }
    }
    out += f[i];
  }
  return out;
}

std::string format_record(std::string_view f, const consumed_record& r) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 >= f.size()) {
      out += f[i];
      continue;
    }
    const char c = f[++i];
    switch (c) {
      case 't': out += r.topic; break;
      case 'p': out += std::to_string(r.partition); break;
      case 'o': out += std::to_string(r.offset); break;
      case 'T': out += std::to_string(r.timestamp); break;
      case 'k': if (r.key) out += *r.key; break;
      case 's': if (r.value) out += *r.value; break;
      case 'K': out += std::to_string(r.key ? static_cast<int64_t>(r.key->size()) : -1); break;
      case 'S': out += std::to_string(r.value ? static_cast<int64_t>(r.value->size()) : -1); break;
      case 'h':
        for (size_t h = 0; h < r.headers.size(); ++h) {
          if (h) out += ',';
          out += r.headers[h].first;
          out += '=';
          if (r.headers[h].second) out += *r.headers[h].second;
        }
        break;
      case '%': out += '%'; break;
      default: out += '%'; out += c; break;
    }
  }
  return out;
}

boost::json::object record_json(const consumed_record& r) {
  auto opt = [](const std::optional<std::string_view>& s) {
    return s ? boost::json::value(boost::json::string(*s)) : boost::json::value(nullptr);
  };
  boost::json::array headers;
  for (const auto& [k, v] : r.headers) headers.push_back(boost::json::object{{"key", boost::json::string(k)}, {"value", opt(v)}});
  return boost::json::object{{"topic", boost::json::string(r.topic)}, {"partition", r.partition}, {"offset", r.offset},
                             {"timestamp", r.timestamp}, {"key", opt(r.key)}, {"value", opt(r.value)},
                             {"headers", std::move(headers)}};
}

}  // namespace sluice::cli
