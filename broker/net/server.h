#pragma once
#include <boost/asio.hpp>
#include <memory>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "broker/request_context.h"

namespace sluice::broker::net {

namespace asio = boost::asio;

/// Accepts client connections on the configured listeners. A listener host that names several
/// addresses (localhost: 127.0.0.1 and ::1) is bound on each; an empty host binds every interface.
/// Strand: accept loops run on the io_context; each connection gets its own strand.
class server {
 public:
  server(asio::io_context& io, handler_context& context);

  /// Binds and listens on every endpoint now, so the ports accept as soon as this returns. Errors name
  /// the address that could not be bound.
  result<void> listen(const std::vector<endpoint>& endpoints);
  /// Starts the accept loops.
  void start();
  /// Stops accepting (existing connections end with the io_context).
  void stop();
  /// The bound addresses (with the real port when 0 was asked for).
  std::vector<asio::ip::tcp::endpoint> local_endpoints() const;

 private:
  asio::awaitable<void> accept_loop(asio::ip::tcp::acceptor& acceptor);

  asio::io_context& io_;
  handler_context& context_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
};

}  // namespace sluice::broker::net
