#include "broker/replication/broker_client.h"

#include "storage/byte_order.h"

namespace sluice::broker {

namespace {
constexpr size_t max_response_bytes = size_t{128} << 20;
}

asio::awaitable<result<void>> broker_client::connect(std::string host, uint16_t port, std::chrono::milliseconds timeout) {
  close();
  asio::ip::tcp::resolver resolver(socket_.get_executor());
  auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), asio::as_tuple(asio::use_awaitable));
  if (rec) co_return error{base_errc::failed, "resolve " + host + ": " + rec.message()};
  timer_.expires_after(timeout);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) close();  // the connect below then fails with operation_aborted
  });
  auto [cec, ep] = co_await asio::async_connect(socket_, endpoints, asio::as_tuple(asio::use_awaitable));
  timer_.cancel();
  if (cec) {
    close();
    co_return error{base_errc::failed, "connect " + host + ":" + std::to_string(port) + ": " + cec.message()};
  }
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  co_return result<void>{};
}

asio::awaitable<result<std::shared_ptr<std::vector<uint8_t>>>> broker_client::exchange(std::vector<uint8_t> request,
                                                                                     std::chrono::milliseconds timeout) {
  if (!socket_.is_open()) co_return error{base_errc::failed, "not connected"};
  timer_.expires_after(timeout);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) close();  // a stuck leader: the pending read fails and the caller reconnects
  });
  auto [wec, written] = co_await asio::async_write(socket_, asio::buffer(request), asio::as_tuple(asio::use_awaitable));
  if (wec) {
    timer_.cancel();
    close();
    co_return error{base_errc::failed, "write: " + wec.message()};
  }
  uint8_t size_bytes[4];
  auto [sec, n] = co_await asio::async_read(socket_, asio::buffer(size_bytes), asio::as_tuple(asio::use_awaitable));
  if (sec) {
    timer_.cancel();
    close();
    co_return error{base_errc::failed, "read: " + sec.message()};
  }
  const int32_t size = storage::detail::load_be<int32_t>(size_bytes);
  if (size < 4 || static_cast<size_t>(size) > max_response_bytes) {
    timer_.cancel();
    close();
    co_return error{base_errc::failed, "response frame of " + std::to_string(size) + " bytes"};
  }
  auto buffer = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(size));
  auto [bec, m] = co_await asio::async_read(socket_, asio::buffer(*buffer), asio::as_tuple(asio::use_awaitable));
  timer_.cancel();
  if (bec) {
    close();
    co_return error{base_errc::failed, "read: " + bec.message()};
  }
  co_return buffer;
}

}  // namespace sluice::broker
