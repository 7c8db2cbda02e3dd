#include "broker/net/connection.h"

#include <algorithm>

#include "base/logging.h"
#include "broker/security/listener_security.h"

namespace sluice::broker::net {

connection::connection(std::unique_ptr<transport> stream, session s, dispatcher& d, int32_t max_request_bytes)
    : stream_(std::move(stream)), session_(std::move(s)), dispatcher_(d), max_request_bytes_(max_request_bytes) {
  session_.peer = stream_->peer();
  // "[::1]:5000" -> "::1", "127.0.0.1:5000" -> "127.0.0.1"
  std::string host = session_.peer.substr(0, session_.peer.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  session_.client_host = std::move(host);
}

void connection::close() { stream_->close(); }

asio::awaitable<void> connection::run() {
  auto self = shared_from_this();
  const std::string& peer = session_.peer;
  try {
    auto handshake = stream_->start();
    if (auto ec = co_await std::move(handshake)) {
      log::info("closing connection from {} on listener {}: TLS handshake failed: {}", peer, session_.listener_name,
                ec.message());
      close();
      co_return;
    }
    if (session_.security_protocol == "SSL") {
      // Kafka's DefaultKafkaPrincipalBuilder: the mapped subject of the client certificate, else ANONYMOUS.
      if (auto subject = stream_->peer_subject()) {
        auto name = session_.security ? session_.security->principal_mapper.map(*subject) : subject;
        if (!name) {
          log::warn("closing connection from {}: no ssl.principal.mapping.rules rule applies to {}", peer, *subject);
          close();
          co_return;
        }
        session_.principal = "User:" + *name;
      }
    }
    for (;;) {
      uint8_t size_bytes[4];
      auto read_size = stream_->read(size_bytes);
      auto [ec, n] = co_await std::move(read_size);
      if (ec) break;  // the client closed or reset: normal end
      int32_t size = static_cast<int32_t>((uint32_t(size_bytes[0]) << 24) | (uint32_t(size_bytes[1]) << 16) |
                                          (uint32_t(size_bytes[2]) << 8) | uint32_t(size_bytes[3]));
      if (size < 0 || size > max_request_bytes_) {
        log::warn("closing connection from {}: request frame of {} bytes is outside [0, socket.request.max.bytes={}]",
                  peer, size, max_request_bytes_);
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
        auto read_body = stream_->read(std::span<uint8_t>(frame_.data() + got, want - got));
        auto [ec2, n2] = co_await std::move(read_body);
        got += n2;
        if (ec2) {
          log::warn("closing connection from {}: frame of {} bytes ended after {} bytes ({})", peer, size, got,
                    ec2.message());
          cut = true;
          break;
        }
      }
      if (cut) break;
      frame_.resize(total);

      auto dispatch = dispatcher_.dispatch(session_, std::span<const uint8_t>(frame_.data(), frame_.size()),
                                           stream_->executor());
      auto outcome = co_await std::move(dispatch);
      if (outcome.what == dispatcher::outcome::kind::close) break;
      if (outcome.what == dispatcher::outcome::kind::respond ||
          outcome.what == dispatcher::outcome::kind::respond_then_close) {
        auto write = stream_->write_frame(outcome.frame);
        co_await std::move(write);
      }
      if (outcome.what == dispatcher::outcome::kind::respond_then_close) break;
      if (outcome.mute_ms > 0) {
        // Over its quota: the client's next request waits (KIP-219), whether or not the client honours the
        // throttle time itself.
        asio::steady_timer mute(stream_->executor(), std::chrono::milliseconds(outcome.mute_ms));
        auto wait = mute.async_wait(asio::as_tuple(asio::use_awaitable));
        co_await std::move(wait);
      }
    }
  } catch (const boost::system::system_error& e) {
    log::debug("connection from {} ended: {}", peer, e.what());
  } catch (const std::exception& e) {
    log::error("connection from {} failed with an internal error: {}", peer, e.what());
  }
  close();
}

}  // namespace sluice::broker::net
