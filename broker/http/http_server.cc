#include "broker/http/http_server.h"

#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <chrono>

#include "base/logging.h"

namespace sluice::broker::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

http_server::http_server(asio::io_context& io, server_limits limits, router route)
    : io_(io), limits_(limits), route_(std::move(route)) {}

result<void> http_server::listen(const std::vector<http_endpoint>& endpoints,
                                 std::shared_ptr<boost::asio::ssl::context> tls) {
  if (tls) tls_ = std::move(tls);
  for (const auto& ep : endpoints) {
    const std::string where = ep.host + ":" + std::to_string(ep.port);
    if (ep.tls && !tls_) return error{base_errc::failed, "http.listeners: https://" + where + " needs a TLS context"};
    boost::system::error_code ec;
    auto address = asio::ip::make_address(ep.host.empty() ? "0.0.0.0" : ep.host, ec);
    if (ec) {
      tcp::resolver resolver(io_);
      auto found = resolver.resolve(ep.host, std::to_string(ep.port), ec);
      if (ec || found.empty()) return error{base_errc::failed, "http.listeners: cannot resolve " + where + ": " + ec.message()};
      address = found.begin()->endpoint().address();
    }
    auto acceptor = std::make_shared<tcp::acceptor>(io_);
    tcp::endpoint local(address, ep.port);
    acceptor->open(local.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(local, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return error{base_errc::failed, "http.listeners: cannot listen on http://" + where + ": " + ec.message()};
    acceptors_.push_back({std::move(acceptor), ep.tls});
  }
  return {};
}

void http_server::start() {
  for (auto& a : acceptors_) asio::co_spawn(io_, accept_loop(a.acceptor, a.tls), asio::detached);
}

void http_server::stop() {
  state_->stopped.store(true);
  for (auto& a : acceptors_) {
    asio::post(io_, [acceptor = a.acceptor] {
      boost::system::error_code ec;
      acceptor->close(ec);
    });
  }
}

std::vector<tcp::endpoint> http_server::local_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    auto ep = a.acceptor->local_endpoint(ec);
    if (!ec) out.push_back(ep);
  }
  return out;
}

std::vector<std::string> http_server::urls() const {
  std::vector<std::string> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    auto ep = a.acceptor->local_endpoint(ec);
    if (ec) continue;
    const auto host = ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
    out.push_back((a.tls ? "https://" : "http://") + host + ":" + std::to_string(ep.port()));
  }
  return out;
}

asio::awaitable<void> http_server::accept_loop(std::shared_ptr<tcp::acceptor> acceptor, bool tls) {
  while (!state_->stopped.load()) {
    // Each connection runs on its own strand (the io_context has several threads).
    auto strand = asio::make_strand(io_);
    auto accept_op = acceptor->async_accept(strand, asio::as_tuple(asio::use_awaitable));
    auto [ec, socket] = co_await std::move(accept_op);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
      log::warn("http: accept failed: {}", ec.message());
      continue;
    }
    asio::co_spawn(strand, serve(std::move(socket), tls), asio::detached);
  }
}

namespace {

beast_http::response<beast_http::string_body> to_response(const reply& r, unsigned version, bool keep_alive) {
  beast_http::response<beast_http::string_body> res{static_cast<beast_http::status>(r.status), version};
  res.set(beast_http::field::server, "sluice");
  res.set(beast_http::field::content_type, r.content_type);
  if (!r.allow.empty()) res.set(beast_http::field::allow, r.allow);
  for (const auto& [name, value] : r.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = r.body;
  res.prepare_payload();
  return res;
}

std::string error_json(std::string_view code, std::string_view message) {
  return boost::json::serialize(boost::json::object{{"error", code}, {"message", message}});
}

}  // namespace

namespace {

template <typename Stream>
auto& lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

/// The request/response loop of one connection, over a plain or a TLS stream.
template <typename Stream>
asio::awaitable<void> exchange(Stream& stream, const server_limits& limits, const router& route, const std::atomic<bool>& stopped,
                               const peer_info& peer, bool over_limit) {
  const auto timeout = std::chrono::milliseconds(limits.request_timeout_ms);
  beast::flat_buffer buffer;
  if (over_limit) {
    auto res = to_response({503, "application/json", error_json("TOO_MANY_CONNECTIONS", "http.max.connections reached")}, 11, false);
    lowest(stream).expires_after(timeout);
    auto write_op = beast_http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    co_await std::move(write_op);
    co_return;
  }
  while (!stopped.load()) {
    beast_http::request_parser<beast_http::string_body> parser;
    parser.body_limit(static_cast<uint64_t>(limits.max_request_bytes));
    parser.header_limit(static_cast<uint32_t>(std::min<int32_t>(limits.max_request_bytes, 65536)));
    lowest(stream).expires_after(timeout);
    auto read_op = beast_http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    auto [ec, n] = co_await std::move(read_op);
    if (ec == beast_http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::connection_reset ||
        ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)
      co_return;
    if (ec) {
      const bool too_big = ec == beast_http::error::body_limit || ec == beast_http::error::header_limit;
      auto res = to_response({too_big ? 413u : 400u, "application/json",
                              error_json(too_big ? "REQUEST_TOO_LARGE" : "BAD_REQUEST", ec.message())},
                             11, false);
      auto write_op = beast_http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      co_await std::move(write_op);
      co_return;
    }
    const auto& req = parser.get();
    reply r;
    std::string failure;
    try {
      auto routed = route(req, peer);
      r = co_await std::move(routed);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) r = {500, "application/json", error_json("UNKNOWN_SERVER_ERROR", failure)};
    const bool keep_alive = req.keep_alive();
    auto res = to_response(r, req.version(), keep_alive);
    if (req.method() == beast_http::verb::head) res.body().clear();
    lowest(stream).expires_after(timeout);
    auto write_op = beast_http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    auto [wec, wn] = co_await std::move(write_op);
    if (wec || !keep_alive) co_return;
  }
}

}  // namespace

asio::awaitable<void> http_server::serve(tcp::socket socket, bool tls) {
  auto st = state_;
  const int active = st->active.fetch_add(1) + 1;
  struct leave {
    std::shared_ptr<state> s;
    ~leave() { s->active.fetch_sub(1); }
  } guard{st};
  peer_info peer;
  {
    boost::system::error_code pec;
    const auto remote = socket.remote_endpoint(pec);
    if (!pec) {
      peer.host = remote.address().to_string();
      peer.address = peer.host + ":" + std::to_string(remote.port());
    }
  }
  const bool over_limit = active > limits_.max_connections;
  const auto timeout = std::chrono::milliseconds(limits_.request_timeout_ms);
  if (!tls) {
    beast::tcp_stream stream(std::move(socket));
    auto op = exchange(stream, limits_, route_, st->stopped, peer, over_limit);
    co_await std::move(op);
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *tls_);
  stream.next_layer().expires_after(timeout);
  auto handshake = stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
  auto [hec] = co_await std::move(handshake);
  if (hec) {
    log::debug("http: TLS handshake with {} failed: {}", peer.address, hec.message());
    co_return;
  }
  auto op = exchange(stream, limits_, route_, st->stopped, peer, over_limit);
  co_await std::move(op);
  stream.next_layer().expires_after(std::chrono::milliseconds(std::min<int32_t>(limits_.request_timeout_ms, 1000)));
  auto shutdown = stream.async_shutdown(asio::as_tuple(asio::use_awaitable));
  co_await std::move(shutdown);
}

}  // namespace sluice::broker::http
