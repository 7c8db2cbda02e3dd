// libFuzzer target: the generated request and response decoders of one API (SLUICE_FUZZ_API=<name or key>, as
// ctest runs it: one test and one corpus per API), every version of it. Without SLUICE_FUZZ_API the first input
// byte picks the API (index into all_api_traits(), for long runs over every API at once).
//
// Input: [API index byte, only without SLUICE_FUZZ_API] [selector byte] [message body]. The selector's low 7 bits
// choose the version within the API's [min, max] (modulo the range), its top bit the response instead of the
// request (the CLI and the replica fetcher decode responses). A body that decodes must encode to
// encoded_size() bytes that decode again to an equal message (or, for a float64 NaN, to the same bytes).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "protocol/api_traits.h"
#include "protocol/messages/all.h"

using namespace sluice::protocol;

namespace {

const api_traits* fixed_api = nullptr;

[[noreturn]] void fail(const char* what, const api_traits& t, int16_t v, bool response) {
  std::fprintf(stderr, "request_fuzz: %s v%d %s: %s\n", std::string(t.name).c_str(), v,
               response ? "response" : "request", what);
  std::abort();
}

template <class M>
void round_trip(const api_traits& t, std::span<const uint8_t> body, int16_t v, bool response) {
  reader r(body);
  r.set_context(t.name, v, response ? "response" : "request");
  M m;
  m.decode(r, v);
  if (!r.ok()) {
    (void)r.error_message();  // the message the broker logs must be buildable for every failure
    return;
  }
  writer w;
  m.encode(w, v);
  if (w.size() != m.encoded_size(v)) fail("encoded_size() differs from the bytes encode() wrote", t, v, response);
  encoded_frame f = w.finish();
  reader rr(f.bytes);
  M again;
  again.decode(rr, v);
  if (!rr.ok()) fail("the re-encoded message does not decode", t, v, response);
  if (rr.remaining() != 0) fail("the re-encoded message has bytes after its end", t, v, response);
  if (!(again == m)) {
    // NaN != NaN: a float64 field holding a NaN compares unequal to itself; the bytes must still agree.
    writer w2;
    again.encode(w2, v);
    if (w2.finish().bytes != f.bytes) fail("decode(encode(m)) != m", t, v, response);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("SLUICE_FUZZ_API");
  if (env == nullptr || *env == '\0') return 0;
  for (const api_traits& t : all_api_traits())
    if (t.name == env || std::to_string(static_cast<int16_t>(t.key)) == env) fixed_api = &t;
  if (fixed_api == nullptr) {
    std::fprintf(stderr, "request_fuzz: SLUICE_FUZZ_API=%s names no API of protocol/defs\n", env);
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const api_traits* t = fixed_api;
  if (t == nullptr) {
    if (size < 1) return 0;
    const auto all = all_api_traits();
    t = &all[data[0] % all.size()];
    ++data;
    --size;
  }
  if (size < 1) return 0;
  const bool response = (data[0] & 0x80) != 0;
  const int range = t->max_version - t->min_version + 1;
  const auto v = static_cast<int16_t>(t->min_version + (data[0] & 0x7f) % range);
  const std::span<const uint8_t> body(data + 1, size - 1);
  const auto key = static_cast<int16_t>(t->key);
  if (response)
    visit_response_type(key, [&](auto tag) { round_trip<typename decltype(tag)::type>(*t, body, v, true); });
  else
    visit_request_type(key, [&](auto tag) { round_trip<typename decltype(tag)::type>(*t, body, v, false); });
  return 0;
}
