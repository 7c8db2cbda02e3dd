#include "broker/dispatcher.h"

#include "base/logging.h"
#include "broker/handler_table.h"
#include "broker/handlers/handlers.h"
#include "protocol/api_key.h"

namespace sluice::broker {

namespace {
request_hooks& no_hooks() {
  static request_hooks none;
  return none;
}

/// KIP-43: before a SASL client has authenticated, only these APIs may be sent (ApiVersions, SaslHandshake,
/// SaslAuthenticate).
bool allowed_before_authentication(int16_t api_key) { return api_key == 18 || api_key == 17 || api_key == 36; }
}  // namespace

dispatcher::dispatcher(broker_services& services, request_hooks* hooks)
    : services_(services),
      hooks_(hooks != nullptr ? hooks : &no_hooks()),
      requests_(std::make_unique<std::array<std::atomic<metrics::counter*>, kMaxKey * kMaxVersion>>()),
      total_time_(std::make_unique<std::array<std::atomic<metrics::histogram*>, kMaxKey>>()),
      bytes_(std::make_unique<std::array<std::atomic<byte_counters*>, kMaxKey>>()) {}

dispatcher::~dispatcher() {
  for (auto& slot : *bytes_) delete slot.load();
}

void dispatcher::observe(int16_t api_key, int16_t version, int64_t elapsed_us, size_t request_bytes,
                         size_t response_bytes) {
  if (api_key < 0 || version < 0 || static_cast<size_t>(api_key) >= kMaxKey || static_cast<size_t>(version) >= kMaxVersion)
    return;
  auto& slot = (*requests_)[static_cast<size_t>(api_key) * kMaxVersion + static_cast<size_t>(version)];
  metrics::counter* c = slot.load(std::memory_order_acquire);
  if (c == nullptr) {
    // Two threads may both look it up: the registry returns the same series to both.
    c = &metrics::process_registry().counter("kafka_network_requestmetrics_requests_total",
                                             "Requests handled, per API and version (RequestMetrics RequestsPerSec)",
                                             {{"request", std::string(protocol::api_name(api_key))},
                                              {"version", std::to_string(version)}});
    slot.store(c, std::memory_order_release);
  }
  c->add();
  auto& hslot = (*total_time_)[static_cast<size_t>(api_key)];
  metrics::histogram* hist = hslot.load(std::memory_order_acquire);
  if (hist == nullptr) {
    hist = &metrics::process_registry().histogram(
        "kafka_network_requestmetrics_totaltimems",
        "Time from a request's decoded header to the end of its handling, ms (RequestMetrics TotalTimeMs)",
        {{"request", std::string(protocol::api_name(api_key))}}, metrics::latency_ms_buckets());
    hslot.store(hist, std::memory_order_release);
  }
  hist->observe(static_cast<double>(elapsed_us) / 1000.0);
  auto& bslot = (*bytes_)[static_cast<size_t>(api_key)];
  byte_counters* b = bslot.load(std::memory_order_acquire);
  if (b == nullptr) {
    const metrics::labels l{{"request", std::string(protocol::api_name(api_key))}};
    auto made = std::make_unique<byte_counters>(byte_counters{
        &metrics::process_registry().counter("sluice_network_request_bytes_total",
                                             "Bytes of request frames, per API (after the 4-byte size)", l),
        &metrics::process_registry().counter("sluice_network_response_bytes_total",
                                             "Bytes of response frames, per API (with the 4-byte size)", l)});
    byte_counters* expected = nullptr;
    if (bslot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) b = made.release();
    else b = expected;  // another thread made them first: the same series
  }
  b->request->add(request_bytes);
  b->response->add(response_bytes);
}

boost::asio::awaitable<dispatcher::outcome> dispatcher::dispatch(session& s, std::span<const uint8_t> frame,
                                                                 boost::asio::any_io_executor executor) {
  using kind = outcome::kind;
  if (s.sasl == sasl_state::authenticate_expected && s.sasl_raw_tokens) {
    // After a SaslHandshake v0 the client sends its SASL tokens as bare frames, and gets bare frames back
    // (KIP-43); a failure just closes the connection.
    auto r = handlers::sasl_token(services_, s, frame);
    if (r.error_code != protocol::error_code::none) {
      log::info("closing connection from {}: SASL (handshake v0) failed: {}", s.peer, r.error_message.value_or(""));
      co_return outcome{kind::close, {}};
    }
    outcome raw{kind::respond, {}};
    const auto n = static_cast<uint32_t>(r.token.size());
    raw.frame.bytes = {static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 8),
                       static_cast<uint8_t>(n)};
    raw.frame.bytes.insert(raw.frame.bytes.end(), r.token.begin(), r.token.end());
    co_return raw;
  }
  protocol::reader reader(frame);
  request_context rc{{}, s, std::move(executor)};
  if (!protocol::decode_request_header(reader, rc.header)) {
    log::warn("closing connection from {}: malformed request header ({} at byte {}: {})", s.peer,
              reader.error_field(), reader.error_offset(), reader.error_message());
    co_return outcome{kind::close, {}};
  }
  const auto& h = rc.header;
  const handler_entry* entry = find_handler(h.api_key);
  if (!entry) {
    log::warn("closing connection from {}: unknown API key {} (version {}, correlation id {})", s.peer, h.api_key,
              h.api_version, h.correlation_id);
    co_return outcome{kind::close, {}};
  }
  if (h.api_version < entry->min_version || h.api_version > entry->max_version) {
    if (entry->key == protocol::api_key::api_versions) {
      // KIP-511: answer in v0 with UNSUPPORTED_VERSION and ApiVersions' own range, so the client retries with
      // a version it has (Kafka's ApiVersionsRequest.getErrorResponse lists the ApiVersions entry only).
      auto reply = handlers::api_versions_list(protocol::error_code::unsupported_version);
      std::erase_if(reply.api_keys, [](const auto& k) { return k.api_key != static_cast<int16_t>(protocol::api_key::api_versions); });
      co_return outcome{kind::respond, protocol::encode_response(h.correlation_id, int16_t{0}, reply)};
    }
    log::warn("closing connection from {}: {} version {} is not supported (supported {}-{})", s.peer,
              protocol::api_name(h.api_key), h.api_version, entry->min_version, entry->max_version);
    co_return outcome{kind::close, {}};
  }
  if (h.client_id ? s.client_id != *h.client_id : !s.client_id.empty()) s.client_id = h.client_id.value_or("");
  // The session first: a SASL listener's client that has not authenticated may only negotiate.
  if (s.sasl == sasl_state::failed ||
      (s.sasl != sasl_state::not_required && s.sasl != sasl_state::authenticated &&
       !allowed_before_authentication(h.api_key))) {
    log::warn("closing connection from {}: {} v{} before SASL authentication", s.peer, protocol::api_name(h.api_key),
              h.api_version);
    co_return outcome{kind::close, {}};
  }
  // KIP-368: once the session's lifetime is over, only a re-authentication may follow.
  if (s.sasl == sasl_state::authenticated && s.session_expiry_ms > 0 && h.api_key != 17 && h.api_key != 18 &&
      services_.clock.monotonic_ms() >= s.session_expiry_ms) {
    log::info("closing connection from {}: {} v{} after the SASL session of {} expired (connections.max.reauth.ms)",
              s.peer, protocol::api_name(h.api_key), h.api_version, s.principal);
    co_return outcome{kind::close, {}};
  }
  if (auto refused = hooks_->admit(s, h)) {
    log::warn("closing connection from {}: {} v{} refused: {}", s.peer, protocol::api_name(h.api_key), h.api_version,
              *refused);
    co_return outcome{kind::close, {}};
  }
  rc.throttle_time_ms = std::max(0, hooks_->throttle_time_ms(s, h));
  rc.start_us = services_.clock.monotonic_us();
  rc.request_quota_exempt = allowed_before_authentication(h.api_key);  // as Kafka's sendResponseExemptThrottle
  const int64_t start_ms = services_.clock.monotonic_ms();
  auto op = entry->handle(services_, rc, reader);
  auto result = co_await std::move(op);
  if (metrics::enabled())
    observe(h.api_key, h.api_version, services_.clock.monotonic_us() - rc.start_us, frame.size(),
            result.what == handler_outcome::kind::respond ? result.frame.total_size() : 0);
  hooks_->completed(s, h, start_ms, services_.clock.monotonic_ms(), result.what == handler_outcome::kind::respond);
  if (result.what == handler_outcome::kind::malformed) {
    log::warn("closing connection from {}: malformed {} v{} request (correlation id {}): field {} at byte {}: {}",
              s.peer, protocol::api_name(h.api_key), h.api_version, h.correlation_id, reader.error_field(),
              reader.error_offset(), reader.error_message());
    co_return outcome{kind::close, {}};
  }
  if (rc.close_connection && !rc.close_reason.empty()) {
    log::warn("closing connection from {}: {} v{} (correlation id {}): {}", s.peer, protocol::api_name(h.api_key),
              h.api_version, h.correlation_id, rc.close_reason);
    co_return outcome{kind::close, {}};
  }
  if (rc.close_connection) {
    // Test hook (broker/fault_injection.h): the request took effect but its response is dropped.
    log::info("test hook: closing connection from {} without answering {} v{} (correlation id {})", s.peer,
              protocol::api_name(h.api_key), h.api_version, h.correlation_id);
    co_return outcome{kind::close, {}};
  }
  if (result.what == handler_outcome::kind::no_response) co_return outcome{kind::no_response, {}, rc.mute_ms};
  co_return outcome{rc.close_after_response ? kind::respond_then_close : kind::respond, std::move(result.frame),
                    rc.mute_ms};
}

}  // namespace sluice::broker
