#include "broker/net/connection.h"

#include <algorithm>
#include <sys/sendfile.h>

#include "base/logging.h"
#include "broker/handler_table.h"
#include "broker/handlers/handlers.h"
#include "protocol/api_key.h"

namespace sluice::broker::net {

using asio::use_awaitable;
namespace {
constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string describe(const asio::ip::tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "?";
  auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}
}  // namespace

connection::connection(asio::ip::tcp::socket socket, handler_context& context)
    : socket_(std::move(socket)), context_(context), peer_(describe(socket_)) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void connection::close() {
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

asio::awaitable<void> connection::send_file(const sluice::file_region& region) {
  off_t offset = region.position;
  int64_t left = region.size;
  while (left > 0) {
    ssize_t n = ::sendfile(socket_.native_handle(), region.file->fd(), &offset, static_cast<size_t>(left));
    if (n > 0) {
      left -= n;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      co_await socket_.async_wait(asio::ip::tcp::socket::wait_write, use_awaitable);
    } else {
      // The file is shorter than the region (it cannot be: segments only grow or are deleted whole while
      // open) or the socket failed; the response cannot be completed, so the connection must go.
      throw boost::system::system_error(n == 0 ? make_error_code(asio::error::eof)
                                               : boost::system::error_code(errno, boost::system::system_category()));
    }
  }
}

asio::awaitable<void> connection::write_frame(const protocol::encoded_frame& frame) {
  size_t written = 0;
  for (const auto& [at, region] : frame.file_regions) {
    if (at > written) co_await asio::async_write(socket_, asio::buffer(frame.bytes.data() + written, at - written), use_awaitable);
    written = at;
    if (region.size > 0) co_await send_file(region);
  }
  if (written < frame.bytes.size())
    co_await asio::async_write(socket_, asio::buffer(frame.bytes.data() + written, frame.bytes.size() - written), use_awaitable);
}

asio::awaitable<void> connection::run() {
  auto self = shared_from_this();
  socket_.native_non_blocking(true);
  const int32_t max_size = context_.config.socket_request_max_bytes;
  try {
    for (;;) {
      uint8_t size_bytes[4];
      auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(size_bytes), as_tuple_awaitable);
      if (ec) break;  // the client closed or reset: normal end
      int32_t size = static_cast<int32_t>((uint32_t(size_bytes[0]) << 24) | (uint32_t(size_bytes[1]) << 16) |
                                          (uint32_t(size_bytes[2]) << 8) | uint32_t(size_bytes[3]));
      if (size < 0 || size > max_size) {
        log::warn("closing connection from {}: request frame of {} bytes is outside [0, socket.request.max.bytes={}]",
                  peer_, size, max_size);
        break;
      }
      // The buffer grows with the bytes that arrive (doubling from 64 KiB), not with the announced size: a
      // client announcing 100 MB and sending 1 KiB costs 64 KiB, not 100 MB (a breaker held 800 MiB with 8
      // such connections).
      const size_t total = static_cast<size_t>(size);
      size_t got = 0;
      bool cut = false;
      while (got < total) {
        const size_t want = std::min(total, std::max<size_t>(got * 2, size_t{64} * 1024));
        if (frame_.size() < want) frame_.resize(want);
        auto [ec2, n2] = co_await asio::async_read(socket_, asio::buffer(frame_.data() + got, want - got), as_tuple_awaitable);
        got += n2;
        if (ec2) {
          log::warn("closing connection from {}: frame of {} bytes ended after {} bytes ({})", peer_, size, got, ec2.message());
          cut = true;
          break;
        }
      }
      if (cut) break;
      frame_.resize(total);

      protocol::reader reader(std::span<const uint8_t>(frame_.data(), frame_.size()));
      request_context rc{{}, peer_, socket_.get_executor()};
      if (!protocol::decode_request_header(reader, rc.header)) {
        log::warn("closing connection from {}: malformed request header ({} at byte {}: {})", peer_,
                  reader.error_field(), reader.error_offset(), reader.error_message());
        break;
      }
      const auto& h = rc.header;
      const handler_entry* entry = find_handler(h.api_key);
      if (!entry) {
        log::warn("closing connection from {}: unknown API key {} (version {}, correlation id {})", peer_, h.api_key,
                  h.api_version, h.correlation_id);
        break;
      }
      if (h.api_version < entry->min_version || h.api_version > entry->max_version) {
        if (entry->key == protocol::api_key::api_versions) {
          // KIP-511: answer in v0 with UNSUPPORTED_VERSION and the full list so the client can pick.
          auto reply = handlers::api_versions_list(protocol::error_code::unsupported_version);
          auto frame = protocol::encode_response(h.correlation_id, int16_t{0}, reply);
          co_await write_frame(frame);
          continue;
        }
        log::warn("closing connection from {}: {} version {} is not supported (supported {}-{})", peer_,
                  protocol::api_name(h.api_key), h.api_version, entry->min_version, entry->max_version);
        break;
      }
      auto outcome = co_await entry->handle(context_, rc, reader);
      if (outcome.what == handler_outcome::kind::malformed) {
        log::warn("closing connection from {}: malformed {} v{} request (correlation id {}): field {} at byte {}: {}",
                  peer_, protocol::api_name(h.api_key), h.api_version, h.correlation_id, reader.error_field(),
                  reader.error_offset(), reader.error_message());
        break;
      }
      if (rc.close_connection) {
        // Test hook (broker/fault_injection.h): the request took effect but its response is dropped.
        log::info("test hook: closing connection from {} without answering {} v{} (correlation id {})", peer_,
                  protocol::api_name(h.api_key), h.api_version, h.correlation_id);
        break;
      }
      if (outcome.what == handler_outcome::kind::respond) co_await write_frame(outcome.frame);
    }
  } catch (const boost::system::system_error& e) {
    log::debug("connection from {} ended: {}", peer_, e.what());
  } catch (const std::exception& e) {
    log::error("connection from {} failed with an internal error: {}", peer_, e.what());
  }
  close();
}

}  // namespace sluice::broker::net
