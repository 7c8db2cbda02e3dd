#pragma once
// A minimal Kafka-protocol client for broker-to-broker calls (a follower's Fetch and OffsetForLeaderEpoch
// to its leader): one connection, one request in flight, our own codec on both ends.
#include <boost/asio.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/header.h"

namespace sluice::broker {

namespace asio = boost::asio;

/// Not thread-safe: used by one coroutine at a time, on the executor it was made with.
class broker_client {
 public:
  broker_client(asio::any_io_executor executor, std::string client_id)
      : socket_(executor), timer_(executor), client_id_(std::move(client_id)) {}

  bool is_open() const { return socket_.is_open(); }
  void close() {
    boost::system::error_code ec;
    socket_.close(ec);
  }

  /// Connects to `host:port`, giving up after `timeout`. Errors carry the reason.
  asio::awaitable<result<void>> connect(std::string host, uint16_t port, std::chrono::milliseconds timeout);

  /// Sends `request` at `version` and decodes the answer; errors (I/O, timeout, malformed answer, frame
  /// above 128 MiB) close the connection. Records in the response view a buffer kept alive by their owner.
  template <class Req, class Resp>
  asio::awaitable<result<Resp>> call(int16_t version, const Req& request, std::chrono::milliseconds timeout) {
    const int32_t correlation_id = ++correlation_id_;
    auto frame = protocol::encode_request(correlation_id, version, client_id_, request);
    auto raw_op = exchange(std::move(frame.bytes), timeout);
    auto raw = co_await std::move(raw_op);
    if (!raw) co_return raw.err();
    auto buffer = std::move(raw.value());
    protocol::reader r(std::span<const uint8_t>(buffer->data(), buffer->size()), buffer);
    r.set_context("broker client", version, "response");
    int32_t got = 0;
    protocol::decode_response_header(r, protocol::response_header_version(static_cast<int16_t>(Req::key), version), got);
    Resp response;
    if (r.ok()) response.decode(r, version);
    if (!r.ok() || got != correlation_id) {
      close();
      co_return error{base_errc::failed, r.ok() ? "correlation id mismatch" : r.error_message()};
    }
    co_return response;
  }

 private:
  asio::awaitable<result<std::shared_ptr<std::vector<uint8_t>>>> exchange(std::vector<uint8_t> request,
                                                                        std::chrono::milliseconds timeout);
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  std::string client_id_;
  int32_t correlation_id_ = 0;
};

}  // namespace sluice::broker
