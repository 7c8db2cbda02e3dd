#pragma once
// The broker's HTTP side (issue #18): a small Boost.Beast server on the broker's own io_context, for /metrics,
// health probes, the JSON admin API and the test controls (broker/http/README.md).
//
// HTTP/1.1 with keep-alive; each connection reads at most `max_request_bytes` of headers and body per request
// (413 beyond), has `request_timeout_ms` for each request to arrive and its answer to leave (the connection is
// closed after it), and at most `max_connections` are served at once (the next gets 503 and is closed).
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "broker/config.h"

namespace sluice::broker::http {

namespace beast_http = boost::beast::http;
using request = beast_http::request<beast_http::string_body>;

/// What a route answers: status, media type, body.
struct reply {
  reply() = default;
  reply(unsigned s, std::string type, std::string text) : status(s), content_type(std::move(type)), body(std::move(text)) {}

  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  // the Allow header of a 405 (RFC 9110 §15.5.6): "GET, POST"
  std::vector<std::pair<std::string, std::string>> headers;  // more header fields, as given (the console's caching, CSP)
};

/// Who sent a request: the client's IP address as text ("127.0.0.1", "::1").
struct peer_info {
  std::string host;
  std::string address;  // "host:port"
};

/// Maps a request to its reply. Runs as a coroutine on the connection's strand; may wait (the admin API runs
/// Kafka request handlers) but must not block a thread.
using router = std::function<boost::asio::awaitable<reply>(const request&, const peer_info&)>;

struct server_limits {
  int32_t max_connections = 64;
  int32_t max_request_bytes = 1 << 20;
  int32_t request_timeout_ms = 30000;
};

class http_server {
 public:
  http_server(boost::asio::io_context& io, server_limits limits, router route);

  /// Binds every endpoint (port 0: any free port). Errors name the address. `https://` endpoints serve TLS with
  /// `tls` (required when there is one).
  result<void> listen(const std::vector<http_endpoint>& endpoints, std::shared_ptr<boost::asio::ssl::context> tls = {});
  void start();
  /// Stops accepting; open connections end at their next read. Thread-safe.
  void stop();
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;
  /// "http://127.0.0.1:9644" / "https://..." per bound endpoint, for the start-up log.
  std::vector<std::string> urls() const;
  int active_connections() const { return state_->active.load(std::memory_order_relaxed); }

 private:
  struct state {
    std::atomic<int> active{0};
    std::atomic<bool> stopped{false};
  };
  boost::asio::awaitable<void> accept_loop(std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor, bool tls);
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket, bool tls);

  boost::asio::io_context& io_;
  server_limits limits_;
  router route_;
  std::shared_ptr<state> state_ = std::make_shared<state>();
  struct listening {
    std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor;
    bool tls = false;
  };
  std::vector<listening> acceptors_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace sluice::broker::http
