#pragma once
#include <boost/asio.hpp>
#include <memory>
#include <vector>

#include "broker/dispatcher.h"
#include "broker/net/transport.h"
#include "broker/session.h"

namespace sluice::broker::net {

namespace asio = boost::asio;

/// One client connection: reads size-prefixed frames from its transport, hands each to the dispatcher, one
/// request at a time in order (Kafka mutes the socket while a request is in flight), writes the responses.
/// Strand: the transport's executor (every member is touched only by its coroutine).
/// A frame size outside [0, socket.request.max.bytes] or a frame cut short closes this connection only (logged);
/// so does anything the dispatcher refuses.
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(std::unique_ptr<transport> stream, session s, dispatcher& d, int32_t max_request_bytes);
  asio::awaitable<void> run();
  void close();
  /// The connection's strand: where run() must be spawned.
  asio::any_io_executor run_executor() { return stream_->executor(); }

 private:
  std::unique_ptr<transport> stream_;
  session session_;
  dispatcher& dispatcher_;
  const int32_t max_request_bytes_;
  // Bytes read from the client and not handled yet: [in_begin_, in_end_) of in_. One read takes whatever the socket
  // holds up to the buffer's end, so a frame usually comes with its size prefix in one recv(2), and pipelined
  // requests several at a time. A request is handled in place (record views point into in_ while it runs); no
  // read happens meanwhile. The buffer starts small (an idle connection's few requests) and grows, when full,
  // with the bytes that arrive rather than with the size a frame announces.
  std::vector<uint8_t> in_;
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  static constexpr size_t initial_buffer_bytes = 128;
  /// Before a read toward `need` buffered bytes: moves the unread bytes to the front when `need` does not fit after
  /// them, and grows a full buffer. (Not a coroutine: an idle connection waits in run() with no frame besides.)
  void make_room(size_t need);
};

}  // namespace sluice::broker::net
