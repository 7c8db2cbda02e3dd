#pragma once
// JAAS login module entries as Kafka reads a `sasl.jaas.config` value (the broker's listener mechanisms, and the
// client.properties the CLI's --command-config takes).
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sluice::jaas {

/// One JAAS login module entry, as Kafka reads `sasl.jaas.config`:
///   <login module class> <required|requisite|sufficient|optional> [key=value ...];
/// values quoted ("...", backslash escapes) or bare.
struct jaas_entry {
  std::string login_module;
  std::string control_flag;
  std::map<std::string, std::string> options;
};
/// Parses one entry. Errors say what is wrong and where.
result<jaas_entry> parse_jaas_config(std::string_view text);


}  // namespace sluice::jaas
