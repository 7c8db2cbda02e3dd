#pragma once
// connection: one blocking Kafka connection for the CLI. Each call runs the caller's io_context until its
// own operation completes or its deadline passes (then the socket is closed and the call fails with
// exit_code::cannot_connect), so a command is plain sequential code with every wait bounded. One request in
// flight at a time, as Kafka clients do per connection when ordering matters.
//
// After connect(), the connection has asked ApiVersions (v3, falling back to v0 on UNSUPPORTED_VERSION as
// KIP-511 says) and pick() chooses, per API, the highest version both sides support within the range the
// CLI's code handles.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/failure.h"
#include "protocol/api_key.h"
#include "protocol/api_traits.h"
#include "protocol/header.h"

namespace sluice::cli {

namespace asio = boost::asio;

/// "host:port", "[v6addr]:port" or "host" (port 9092) as given to --brokers.
struct endpoint {
  std::string host;
  uint16_t port = 9092;
  std::string text() const;
};
/// Parses a comma-separated --brokers list; a malformed entry is a usage error.
std::vector<endpoint> parse_endpoints(const std::string& list);

/// How the CLI connects: the client properties of `-X key=value` and `--command-config FILE` (cli/README.md,
/// librdkafka's names). TLS through OpenSSL (Boost.Asio's ssl::stream); SASL PLAIN and SCRAM-SHA-256/512 with
/// SaslHandshake v1 and SaslAuthenticate (KIP-43, KIP-84, KIP-152).
struct client_security {
  std::string protocol = "PLAINTEXT";  // security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
  std::string mechanism = "PLAIN";     // sasl.mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
  std::string username, password;      // sasl.username, sasl.password
  std::string ca_location;             // ssl.ca.location: PEM file of trusted CAs (default: the system's)
  std::string certificate_location;    // ssl.certificate.location: PEM client certificate (mutual TLS)
  std::string key_location;            // ssl.key.location: its PEM private key
  std::string key_password;            // ssl.key.password
  bool verify_certificate = true;      // enable.ssl.certificate.verification
  bool verify_hostname = true;         // ssl.endpoint.identification.algorithm: https (default) or none
  bool tls() const { return protocol == "SSL" || protocol == "SASL_SSL"; }
  bool sasl() const { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"; }
  /// Sets one property; a usage error for an unknown key or a bad value.
  void set(const std::string& key, const std::string& value);
  /// A line of a Kafka tools' client.properties (--command-config): the keys of set(), and the Java client's
  /// sasl.jaas.config (PlainLoginModule or ScramLoginModule username/password), ssl.truststore.location and
  /// ssl.keystore.location of type PEM, ssl.key.password. Returns false for a key this CLI does not use (the
  /// caller warns and goes on); a usage error for a value it cannot use (a JKS store, an unknown login module).
  bool set_java(const std::string& key, const std::string& value);
};

class connection {
 public:
  /// `security`: nullptr or PLAINTEXT for a plain connection.
  connection(asio::io_context& io, endpoint where, std::chrono::milliseconds timeout, std::string client_id,
             std::shared_ptr<const client_security> security = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Connects (bounded by the timeout), makes the TLS handshake, asks ApiVersions and authenticates as `security`
  /// says. Throws failure(cannot_connect) naming the address, or failure(kafka_error) with
  /// SASL_AUTHENTICATION_FAILED / UNSUPPORTED_SASL_MECHANISM / SSL_HANDSHAKE_FAILED.
  void open();
  const endpoint& where() const { return where_; }

  /// The highest version of `key` within [lo, hi] (the versions the calling code handles) that the broker
  /// supports. Throws failure(kafka_error) "UNSUPPORTED_VERSION: ..." when there is none.
  int16_t pick(protocol::api_key key, int16_t lo, int16_t hi) const;
  bool supports(protocol::api_key key) const { return versions_.count(static_cast<int16_t>(key)) != 0; }

  /// Sends `request` at `version` and decodes the response. `timeout` (default: the connection's) bounds the
  /// whole exchange; a Fetch with max_wait passes a longer one. Records in the response view a buffer the
  /// response keeps alive (their `owner`).
  template <class Resp, class Req>
  Resp call(const Req& request, int16_t version, std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) {
    const int32_t correlation_id = ++correlation_id_;
    auto frame = protocol::encode_request(correlation_id, version, client_id_, request);
    auto buffer = exchange(frame.bytes, timeout.count() > 0 ? timeout : timeout_);
    protocol::reader r(std::span<const uint8_t>(buffer->data(), buffer->size()), buffer);
    r.set_context(protocol::api_name(Req::key), version, "response");
    int32_t got = 0;
    protocol::decode_response_header(r, protocol::response_header_version(static_cast<int16_t>(Req::key), version),
                                     got);
    Resp response;
    if (r.ok()) response.decode(r, version);
    if (!r.ok()) broken(r.error_message());
    if (got != correlation_id) broken("correlation id mismatch");
    return response;
  }

  /// Sends `request` without waiting for an answer (Produce with acks=0, which Kafka never answers).
  template <class Req>
  void send(const Req& request, int16_t version) {
    auto frame = protocol::encode_request(++correlation_id_, version, client_id_, request);
    write_only(frame.bytes);
  }

 private:
  void write_only(const std::vector<uint8_t>& request);
  std::shared_ptr<std::vector<uint8_t>> exchange(const std::vector<uint8_t>& request, std::chrono::milliseconds timeout);
  /// Runs io_ until `done` or the deadline; on the deadline closes the socket and throws.
  void wait(bool& done, std::chrono::milliseconds timeout, const char* what);
  [[noreturn]] void broken(const std::string& why);
  void ask_api_versions();
  void handshake_tls();
  void authenticate();
  /// Runs f on the stream: the TLS stream when there is one, else the socket.
  template <class F>
  void with_stream(F&& f) {
    if (tls_) f(*tls_);
    else f(socket_);
  }

  asio::io_context& io_;
  asio::ip::tcp::socket socket_;
  std::shared_ptr<const client_security> security_;
  std::unique_ptr<asio::ssl::context> tls_context_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
  endpoint where_;
  std::chrono::milliseconds timeout_;
  std::string client_id_;
  int32_t correlation_id_ = 0;
  std::map<int16_t, std::pair<int16_t, int16_t>> versions_;  // api key -> broker's [min, max]
};

}  // namespace sluice::cli
