#include "base/jaas.h"

#include <cctype>

namespace sluice::jaas {

result<jaas_entry> parse_jaas_config(std::string_view text) {
  jaas_entry e;
  size_t at = 0;
  auto skip = [&] {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  };
  auto word = [&] {
    const size_t start = at;
    while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at])) && text[at] != '=' && text[at] != ';') ++at;
    return std::string(text.substr(start, at - start));
  };
  auto bad = [&](const std::string& what) {
    return error{base_errc::failed, "sasl.jaas.config: " + what + " at character " + std::to_string(at)};
  };
  skip();
  e.login_module = word();
  if (e.login_module.empty()) return bad("no login module class");
  skip();
  e.control_flag = word();
  for (char& c : e.control_flag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (e.control_flag != "required" && e.control_flag != "requisite" && e.control_flag != "sufficient" &&
      e.control_flag != "optional")
    return bad("expected a control flag (required, requisite, sufficient or optional)");
  for (;;) {
    skip();
    if (at >= text.size()) return bad("the entry does not end with ';'");
    if (text[at] == ';') {
      ++at;
      skip();
      if (at != text.size()) return bad("only one login module entry is allowed");
      return e;
    }
    std::string key = word();
    if (key.empty()) return bad("expected an option name");
    skip();
    if (at >= text.size() || text[at] != '=') return bad("expected '=' after " + key);
    ++at;
    skip();
    std::string value;
    if (at < text.size() && text[at] == '"') {
      ++at;
      bool closed = false;
      while (at < text.size()) {
        const char c = text[at++];
        if (c == '\\' && at < text.size()) {
          value += text[at++];
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) return bad("unterminated quoted value of " + key);
    } else {
      value = word();
    }
    e.options[key] = value;
  }
}

}  // namespace sluice::jaas
