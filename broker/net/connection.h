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
  std::vector<uint8_t> frame_;  // reused between requests; record views point into it while handled
};

}  // namespace sluice::broker::net
