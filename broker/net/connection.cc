#include "broker/net/connection.h"

#include <algorithm>
#include <cstring>

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

void connection::make_room(size_t need) {
  const size_t have = in_end_ - in_begin_;
  if (in_begin_ + need > in_.size() && in_begin_ > 0) {
    // Not enough room after the unread bytes: move them to the front (they are the start of one frame).
    std::memmove(in_.data(), in_.data() + in_begin_, have);
    in_begin_ = 0;
    in_end_ = have;
  }
  if (in_end_ == in_.size()) {
    // Full: grow toward `need`, doubling from 64 KiB at most, so that a client announcing 100 MB and sending
    // 1 KiB costs 64 KiB, not 100 MB (a breaker held 800 MiB with 8 such connections).
    const size_t grown = std::max(in_.size() * 2, size_t{64} * 1024);
    in_.resize(std::max(std::min(need, grown), std::max(in_.size(), initial_buffer_bytes)));
  }
}

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
      // Read until the buffer holds a size prefix and the whole frame it announces.
      bool known = false;  // the size prefix is buffered and checked
      size_t total = 0;
      bool end = false;
      for (;;) {
        const size_t have = in_end_ - in_begin_;
        if (!known && have >= 4) {
          const uint8_t* b = in_.data() + in_begin_;
          const int32_t size = static_cast<int32_t>((uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) |
                                                    (uint32_t(b[2]) << 8) | uint32_t(b[3]));
          if (size < 0 || size > max_request_bytes_) {
            log::warn("closing connection from {}: request frame of {} bytes is outside [0, "
                      "socket.request.max.bytes={}]", peer, size, max_request_bytes_);
            end = true;
            break;
          }
          known = true;
          total = static_cast<size_t>(size);
        }
        const size_t need = known ? 4 + total : 4;
        if (have >= need) break;
        make_room(need);
        auto read = stream_->read_some(std::span<uint8_t>(in_.data() + in_end_, in_.size() - in_end_));
        auto [ec, n] = co_await std::move(read);
        in_end_ += n;
        if (ec && in_end_ - in_begin_ < need) {
          // Before a whole size prefix: the client closed or reset, a normal end. Inside a frame: logged.
          if (known) {
            log::warn("closing connection from {}: frame of {} bytes ended after {} bytes ({})", peer, total,
                      in_end_ - in_begin_ - 4, ec.message());
          }
          end = true;
          break;
        }
      }
      if (end) break;
      const std::span<const uint8_t> frame(in_.data() + in_begin_ + 4, total);

      auto dispatch = dispatcher_.dispatch(session_, frame, stream_->executor());
      auto outcome = co_await std::move(dispatch);
      in_begin_ += 4 + total;  // handled: the next frame (if any arrived) starts here
      if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
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
