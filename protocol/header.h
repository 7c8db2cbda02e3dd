#pragma once
// Request and response headers (Kafka protocol guide "Headers"; KIP-482 for header v2 / v1), and the
// framing of whole messages: a 4-byte big-endian size, the header, the body.
//
// Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable string.
// Request header v2: v1 + a tagged-field section. client_id stays a classic (non-compact) string.
// Response header v0: correlation_id int32. Response header v1: v0 + a tagged-field section.
// ApiVersions responses always use header v0 so that any client can parse them (KIP-511).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/api_key.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace sluice::protocol {

struct request_header {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;
};

/// 2 for flexible versions of APIs we have definitions for, 1 otherwise (also for unknown APIs).
int16_t request_header_version(int16_t api_key, int16_t api_version);
/// 1 for flexible versions, 0 otherwise; ApiVersions always 0.
int16_t response_header_version(int16_t api_key, int16_t api_version);

/// Decodes a request header from the start of `r` (a frame without its size prefix). Also sets the
/// reader's context (API name, version) for error messages. Returns r.ok().
bool decode_request_header(reader& r, request_header& h);
/// Decodes a response header of `header_version` (0 or 1); returns r.ok().
bool decode_response_header(reader& r, int16_t header_version, int32_t& correlation_id);

void encode_request_header(writer& w, const request_header& h);
size_t request_header_size(const request_header& h);

namespace detail {
inline void begin_frame(writer& w, size_t frame_size_without_prefix) {
  w.reserve(frame_size_without_prefix + 4);  // file regions are not in the buffer, a small overshoot
  w.write_int32(static_cast<int32_t>(frame_size_without_prefix));
}
}  // namespace detail

/// A complete response: 4-byte size prefix, response header, body encoded at `api_version`.
template <class Msg>
encoded_frame encode_response(int32_t correlation_id, int16_t api_version, const Msg& msg) {
  const int16_t hv = response_header_version(static_cast<int16_t>(Msg::key), api_version);
  const size_t header_size = hv >= 1 ? 5 : 4;
  writer w;
  detail::begin_frame(w, header_size + msg.encoded_size(api_version));
  w.write_int32(correlation_id);
  if (hv >= 1) w.write_unsigned_varint(0);  // no tagged fields
  msg.encode(w, api_version);
  return w.finish();
}

/// A complete request (for clients and tests): size prefix, request header, body. `header.api_key` is
/// taken from Msg.
template <class Msg>
encoded_frame encode_request(request_header header, const Msg& msg) {
  header.api_key = static_cast<int16_t>(Msg::key);
  writer w;
  detail::begin_frame(w, request_header_size(header) + msg.encoded_size(header.api_version));
  encode_request_header(w, header);
  msg.encode(w, header.api_version);
  return w.finish();
}

template <class Msg>
encoded_frame encode_request(int32_t correlation_id, int16_t api_version, std::optional<std::string> client_id,
                             const Msg& msg) {
  return encode_request(request_header{0, api_version, correlation_id, std::move(client_id)}, msg);
}

}  // namespace sluice::protocol
