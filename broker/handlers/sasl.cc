// SaslHandshake (key 17) and SaslAuthenticate (key 36): the SASL exchange of a SASL_PLAINTEXT or SASL_SSL
// connection (KIP-43, KIP-152), and re-authentication (KIP-368). These two handlers are the only ones that change
// the session: authentication is the session's business, and the dispatcher admits nothing else until it is done.
#include <boost/asio/steady_timer.hpp>

#include "base/logging.h"
#include "broker/handlers/handlers.h"
#include "broker/security/credential_store.h"
#include "broker/security/listener_security.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {

bool sasl_listener(const session& s) { return s.security && s.security->uses_sasl(); }

security::scram_lookup scram_lookup_of(broker_services& svc) {
  return [&svc](const std::string& user, security::scram_mechanism m) { return svc.credentials.find(user, m); };
}

/// Waits connection.failed.authentication.delay.ms before the failure is answered (and the connection closed),
/// as Kafka delays it to slow down password guessing.
task<void> failure_delay(const session& s, request_context& rc) {
  const int32_t delay = s.security ? s.security->failed_authentication_delay_ms : 0;
  if (delay <= 0) co_return;
  boost::asio::steady_timer timer(rc.executor, std::chrono::milliseconds(delay));
  auto wait = timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  co_await std::move(wait);
}

}  // namespace

task<protocol::sasl_handshake_response> sasl_handshake(broker_services& svc, request_context& rc,
                                                       protocol::sasl_handshake_request& req) {
  session& s = rc.session;
  protocol::sasl_handshake_response resp;
  if (!sasl_listener(s)) {
    // Kafka's KafkaApis answers a handshake on a listener without SASL so, and nothing more.
    resp.error_code = error_code::illegal_sasl_state;
    co_return resp;
  }
  resp.mechanisms = s.security->sasl_mechanisms;
  const bool reauth = s.sasl == sasl_state::authenticated;
  if (reauth && s.sasl_raw_tokens) {
    resp.error_code = error_code::illegal_sasl_state;  // v0 clients cannot re-authenticate (KIP-368)
    co_return resp;
  }
  if (s.sasl != sasl_state::handshake_expected && !reauth) {
    // A second handshake in the middle of an exchange.
    resp.error_code = error_code::illegal_sasl_state;
    rc.close_after_response = true;
    co_return resp;
  }
  if (reauth && req.mechanism != s.sasl_mechanism) {
    log::warn("closing connection from {}: re-authentication with {} after {}", s.peer, req.mechanism, s.sasl_mechanism);
    resp.error_code = error_code::unsupported_sasl_mechanism;
    rc.close_after_response = true;
    co_return resp;
  }
  auto server = s.security->make_sasl_server(req.mechanism, scram_lookup_of(svc), [&svc] { return svc.clock.now_ms(); });
  if (!server) {
    log::info("closing connection from {}: SASL mechanism {} is not enabled on listener {}", s.peer, req.mechanism,
              s.security->listener_name);
    resp.error_code = error_code::unsupported_sasl_mechanism;
    rc.close_after_response = true;
    co_return resp;
  }
  s.sasl_exchange = std::move(server);
  s.sasl_mechanism = req.mechanism;
  s.sasl_raw_tokens = rc.header.api_version == 0;
  s.reauthenticating = reauth;
  s.sasl = sasl_state::authenticate_expected;
  resp.error_code = error_code::none;
  co_return resp;
}

sasl_token_result sasl_token(broker_services& svc, session& s, std::span<const uint8_t> token) {
  sasl_token_result out;
  if (!s.sasl_exchange || s.sasl != sasl_state::authenticate_expected) {
    out.error_code = error_code::illegal_sasl_state;
    out.error_message = "Unexpected SaslAuthenticate request before the SASL handshake";
    return out;
  }
  if (token.size() > static_cast<size_t>(s.security->max_receive_size)) {
    out.error_code = error_code::sasl_authentication_failed;
    out.error_message = "SASL token of " + std::to_string(token.size()) + " bytes exceeds sasl.server.max.receive.size=" +
                        std::to_string(s.security->max_receive_size);
    s.sasl = sasl_state::failed;
    return out;
  }
  auto step = s.sasl_exchange->evaluate(token);
  switch (step.what) {
    case security::sasl_step::kind::challenge:
      out.token = std::move(step.token);
      return out;
    case security::sasl_step::kind::failed:
      out.error_code = error_code::sasl_authentication_failed;
      out.error_message = std::move(step.error_message);
      s.sasl = sasl_state::failed;
      s.sasl_exchange.reset();
      log::info("failed authentication with {} from {} (listener {}): {}", s.sasl_mechanism, s.peer,
                s.security->listener_name, step.log_reason.empty() ? out.error_message.value_or("") : step.log_reason);
      return out;
    case security::sasl_step::kind::complete:
      break;
  }
  const std::string principal = "User:" + step.principal_name;
  s.sasl_exchange.reset();
  if (s.reauthenticating && principal != s.principal) {
    out.error_code = error_code::sasl_authentication_failed;
    out.error_message = "Cannot change principals during re-authentication from " + s.principal + ": " + principal;
    s.sasl = sasl_state::failed;
    return out;
  }
  s.principal = principal;
  s.sasl = sasl_state::authenticated;
  s.reauthenticating = false;
  out.token = std::move(step.token);
  // KIP-368: the session lasts connections.max.reauth.ms, or less when the credential expires sooner.
  int64_t lifetime = s.security->reauth_ms;
  if (step.credential_expiry_ms) {
    const int64_t left = std::max<int64_t>(1, *step.credential_expiry_ms - svc.clock.now_ms());
    lifetime = lifetime > 0 ? std::min(lifetime, left) : left;
  }
  out.session_lifetime_ms = lifetime;
  s.session_expiry_ms = lifetime > 0 ? svc.clock.monotonic_ms() + lifetime : 0;
  return out;
}

task<protocol::sasl_authenticate_response> sasl_authenticate(broker_services& svc, request_context& rc,
                                                             protocol::sasl_authenticate_request& req) {
  session& s = rc.session;
  protocol::sasl_authenticate_response resp;
  if (!sasl_listener(s) || s.sasl == sasl_state::authenticated) {
    resp.error_code = error_code::illegal_sasl_state;
    resp.error_message = "SaslAuthenticate request received after successful authentication";
    co_return resp;
  }
  auto r = sasl_token(svc, s, req.auth_bytes);
  resp.error_code = r.error_code;
  resp.error_message = r.error_message;
  resp.auth_bytes = std::move(r.token);
  resp.session_lifetime_ms = r.session_lifetime_ms;
  if (r.error_code != error_code::none) {
    rc.close_after_response = true;
    if (r.error_code == error_code::sasl_authentication_failed) {
      auto delay = failure_delay(s, rc);
      co_await std::move(delay);
    }
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
