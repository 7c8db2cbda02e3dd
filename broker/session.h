#pragma once
// Per-connection state the dispatcher consults before a request reaches its handler (issue #13): which
// listener the client came through, who it is, and what it said about itself.
#include <map>
#include <string>

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
  std::string client_id;  // the last request header's client id (null: "")
  /// KIP-511: what ApiVersions v3+ named ("unknown" until then, as Kafka reports it).
  std::string client_software_name = "unknown";
  std::string client_software_version = "unknown";
};

/// The security protocol of listener `name` (Kafka's listener.security.protocol.map, default
/// "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"): the mapped value, or the name
/// itself when the map has no entry.
std::string security_protocol_of(const std::map<std::string, std::string>& config_values, const std::string& name);

}  // namespace sluice::broker
