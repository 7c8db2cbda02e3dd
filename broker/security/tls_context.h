#pragma once
// The server side of an SSL or SASL_SSL listener: an OpenSSL context built from Kafka's ssl.* keys.
#include <boost/asio/ssl.hpp>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "broker/config.h"

namespace sluice::broker::security {

/// Builds the TLS server context of `listener` from its ssl.* keys (each looked up as
/// listener.name.<listener>.<key> first, then broker-wide; Kafka's SslConfigs and BrokerSecurityConfigs):
///   ssl.keystore.type          PEM or PKCS12 (Kafka's default JKS is refused with a hint: Java key stores need
///                              a JVM; `keytool -importkeystore -deststoretype PKCS12` converts one)
///   PEM:    ssl.keystore.certificate.chain + ssl.keystore.key (the PEM text itself), or ssl.keystore.location
///           (a file with the private key and the certificate chain); ssl.key.password for an encrypted key
///   PKCS12: ssl.keystore.location + ssl.keystore.password
///   ssl.truststore.type        PEM (ssl.truststore.certificates text or ssl.truststore.location file) or PKCS12
///                              (location + ssl.truststore.password); none given: the system's CA store
///   ssl.client.auth            none | requested | required (required: a client without a certificate fails
///                              the handshake); on a SASL_SSL listener only listener.name.<l>.ssl.client.auth
///                              counts, default none (KIP-684)
///   ssl.enabled.protocols      TLSv1.2,TLSv1.3 (also TLSv1, TLSv1.1)
///   ssl.cipher.suites          IANA names as Java writes them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
///                              TLS_AES_256_GCM_SHA384); empty: OpenSSL's defaults
/// Errors name the listener, the key and what OpenSSL said; the broker does not start with a bad TLS config.
result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(const broker_config& config,
                                                                           const std::string& listener);

/// The subject of `ssl`'s verified peer certificate as an RFC 2253 distinguished name ("CN=alice,O=example"),
/// the form Java's X500Principal.getName() gives; nullopt when the client sent no certificate.
std::optional<std::string> peer_subject(SSL* ssl);

}  // namespace sluice::broker::security
