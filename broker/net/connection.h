#pragma once
#include <boost/asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "broker/request_context.h"
#include "protocol/writer.h"

namespace sluice::broker::net {

namespace asio = boost::asio;

/// One client connection: reads size-prefixed frames, handles one request at a time in order (Kafka
/// mutes the socket while a request is in flight), writes responses, including file regions with
/// sendfile(2). Strand: the connection's own (every member is touched only by its coroutine).
/// A malformed frame (size outside [0, socket.request.max.bytes], truncated header or body, unknown API
/// key, unsupported version) is logged with API, version, field and byte offset, and closes this
/// connection only.
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(asio::ip::tcp::socket socket, handler_context& context);
  asio::awaitable<void> run();
  void close();
  /// The connection's strand (the socket's executor): where run() must be spawned.
  asio::any_io_executor run_executor() { return socket_.get_executor(); }

 private:
  asio::awaitable<void> write_frame(const protocol::encoded_frame& frame);
  asio::awaitable<void> send_file(const sluice::file_region& region);

  asio::ip::tcp::socket socket_;
  handler_context& context_;
  std::string peer_;
  std::vector<uint8_t> frame_;  // reused between requests; record views point into it while handled
};

}  // namespace sluice::broker::net
