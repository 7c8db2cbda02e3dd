#pragma once
// The server side of the SASL mechanisms (KIP-43, KIP-84, KIP-255): one object per authentication exchange.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/jaas.h"
#include "broker/security/scram.h"

namespace sluice::broker::security {

/// One step of an exchange: a challenge to send (SCRAM's server-first), the end with the principal name (and the
/// last server message, SCRAM's server-final), or a failure with the message Kafka's SaslAuthenticate
/// response carries.
struct sasl_step {
  enum class kind { challenge, complete, failed } what = kind::failed;
  bytes token;
  std::string principal_name;  // complete: the authorization id (user name, or the token's subject)
  std::string error_message;   // failed: what the client is told (Kafka's text)
  std::string log_reason;      // failed: what the broker logs when it differs (the client is told less)
  /// complete: when the credential stops being valid (wall clock ms), for KIP-368's session lifetime
  /// (OAUTHBEARER tokens expire); nullopt for passwords.
  std::optional<int64_t> credential_expiry_ms;
};

/// A mechanism's server. Not thread-safe; one per connection and exchange.
class sasl_server {
 public:
  virtual ~sasl_server() = default;
  /// Consumes the client's next message. After `complete` or `failed` the exchange is over.
  virtual sasl_step evaluate(std::span<const uint8_t> client_message) = 0;
};

/// Where SCRAM credentials come from (the store: /config/users in ZooKeeper, the embedded file on a single node).
using scram_lookup = std::function<std::optional<scram_credential>(const std::string& user, scram_mechanism m)>;

using jaas::jaas_entry;  // base/jaas.h: the JAAS parser is shared with the CLI's --command-config
using jaas::parse_jaas_config;

/// The settings of OAUTHBEARER's unsecured validator (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
/// options, from the JAAS entry of the listener's OAUTHBEARER mechanism).
struct oauthbearer_unsecured_options {
  std::string principal_claim_name = "sub";  // unsecuredValidatorPrincipalClaimName
  std::string scope_claim_name = "scope";    // unsecuredValidatorScopeClaimName
  std::vector<std::string> required_scope;   // unsecuredValidatorRequiredScope (space-separated)
  int64_t allowable_clock_skew_ms = 0;       // unsecuredValidatorAllowableClockSkewMs
};

/// PLAIN (RFC 4616) against `users` (JAAS user_<name>="<password>" options, Kafka's PlainServerCallbackHandler).
std::unique_ptr<sasl_server> make_plain_server(std::map<std::string, std::string> users);
/// SCRAM-SHA-256/512 (RFC 5802) against `lookup`.
std::unique_ptr<sasl_server> make_scram_server(scram_mechanism m, scram_lookup lookup);
/// OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validator: for development only, as Kafka says.
/// `now_ms` gives the wall clock (ms) for exp/iat checks.
std::unique_ptr<sasl_server> make_oauthbearer_unsecured_server(oauthbearer_unsecured_options options,
                                                               std::function<int64_t()> now_ms);

}  // namespace sluice::broker::security
