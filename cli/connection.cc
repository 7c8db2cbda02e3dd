#include "cli/connection.h"

#include <fmt/format.h>

#include <cctype>

#include "base/jaas.h"
#include "cli/scram_client.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/sasl_authenticate.h"
#include "protocol/messages/sasl_handshake.h"

namespace sluice::cli {

std::string endpoint::text() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::vector<endpoint> parse_endpoints(const std::string& list) {
  std::vector<endpoint> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    // Trim blanks; skip empty items ("a:1,,b:2").
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.erase(item.begin());
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.pop_back();
    if (item.empty()) continue;
    endpoint e;
    std::string port_text;
    if (item.front() == '[') {  // [v6]:port
      size_t close = item.find(']');
      if (close == std::string::npos) usage_error(fmt::format("--brokers: bad address '{}'", item));
      e.host = item.substr(1, close - 1);
      if (close + 1 < item.size()) {
        if (item[close + 1] != ':') usage_error(fmt::format("--brokers: bad address '{}'", item));
        port_text = item.substr(close + 2);
      }
    } else {
      size_t colon = item.rfind(':');
      if (colon != std::string::npos && item.find(':') != colon)
        usage_error(fmt::format("--brokers: write IPv6 addresses as [addr]:port, got '{}'", item));
      e.host = item.substr(0, colon);
      if (colon != std::string::npos) port_text = item.substr(colon + 1);
    }
    if (e.host.empty()) usage_error(fmt::format("--brokers: no host in '{}'", item));
    if (!port_text.empty() || item.back() == ':') {
      int port = 0;
      for (char c : port_text) {
        if (c < '0' || c > '9' || port > 65535) usage_error(fmt::format("--brokers: bad port in '{}'", item));
        port = port * 10 + (c - '0');
      }
      if (port_text.empty() || port <= 0 || port > 65535)
        usage_error(fmt::format("--brokers: bad port in '{}'", item));
      e.port = static_cast<uint16_t>(port);
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) usage_error("--brokers: no broker address given");
  return out;
}

void client_security::set(const std::string& key, const std::string& value) {
  auto boolean = [&] {
    if (value == "true") return true;
    if (value == "false") return false;
    usage_error(fmt::format("{} takes true or false, got '{}'", key, value));
  };
  if (key == "security.protocol") {
    std::string v;
    for (char c : value) v.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    if (v != "PLAINTEXT" && v != "SSL" && v != "SASL_PLAINTEXT" && v != "SASL_SSL")
      usage_error(fmt::format("security.protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got '{}'", value));
    protocol = v;
  } else if (key == "sasl.mechanism" || key == "sasl.mechanisms") {
    if (value != "PLAIN" && scram::scram_mechanism_from_name(value) == scram::scram_mechanism::unknown)
      usage_error(fmt::format("{} must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got '{}'", key, value));
    mechanism = value;
  } else if (key == "sasl.username") {
    username = value;
  } else if (key == "sasl.password") {
    password = value;
  } else if (key == "ssl.ca.location") {
    ca_location = value;
  } else if (key == "ssl.certificate.location") {
    certificate_location = value;
  } else if (key == "ssl.key.location") {
    key_location = value;
  } else if (key == "ssl.key.password") {
    key_password = value;
  } else if (key == "enable.ssl.certificate.verification") {
    verify_certificate = boolean();
  } else if (key == "ssl.endpoint.identification.algorithm") {
    if (value != "https" && value != "none" && !value.empty())
      usage_error(fmt::format("ssl.endpoint.identification.algorithm must be https or none, got '{}'", value));
    verify_hostname = value == "https";
  } else {
    usage_error(fmt::format(
        "unknown client property '{}' (security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, "
        "ssl.certificate.location, ssl.key.location, ssl.key.password, enable.ssl.certificate.verification, "
        "ssl.endpoint.identification.algorithm)",
        key));
  }
}

bool client_security::set_java(const std::string& key, const std::string& value) {
  if (key == "sasl.jaas.config") {
    // org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
    auto entry = jaas::parse_jaas_config(value);
    if (!entry) usage_error(entry.err().message);
    const auto& module = entry->login_module;
    if (module.find("PlainLoginModule") == std::string::npos && module.find("ScramLoginModule") == std::string::npos)
      usage_error("sasl.jaas.config: only PlainLoginModule and ScramLoginModule are understood here, got '" + module + "'");
    for (const char* name : {"username", "password"})
      if (!entry->options.count(name)) usage_error(std::string("sasl.jaas.config: no ") + name + "= in it");
    username = entry->options.at("username");
    password = entry->options.at("password");
    return true;
  }
  if (key == "ssl.truststore.type" || key == "ssl.keystore.type") {  // only checked: the locations are read as PEM
    if (value != "PEM") usage_error(key + ": only PEM stores are read here (convert " + value + " with openssl or keytool)");
    return true;
  }
  if (key == "ssl.truststore.location") {
    ca_location = value;
    return true;
  }
  if (key == "ssl.keystore.location") {  // a PEM key store: the certificate chain and the private key in one file
    certificate_location = value;
    if (key_location.empty()) key_location = value;
    return true;
  }
  static const char* ours[] = {"security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password",
                               "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
                               "enable.ssl.certificate.verification", "ssl.endpoint.identification.algorithm"};
  for (const char* k : ours)
    if (key == k) {
      set(key, value);
      return true;
    }
  return false;
}

connection::connection(asio::io_context& io, endpoint where, std::chrono::milliseconds timeout, std::string client_id,
                       std::shared_ptr<const client_security> security)
    : io_(io), socket_(io), security_(std::move(security)), where_(std::move(where)), timeout_(timeout),
      client_id_(std::move(client_id)) {}

connection::~connection() {
  boost::system::error_code ec;
  socket_.close(ec);
}

void connection::wait(bool& done, std::chrono::milliseconds timeout, const char* what) {
  io_.restart();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || io_.run_one_for(deadline - now) == 0) {
      if (done) break;
      // Close, then let the cancelled handler run (it only sets flags) before the stack frame goes.
      boost::system::error_code ec;
      socket_.close(ec);
      io_.restart();
      io_.run_for(std::chrono::seconds(1));
      throw failure(exit_code::cannot_connect,
                    fmt::format("{}: {} timed out after {} ms", where_.text(), what, timeout.count()));
    }
  }
}

void connection::broken(const std::string& why) {
  boost::system::error_code ec;
  socket_.close(ec);
  throw failure(exit_code::cannot_connect, fmt::format("{}: {}", where_.text(), why));
}

void connection::open() {
  asio::ip::tcp::resolver resolver(io_);
  boost::system::error_code ec;
  auto results = resolver.resolve(where_.host, std::to_string(where_.port), ec);
  if (ec) throw failure(exit_code::cannot_connect, fmt::format("{}: cannot resolve: {}", where_.text(), ec.message()));
  bool done = false;
  boost::system::error_code connect_ec;
  asio::async_connect(socket_, results, [&](const boost::system::error_code& e, const asio::ip::tcp::endpoint&) {
    connect_ec = e;
    done = true;
  });
  wait(done, timeout_, "connect");
  if (connect_ec)
    throw failure(exit_code::cannot_connect, fmt::format("cannot connect to {}: {}", where_.text(), connect_ec.message()));
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (security_ && security_->tls()) handshake_tls();
  ask_api_versions();
  if (security_ && security_->sasl()) authenticate();
}

void connection::handshake_tls() {
  const auto& s = *security_;
  tls_context_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  auto& ctx = *tls_context_;
  boost::system::error_code ec;
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                  asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  if (!s.ca_location.empty()) ctx.load_verify_file(s.ca_location, ec);
  else ctx.set_default_verify_paths(ec);
  if (ec) usage_error(fmt::format("ssl.ca.location {}: {}", s.ca_location.empty() ? "(system)" : s.ca_location, ec.message()));
  if (!s.key_password.empty()) ctx.set_password_callback([pw = s.key_password](size_t, asio::ssl::context::password_purpose) { return pw; });
  if (!s.certificate_location.empty()) {
    ctx.use_certificate_chain_file(s.certificate_location, ec);
    if (ec) usage_error(fmt::format("ssl.certificate.location {}: {}", s.certificate_location, ec.message()));
    ctx.use_private_key_file(s.key_location.empty() ? s.certificate_location : s.key_location, asio::ssl::context::pem, ec);
    if (ec) usage_error(fmt::format("ssl.key.location {}: {}", s.key_location, ec.message()));
  }
  ctx.set_verify_mode(s.verify_certificate ? asio::ssl::verify_peer : asio::ssl::verify_none);
  tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, ctx);
  if (s.verify_certificate && s.verify_hostname) tls_->set_verify_callback(asio::ssl::host_name_verification(where_.host));
  boost::system::error_code addr_ec;
  asio::ip::make_address(where_.host, addr_ec);
  if (addr_ec) SSL_set_tlsext_host_name(tls_->native_handle(), where_.host.c_str());  // SNI for a host name only
  bool done = false;
  boost::system::error_code hec;
  tls_->async_handshake(asio::ssl::stream_base::client, [&](const boost::system::error_code& e) {
    hec = e;
    done = true;
  });
  wait(done, timeout_, "TLS handshake");
  if (hec) {
    socket_.close(ec);
    throw failure(exit_code::kafka_error, fmt::format("SSL_HANDSHAKE_FAILED: {}: {}", where_.text(), hec.message()));
  }
}

void connection::authenticate() {
  const auto& s = *security_;
  protocol::sasl_handshake_request hs;
  hs.mechanism = s.mechanism;
  const int16_t hv = pick(protocol::api_key::sasl_handshake, 1, 1);
  const auto hr = call<protocol::sasl_handshake_response>(hs, hv);
  if (hr.error_code != protocol::error_code::none) {
    std::string enabled;
    for (const auto& m : hr.mechanisms) enabled += (enabled.empty() ? "" : ", ") + m;
    throw failure(exit_code::kafka_error, fmt::format("{}: {} does not enable SASL mechanism {} (it enables: {})",
                                                      protocol::error_name(hr.error_code), where_.text(), s.mechanism,
                                                      enabled.empty() ? "none" : enabled));
  }
  const int16_t av = pick(protocol::api_key::sasl_authenticate, 0, 2);
  auto step = [&](const std::string& message) {
    protocol::sasl_authenticate_request r;
    r.auth_bytes.assign(message.begin(), message.end());
    const auto a = call<protocol::sasl_authenticate_response>(r, av);
    if (a.error_code != protocol::error_code::none)
      throw failure(exit_code::kafka_error,
                    fmt::format("{}: {}", protocol::error_name(a.error_code),
                                a.error_message && !a.error_message->empty() ? *a.error_message
                                                                             : "authentication as " + s.username + " failed"));
    return std::string(a.auth_bytes.begin(), a.auth_bytes.end());
  };
  if (s.mechanism == "PLAIN") {
    step(std::string(1, '\0') + s.username + std::string(1, '\0') + s.password);
    return;
  }
  scram_client scram(scram::scram_mechanism_from_name(s.mechanism), s.username, s.password);
  const auto server_first = step(scram.client_first());
  const auto final_step = scram.client_final(server_first);
  if (!final_step.error.empty())
    throw failure(exit_code::kafka_error, "SASL_AUTHENTICATION_FAILED: " + final_step.error);
  const auto server_final = step(final_step.message);
  if (auto problem = scram.verify_server_final(server_final); !problem.empty())
    throw failure(exit_code::kafka_error, "SASL_AUTHENTICATION_FAILED: " + problem);
}

std::shared_ptr<std::vector<uint8_t>> connection::exchange(const std::vector<uint8_t>& request,
                                                          std::chrono::milliseconds timeout) {
  if (!socket_.is_open()) broken("connection closed");
  bool done = false;
  boost::system::error_code ec;
  auto size_prefix = std::make_shared<std::array<uint8_t, 4>>();
  auto body = std::make_shared<std::vector<uint8_t>>();
  // Write the request, then read the 4-byte size and the frame; `done` when all of it is in or on error.
  with_stream([&](auto& stream) {
  asio::async_write(stream, asio::buffer(request), [&](const boost::system::error_code& e, size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    asio::async_read(stream, asio::buffer(*size_prefix), [&](const boost::system::error_code& e2, size_t) {
      if (e2) {
        ec = e2;
        done = true;
        return;
      }
      const uint32_t size = (uint32_t{(*size_prefix)[0]} << 24) | (uint32_t{(*size_prefix)[1]} << 16) |
                            (uint32_t{(*size_prefix)[2]} << 8) | uint32_t{(*size_prefix)[3]};
      if (size > (256u << 20)) {  // no response of ours is near this; a garbage prefix
        ec = asio::error::message_size;
        done = true;
        return;
      }
      body->resize(size);
      asio::async_read(stream, asio::buffer(*body), [&](const boost::system::error_code& e3, size_t) {
        ec = e3;
        done = true;
      });
    });
  });
  });
  wait(done, timeout, "request");
  if (ec) broken(ec == asio::error::eof ? std::string("the broker closed the connection") : ec.message());
  return body;
}

void connection::write_only(const std::vector<uint8_t>& request) {
  if (!socket_.is_open()) broken("connection closed");
  bool done = false;
  boost::system::error_code ec;
  with_stream([&](auto& stream) {
    asio::async_write(stream, asio::buffer(request), [&](const boost::system::error_code& e, size_t) {
      ec = e;
      done = true;
    });
  });
  wait(done, timeout_, "send");
  if (ec) broken(ec.message());
}

void connection::ask_api_versions() {
  protocol::api_versions_request req;
  req.client_software_name = "sluice-cli";
  req.client_software_version = "1";
  const int32_t correlation_id = ++correlation_id_;
  auto frame = protocol::encode_request(correlation_id, 3, client_id_, req);
  auto buffer = exchange(frame.bytes, timeout_);
  // KIP-511: a broker that does not know v3 answers in v0 with UNSUPPORTED_VERSION; the error code comes first in
  // every version, so peek at it before choosing the version to decode the body with.
  protocol::reader r(std::span<const uint8_t>(buffer->data(), buffer->size()), buffer);
  int32_t got = 0;
  protocol::decode_response_header(r, 0, got);
  int16_t body_version = 3;
  if (r.remaining() >= 2 && (((*buffer)[r.position()] << 8) | (*buffer)[r.position() + 1]) ==
                                static_cast<int16_t>(protocol::error_code::unsupported_version))
    body_version = 0;
  r.set_context("ApiVersions", body_version, "response");
  protocol::api_versions_response resp;
  if (r.ok()) resp.decode(r, body_version);
  if (!r.ok()) broken(r.error_message());
  if (got != correlation_id) broken("correlation id mismatch");
  if (body_version == 0)  // the full list came with the error: what the broker speaks
    resp.error_code = protocol::error_code::none;
  if (resp.error_code != protocol::error_code::none) kafka_failure(resp.error_code, std::nullopt, "ApiVersions");
  for (const auto& v : resp.api_keys) versions_[v.api_key] = {v.min_version, v.max_version};
}

int16_t connection::pick(protocol::api_key key, int16_t lo, int16_t hi) const {
  auto it = versions_.find(static_cast<int16_t>(key));
  if (it != versions_.end()) {
    const int16_t top = std::min(hi, it->second.second);
    if (top >= std::max(lo, it->second.first)) return top;
  }
  std::string theirs = it == versions_.end() ? std::string("none")
                                              : fmt::format("{}-{}", it->second.first, it->second.second);
  throw failure(exit_code::kafka_error,
                fmt::format("UNSUPPORTED_VERSION: {} at {} supports versions {}, this CLI {}-{}", protocol::api_name(key),
                            where_.text(), theirs, lo, hi));
}

}  // namespace sluice::cli
