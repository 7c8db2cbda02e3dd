#include "bench/load/kafka_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "protocol/messages/api_versions.h"

namespace sluice::bench {
namespace asio = boost::asio;
using asio::ip::tcp;

void kafka_connection::fail(const std::string& what) const { throw load_error(address_.text() + ": " + what); }

asio::awaitable<void> kafka_connection::connect() {
  tcp::resolver resolver(socket_.get_executor());
  boost::system::error_code ec;
  const std::string port = std::to_string(address_.port);
  auto resolving = resolver.async_resolve(address_.host, port, asio::redirect_error(asio::use_awaitable, ec));
  auto endpoints = co_await std::move(resolving);
  if (ec) fail("resolve: " + ec.message());
  co_await asio::async_connect(socket_, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) fail("connect: " + ec.message());
  socket_.set_option(tcp::no_delay(true), ec);
}

asio::awaitable<void> kafka_connection::negotiate() {
  protocol::api_versions_request req;
  req.client_software_name = "sluice-load";
  req.client_software_version = "1";
  const int32_t corr = next_correlation_id();
  // GCC 12: each awaitable is built before its co_await (temporaries of a co_await full-expression are destroyed
  // twice), and the frame outlives the write.
  const auto frame = protocol::encode_request(corr, 3, client_id_, req);
  auto writing = write(frame.bytes);
  co_await std::move(writing);
  auto reading = read_frame();
  auto body = co_await std::move(reading);
  // The error code is the first field of every version: peek at it to choose the version of the body (KIP-511).
  int16_t version = 3;
  if (body.size() >= 6 && ((body[4] << 8) | body[5]) == static_cast<int>(protocol::error_code::unsupported_version))
    version = 0;
  auto resp = decode_response<protocol::api_versions_response>(body, corr, version);
  if (version == 3 && resp.error_code != protocol::error_code::none)
    fail("ApiVersions: " + std::string(protocol::error_name(resp.error_code)));
  for (const auto& v : resp.api_keys) versions_[v.api_key] = {v.min_version, v.max_version};
}

std::optional<int16_t> kafka_connection::pick(protocol::api_key key, int16_t lo, int16_t hi) const {
  auto it = versions_.find(static_cast<int16_t>(key));
  if (it == versions_.end()) return std::nullopt;
  const int16_t top = std::min(hi, it->second.second);
  if (top < std::max(lo, it->second.first)) return std::nullopt;
  return top;
}

asio::awaitable<void> kafka_connection::write(const std::vector<uint8_t>& frame) {
  boost::system::error_code ec;
  co_await asio::async_write(socket_, asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) fail("write: " + ec.message());
}

asio::awaitable<std::span<const uint8_t>> kafka_connection::read_frame() {
  boost::system::error_code ec;
  uint8_t size_bytes[4];
  co_await asio::async_read(socket_, asio::buffer(size_bytes), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) fail(ec == asio::error::eof ? std::string("connection closed by the broker") : "read: " + ec.message());
  const uint32_t size = (uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                        (uint32_t{size_bytes[2]} << 8) | uint32_t{size_bytes[3]};
  if (size < 4 || size > (1u << 30)) fail("response size " + std::to_string(size) + " out of range");
  buffer_.resize(size);
  co_await asio::async_read(socket_, asio::buffer(buffer_), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) fail("read: " + ec.message());
  co_return std::span<const uint8_t>(buffer_);
}

void kafka_connection::close() {
  boost::system::error_code ec;
  socket_.close(ec);
}

}  // namespace sluice::bench
