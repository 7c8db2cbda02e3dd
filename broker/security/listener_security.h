#pragma once
// What one listener demands of its clients (issue #17): TLS, SASL mechanisms and their settings, built once at
// start from Kafka's keys and shared by every connection of the listener.
#include <boost/asio/ssl.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "broker/security/sasl_server.h"
#include "broker/security/ssl_principal_mapper.h"

namespace sluice::broker::security {

/// Immutable after make_listener_security. Read from any strand.
struct listener_security {
  std::string listener_name;      // "SASL_SSL", "CLIENT", ...
  std::string security_protocol;  // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
  std::shared_ptr<boost::asio::ssl::context> tls;  // SSL and SASL_SSL
  ssl_principal_mapper principal_mapper;           // ssl.principal.mapping.rules (SSL principals)
  /// sasl.enabled.mechanisms of the listener, in the configured order (SaslHandshake lists them so).
  std::vector<std::string> sasl_mechanisms;
  std::map<std::string, std::string> plain_users;  // PLAIN: user_<name>="<password>" of the listener's JAAS entry
  oauthbearer_unsecured_options oauthbearer;       // OAUTHBEARER: unsecuredValidator* options
  int64_t reauth_ms = 0;                           // connections.max.reauth.ms (0: no session lifetime)
  int32_t failed_authentication_delay_ms = 100;    // connection.failed.authentication.delay.ms
  int32_t max_receive_size = 524288;               // sasl.server.max.receive.size (bytes of a SASL token)

  bool uses_tls() const { return security_protocol == "SSL" || security_protocol == "SASL_SSL"; }
  bool uses_sasl() const { return security_protocol == "SASL_PLAINTEXT" || security_protocol == "SASL_SSL"; }
  bool mechanism_enabled(const std::string& m) const;
  /// A fresh server for an enabled mechanism (null for one not enabled).
  std::unique_ptr<sasl_server> make_sasl_server(const std::string& mechanism, scram_lookup scram,
                                                std::function<int64_t()> now_ms) const;
};

/// The mechanisms Sluice implements: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
bool sasl_mechanism_supported(const std::string& mechanism);

/// Builds `listener`'s settings. Per-listener keys (listener.name.<l>.<key>) win over broker-wide ones; a
/// mechanism's JAAS entry is listener.name.<l>.<mechanism lowercased>.sasl.jaas.config, else sasl.jaas.config.
/// Errors (the broker does not start): bad TLS material, GSSAPI or an unknown mechanism enabled, PLAIN without
/// users, a malformed JAAS entry, bad mapping rules.
result<std::shared_ptr<const listener_security>> make_listener_security(const broker_config& config,
                                                                        const std::string& listener);

}  // namespace sluice::broker::security
