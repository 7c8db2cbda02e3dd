#include "protocol/header.h"

#include "protocol/api_traits.h"

namespace sluice::protocol {

int16_t request_header_version(int16_t key, int16_t version) {
  const api_traits* t = find_api_traits(key);
  if (t != nullptr && t->first_flexible_version >= 0 && version >= t->first_flexible_version) return 2;
  return 1;
}

int16_t response_header_version(int16_t key, int16_t version) {
  if (key == static_cast<int16_t>(api_key::api_versions)) return 0;  // KIP-511
  const api_traits* t = find_api_traits(key);
  if (t != nullptr && t->first_flexible_version >= 0 && version >= t->first_flexible_version) return 1;
  return 0;
}

bool decode_request_header(reader& r, request_header& h) {
  h.api_key = r.read_int16("request_header.api_key");
  h.api_version = r.read_int16("request_header.api_version");
  if (r.ok()) r.set_context(api_name(h.api_key), h.api_version, "request");
  h.correlation_id = r.read_int32("request_header.correlation_id");
  h.client_id = r.read_nullable_string("request_header.client_id");
  if (r.ok() && request_header_version(h.api_key, h.api_version) >= 2) r.skip_tagged_fields("request_header.tagged_fields");
  return r.ok();
}

bool decode_response_header(reader& r, int16_t header_version, int32_t& correlation_id) {
  correlation_id = r.read_int32("response_header.correlation_id");
  if (header_version >= 1) r.skip_tagged_fields("response_header.tagged_fields");
  return r.ok();
}

void encode_request_header(writer& w, const request_header& h) {
  w.write_int16(h.api_key);
  w.write_int16(h.api_version);
  w.write_int32(h.correlation_id);
  w.write_nullable_string(h.client_id);
  if (request_header_version(h.api_key, h.api_version) >= 2) w.write_unsigned_varint(0);
}

size_t request_header_size(const request_header& h) {
  return 8 + sizes::nullable_string(h.client_id, false) + (request_header_version(h.api_key, h.api_version) >= 2 ? 1 : 0);
}

}  // namespace sluice::protocol
