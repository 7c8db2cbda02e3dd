// libFuzzer target: arbitrary bytes as a request frame (without size prefix) through the header
// decoder and the request decoder the header selects. A successful decode must re-encode to bytes that
// decode to an equal message. Build with -DSLUICE_FUZZ=ON and clang; run build/tests/protocol/protocol_fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "protocol/api_traits.h"
#include "protocol/header.h"
#include "protocol/messages/all.h"

using namespace sluice::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reader r(std::span<const uint8_t>(data, size));
  request_header h;
  if (!decode_request_header(r, h)) return 0;
  const api_traits* t = find_api_traits(h.api_key);
  if (t == nullptr) return 0;
  // Out-of-range versions are clamped so that every decoder version is reachable from any input.
  int16_t v = h.api_version;
  if (v < t->min_version || v > t->max_version)
    v = static_cast<int16_t>(t->min_version + (static_cast<uint16_t>(v) % (t->max_version - t->min_version + 1)));
  const size_t body_at = r.position();
  visit_request_type(h.api_key, [&](auto tag) {
    using M = typename decltype(tag)::type;
    reader br(std::span<const uint8_t>(data + body_at, size - body_at));
    M m;
    m.decode(br, v);
    if (!br.ok()) {
      (void)br.error_message();
      return;
    }
    writer w;
    m.encode(w, v);
    if (w.size() != m.encoded_size(v)) std::abort();
    encoded_frame f = w.finish();
    reader rr(f.bytes);
    M again;
    again.decode(rr, v);
    if (!rr.ok() || !(again == m)) std::abort();
  });
  return 0;
}
