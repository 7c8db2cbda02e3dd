#include "broker/security/ssl_principal_mapper.h"

#include <cctype>

namespace sluice::broker::security {

namespace {
error rule_error(const std::string& message) { return error{base_errc::failed, message}; }

/// Reads up to the next unescaped '/', dropping the escapes of '/' and keeping others (regex escapes).
bool read_part(const std::string& text, size_t& at, std::string& out) {
  while (at < text.size()) {
    const char c = text[at];
    if (c == '\\' && at + 1 < text.size()) {
      if (text[at + 1] != '/') out += c;
      out += text[at + 1];
      at += 2;
      continue;
    }
    if (c == '/') {
      ++at;
      return true;
    }
    out += c;
    ++at;
  }
  return false;
}
}  // namespace

result<ssl_principal_mapper> ssl_principal_mapper::parse(const std::string& rules) {
  ssl_principal_mapper m;
  size_t at = 0;
  auto skip_space = [&] {
    while (at < rules.size() && std::isspace(static_cast<unsigned char>(rules[at]))) ++at;
  };
  for (;;) {
    skip_space();
    if (at >= rules.size()) break;
    if (rules.compare(at, 7, "DEFAULT") == 0) {
      at += 7;
      rule r;
      r.is_default = true;
      m.rules_.push_back(std::move(r));
    } else if (rules.compare(at, 5, "RULE:") == 0) {
      const size_t start = at;
      at += 5;
      std::string pattern, replacement;
      if (!read_part(rules, at, pattern) || !read_part(rules, at, replacement))
        return rule_error("ssl.principal.mapping.rules: rule '" + rules.substr(start) +
                          "' is not of the form RULE:pattern/replacement/[LU]");
      rule r;
      if (at < rules.size() && (rules[at] == 'L' || rules[at] == 'U')) r.case_change = rules[at++];
      try {
        r.pattern = std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return rule_error("ssl.principal.mapping.rules: invalid pattern '" + pattern + "': " + e.what());
      }
      r.replacement = std::move(replacement);
      m.rules_.push_back(std::move(r));
    } else {
      return rule_error("ssl.principal.mapping.rules: cannot parse '" + rules.substr(at) +
                        "' (expected DEFAULT or RULE:pattern/replacement/[LU])");
    }
    skip_space();
    if (at < rules.size()) {
      if (rules[at] != ',') return rule_error("ssl.principal.mapping.rules: expected ',' before '" + rules.substr(at) + "'");
      ++at;
    }
  }
  if (m.rules_.empty()) {
    rule r;
    r.is_default = true;
    m.rules_.push_back(std::move(r));
  }
  return m;
}

std::optional<std::string> ssl_principal_mapper::map(const std::string& distinguished_name) const {
  if (rules_.empty()) return distinguished_name;  // a default-constructed mapper is DEFAULT
  for (const auto& r : rules_) {
    if (r.is_default) return distinguished_name;
    if (!std::regex_match(distinguished_name, r.pattern)) continue;
    std::string out = std::regex_replace(distinguished_name, r.pattern, r.replacement,
                                         std::regex_constants::format_first_only);
    if (r.case_change == 'L')
      for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (r.case_change == 'U')
      for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  return std::nullopt;
}

}  // namespace sluice::broker::security
