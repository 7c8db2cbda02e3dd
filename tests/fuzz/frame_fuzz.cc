// libFuzzer target: a client's byte stream as the broker's connection reads it: 4-byte big-endian size, then
// that many bytes, repeated. The framing itself lives inline in the coroutine connection::run
// (broker/net/connection.cc: size check against socket.request.max.bytes, body read in growing chunks), with no
// pure function to call; this harness applies the same rules to the stream and hands every frame to what the
// dispatcher does before a handler (broker/dispatcher.cc): decode_request_header, the API lookup, the version
// check against the served range, then the request decoder the handler runs.
//
// Input: [max-request-bytes selector byte] [stream...]. The selector picks socket.request.max.bytes among a few
// values, so that the "frame too large" rule is reached with small inputs too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "protocol/api_traits.h"
#include "protocol/header.h"
#include "protocol/messages/all.h"

using namespace sluice::protocol;

namespace {

// The dispatcher's steps on one whole frame; false where it closes the connection.
bool dispatch(std::span<const uint8_t> frame) {
  reader r(frame);
  request_header h;
  if (!decode_request_header(r, h)) {
    (void)r.error_message();
    return false;
  }
  const api_traits* t = find_api_traits(h.api_key);
  if (t == nullptr) return false;
  if (h.api_version < t->served_min_version || h.api_version > t->served_max_version) return false;
  bool ok = true;
  visit_request_type(h.api_key, [&](auto tag) {
    typename decltype(tag)::type m;
    m.decode(r, h.api_version);
    if (!r.ok()) {
      (void)r.error_message();
      ok = false;
      return;
    }
    // The handler answers; the response must be encodable at the request's version (its header version too).
    (void)response_header_version(h.api_key, h.api_version);
    writer w;
    m.encode(w, h.api_version);
    if (w.size() != m.encoded_size(h.api_version)) std::abort();
  });
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr int32_t max_request_bytes[] = {104857600, 1 << 20, 256, 16};  // default, then smaller
  const int32_t max_bytes = max_request_bytes[data[0] % 4];
  std::span<const uint8_t> stream(data + 1, size - 1);
  size_t pos = 0;
  for (int frames = 0; frames < 64; ++frames) {  // a connection handles requests one at a time, in order
    if (stream.size() - pos < 4) break;  // the client closed (a partial size is read as end of stream)
    const auto* p = stream.data() + pos;
    const auto n = static_cast<int32_t>((uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) |
                                        uint32_t(p[3]));
    pos += 4;
    if (n < 0 || n > max_bytes) break;  // outside [0, socket.request.max.bytes]: close
    if (stream.size() - pos < static_cast<size_t>(n)) break;  // the frame was cut short: close
    // A copy of exactly the frame, as connection::run's frame_ buffer holds it: ASan sees any read past it.
    std::vector<uint8_t> frame(stream.begin() + static_cast<ptrdiff_t>(pos),
                               stream.begin() + static_cast<ptrdiff_t>(pos) + n);
    pos += static_cast<size_t>(n);
    if (!dispatch(frame)) break;
  }
  return 0;
}
