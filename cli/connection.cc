#include "cli/connection.h"

#include <fmt/format.h>

#include "protocol/messages/api_versions.h"

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

connection::connection(asio::io_context& io, endpoint where, std::chrono::milliseconds timeout, std::string client_id)
    : io_(io), socket_(io), where_(std::move(where)), timeout_(timeout), client_id_(std::move(client_id)) {}

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
  ask_api_versions();
}

std::shared_ptr<std::vector<uint8_t>> connection::exchange(const std::vector<uint8_t>& request,
                                                          std::chrono::milliseconds timeout) {
  if (!socket_.is_open()) broken("connection closed");
  bool done = false;
  boost::system::error_code ec;
  auto size_prefix = std::make_shared<std::array<uint8_t, 4>>();
  auto body = std::make_shared<std::vector<uint8_t>>();
  // Write the request, then read the 4-byte size and the frame; `done` when all of it is in or on error.
  asio::async_write(socket_, asio::buffer(request), [&](const boost::system::error_code& e, size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    asio::async_read(socket_, asio::buffer(*size_prefix), [&](const boost::system::error_code& e2, size_t) {
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
      asio::async_read(socket_, asio::buffer(*body), [&](const boost::system::error_code& e3, size_t) {
        ec = e3;
        done = true;
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
  asio::async_write(socket_, asio::buffer(request), [&](const boost::system::error_code& e, size_t) {
    ec = e;
    done = true;
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
