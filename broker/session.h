#pragma once
// Per-connection state the dispatcher consults before a request reaches its handler (issue #13): which
// listener the client came through, who it is, and what it said about itself.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace sluice::broker::security {
struct listener_security;
class sasl_server;
}  // namespace sluice::broker::security

namespace sluice::broker {

/// Where a SASL client stands (KIP-43, KIP-152). Plain listeners stay `not_required`; the SASL listeners of
/// issue #17 start at `handshake_expected` and admit only ApiVersions, SaslHandshake and SaslAuthenticate until
/// `authenticated`.
enum class sasl_state { not_required, handshake_expected, authenticate_expected, authenticated, failed };

/// One client connection's identity. Owned by the connection; touched only on its strand.
struct session {
  std::string listener_name = "PLAINTEXT";      // from `listeners`
  std::string security_protocol = "PLAINTEXT";  // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
  /// Kafka's KafkaPrincipal as "type:name"; "User:ANONYMOUS" until TLS or SASL names the client.
  std::string principal = "User:ANONYMOUS";
  sasl_state sasl = sasl_state::not_required;
  std::string peer;       // "address:port" of the client
  std::string client_host;  // the client's IP address alone, as ACL hosts name it ("127.0.0.1", "::1")
  std::string client_id;  // the last request header's client id (null: "")
  /// KIP-511: what ApiVersions v3+ named ("unknown" until then, as Kafka reports it).
  std::string client_software_name = "unknown";
  std::string client_software_version = "unknown";

  // --- SASL (KIP-43, KIP-152, KIP-368), set by SaslHandshake / SaslAuthenticate ---
  std::shared_ptr<const security::listener_security> security;  // the listener's settings (never null in a server)
  std::shared_ptr<security::sasl_server> sasl_exchange;  // the exchange in progress (authenticate_expected)
  std::string sasl_mechanism;                            // the mechanism of the handshake
  bool sasl_raw_tokens = false;  // SaslHandshake v0: the tokens follow as bare size-prefixed frames (KIP-43)
  bool reauthenticating = false; // KIP-368: a new exchange on an authenticated connection
  /// KIP-368: when the authenticated session ends (monotonic ms); 0: never. A request after it closes the
  /// connection unless it starts a re-authentication.
  int64_t session_expiry_ms = 0;
};

/// The security protocol of listener `name` (Kafka's listener.security.protocol.map, default
/// "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), names compared upper-cased:
/// the mapped protocol (upper case), or "" when the map has no entry for `name`.
std::string security_protocol_of(const std::map<std::string, std::string>& config_values, const std::string& name);

}  // namespace sluice::broker
