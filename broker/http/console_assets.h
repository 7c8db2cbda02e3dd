#pragma once

#include <string_view>

namespace sluice::broker::http {

/// One file of the web console (broker/http/console/), compiled into the binary by console/embed.cmake so that the
/// console works offline and from the one executable.
struct console_asset {
  std::string_view path;          ///< URL path: "/" for index.html, "/console/<file>" for the others
  std::string_view content_type;  ///< "text/javascript; charset=utf-8", ...
  std::string_view body;          ///< the file's bytes
  std::string_view etag;          ///< a strong ETag, quoted: the first 16 hex digits of the file's SHA-256
};

/// The asset served at `path` (the query already removed), or nullptr.
const console_asset* find_console_asset(std::string_view path);

}  // namespace sluice::broker::http
