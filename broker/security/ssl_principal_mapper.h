#pragma once
// ssl.principal.mapping.rules (KIP-371): from a client certificate's subject to a principal name.
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/result.h"

namespace sluice::broker::security {

/// Kafka's SslPrincipalMapper. Rules, separated by commas or newlines, are tried in order:
///   DEFAULT                          the distinguished name unchanged
///   RULE:<pattern>/<replacement>/    when the Java-style regex `pattern` matches the whole name, the name
///   RULE:<pattern>/<replacement>/L   becomes `replacement` ($1.. name groups), optionally lower- (L) or
///   RULE:<pattern>/<replacement>/U   upper-cased (U)
/// A "/" or "\" inside a pattern or replacement is escaped with "\". Patterns use ECMAScript syntax, which
/// agrees with java.util.regex on what such rules use (groups, lazy quantifiers, classes, anchors).
class ssl_principal_mapper {
 public:
  /// Parses `rules` ("DEFAULT" when empty). Errors name the rule that does not parse or whose regex is invalid.
  static result<ssl_principal_mapper> parse(const std::string& rules);
  /// The principal name for `distinguished_name` (RFC 2253 form, "CN=alice,OU=eng,O=example"), or nullopt when no
  /// rule applies (Kafka then fails the authentication: "No rules apply to <name>").
  std::optional<std::string> map(const std::string& distinguished_name) const;

 private:
  struct rule {
    bool is_default = false;
    std::regex pattern;
    std::string replacement;  // in ECMAScript format syntax ($1, $&)
    char case_change = 0;     // 0, 'L' or 'U'
  };
  std::vector<rule> rules_;
};

}  // namespace sluice::broker::security
