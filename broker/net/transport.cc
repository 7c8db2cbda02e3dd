#include "broker/net/transport.h"

#include <sys/sendfile.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "broker/security/tls_context.h"

namespace sluice::broker::net {

namespace {
constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string describe(const asio::ip::tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "?";
  auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

[[noreturn]] void fail(int err) {
  throw boost::system::system_error(err == 0 ? make_error_code(asio::error::eof)
                                             : boost::system::error_code(err, boost::system::system_category()));
}
}  // namespace

asio::awaitable<void> transport::write_frame(const protocol::encoded_frame& frame) {
  size_t written = 0;
  for (const auto& [at, region] : frame.file_regions) {
    if (at > written) {
      auto op = write(std::span<const uint8_t>(frame.bytes.data() + written, at - written));
      co_await std::move(op);
    }
    written = at;
    if (region.size > 0) {
      auto op = send_file(region);
      co_await std::move(op);
    }
  }
  if (written < frame.bytes.size()) {
    auto op = write(std::span<const uint8_t>(frame.bytes.data() + written, frame.bytes.size() - written));
    co_await std::move(op);
  }
}

asio::awaitable<void> transport::copy_file(const sluice::file_region& region) {
  std::vector<uint8_t> chunk(std::min<size_t>(copy_chunk_bytes, static_cast<size_t>(std::max<int64_t>(region.size, 0))));
  int64_t offset = region.position;
  int64_t left = region.size;
  while (left > 0) {
    const size_t want = std::min<size_t>(chunk.size(), static_cast<size_t>(left));
    const ssize_t n = ::pread(region.file->fd(), chunk.data(), want, offset);
    if (n < 0 && errno == EINTR) continue;
    // A file shorter than the region cannot happen (segments only grow or are deleted whole while open); the
    // response cannot be completed, so the connection must go.
    if (n <= 0) fail(n == 0 ? 0 : errno);
    auto op = write(std::span<const uint8_t>(chunk.data(), static_cast<size_t>(n)));
    co_await std::move(op);
    offset += n;
    left -= n;
  }
}

plain_transport::plain_transport(asio::ip::tcp::socket socket, bool zero_copy)
    : socket_(std::move(socket)), zero_copy_(zero_copy), peer_(describe(socket_)) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  socket_.native_non_blocking(true, ec);  // sendfile(2) must not block the io thread
}

asio::awaitable<std::pair<boost::system::error_code, size_t>> plain_transport::read(std::span<uint8_t> buffer) {
  auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(buffer.data(), buffer.size()), as_tuple_awaitable);
  co_return std::pair{ec, n};
}

asio::awaitable<void> plain_transport::write(std::span<const uint8_t> bytes) {
  co_await asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()), asio::use_awaitable);
}

asio::awaitable<void> plain_transport::send_file(const sluice::file_region& region) {
  if (!zero_copy_) {
    auto op = copy_file(region);
    co_await std::move(op);
    co_return;
  }
  off_t offset = region.position;
  int64_t left = region.size;
  while (left > 0) {
    const ssize_t n = ::sendfile(socket_.native_handle(), region.file->fd(), &offset, static_cast<size_t>(left));
    if (n > 0) {
      left -= n;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      co_await socket_.async_wait(asio::ip::tcp::socket::wait_write, asio::use_awaitable);
    } else {
      fail(n == 0 ? 0 : errno);
    }
  }
}

void plain_transport::close() {
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

tls_transport::tls_transport(asio::ip::tcp::socket socket, std::shared_ptr<asio::ssl::context> context)
    : context_(std::move(context)), stream_(std::move(socket), *context_), peer_(describe(stream_.next_layer())) {
  boost::system::error_code ec;
  stream_.next_layer().set_option(asio::ip::tcp::no_delay(true), ec);
}

asio::awaitable<boost::system::error_code> tls_transport::start() {
  auto [ec] = co_await stream_.async_handshake(asio::ssl::stream_base::server, as_tuple_awaitable);
  if (!ec) subject_ = security::peer_subject(stream_.native_handle());
  co_return ec;
}

asio::awaitable<std::pair<boost::system::error_code, size_t>> tls_transport::read(std::span<uint8_t> buffer) {
  auto [ec, n] = co_await asio::async_read(stream_, asio::buffer(buffer.data(), buffer.size()), as_tuple_awaitable);
  co_return std::pair{ec, n};
}

asio::awaitable<void> tls_transport::write(std::span<const uint8_t> bytes) {
  co_await asio::async_write(stream_, asio::buffer(bytes.data(), bytes.size()), asio::use_awaitable);
}

void tls_transport::close() {
  // No close_notify round trip: the connection is going away either way, and waiting for the peer's reply
  // would let a silent client hold it open.
  boost::system::error_code ec;
  stream_.next_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream_.next_layer().close(ec);
}

}  // namespace sluice::broker::net
