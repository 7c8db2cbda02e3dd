#pragma once
// Output of consumed records: kcat's -f placeholders and a JSON object per record.
//   %t topic  %p partition  %o offset  %T timestamp (ms)  %k key  %s value  %K key length  %S value length
//   %h headers as k=v,k=v  %% a '%'   and the escapes \n \t \r \\ (kcat's)
// A null key or value prints as nothing (its length as -1), as kcat without -Z.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>

namespace sluice::cli {

struct consumed_record {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
};

/// Expands `format` for `r`. Unknown placeholders are kept as written.
std::string format_record(std::string_view format, const consumed_record& r);
/// Unescapes \n \t \r \\ in a --format given on the command line (once, before the first record).
std::string unescape_format(std::string_view format);
/// {"topic","partition","offset","timestamp","key","value","headers":[{"key","value"}]}; null key/value as null.
boost::json::object record_json(const consumed_record& r);

}  // namespace sluice::cli
