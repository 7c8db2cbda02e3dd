// sluice health: one HTTP GET of a broker's readiness probe (/readyz of broker/http), for container health checks
// where no curl exists (the distroless image's HEALTHCHECK).
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <optional>
#include <ostream>

#include "cli/commands.h"
#include "cli/failure.h"

namespace sluice::cli {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct url_parts {
  std::string host, port, target;
};

/// http://host[:port][/path]; https is refused (the probe is meant for the loopback listener).
url_parts parse_url(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (!std::string_view(url).starts_with(scheme)) usage_error("--url must start with http:// (got '" + url + "')");
  std::string rest = url.substr(scheme.size());
  url_parts u;
  const auto slash = rest.find('/');
  u.target = slash == std::string::npos ? "/readyz" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  if (!authority.empty() && authority.front() == '[') {  // [::1]:9644
    const auto close = authority.find(']');
    if (close == std::string::npos) usage_error("--url: unclosed [ in '" + url + "'");
    u.host = authority.substr(1, close - 1);
    u.port = close + 1 < authority.size() && authority[close + 1] == ':' ? authority.substr(close + 2) : "80";
  } else {
    const auto colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    u.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  }
  if (u.host.empty() || u.port.empty()) usage_error("--url: no host or port in '" + url + "'");
  return u;
}

}  // namespace

int health(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()("url", po::value<std::string>()->default_value("http://127.0.0.1:9644/readyz"),
                        "the probe to ask (broker/http: /readyz is 200 once the broker serves, /healthz while it runs)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "health", "health [--url http://H:P/readyz]",
                  "Asks a broker's HTTP probe: exit 0 when it answers 200, 1 for another status (503 while starting), "
                  "3 when it cannot be reached within --timeout-ms.",
                  options, {}, {}, vm))
    return 0;
  const auto u = parse_url(vm["url"].as<std::string>());
  asio::io_context io;
  std::optional<unsigned> status;
  std::string body, problem = "timed out";
  auto probe = [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::ip::tcp::resolver resolver(ex);
    auto resolve_op = resolver.async_resolve(u.host, u.port, asio::as_tuple(asio::use_awaitable));
    auto [rec, found] = co_await std::move(resolve_op);
    if (rec) {
      problem = "cannot resolve " + u.host + ": " + rec.message();
      co_return;
    }
    beast::tcp_stream stream(ex);
    auto connect_op = stream.async_connect(found, asio::as_tuple(asio::use_awaitable));
    auto [cec, ep] = co_await std::move(connect_op);
    if (cec) {
      problem = "cannot connect to " + u.host + ":" + u.port + ": " + cec.message();
      co_return;
    }
    http::request<http::empty_body> req{http::verb::get, u.target, 11};
    req.set(http::field::host, u.host);
    req.set(http::field::user_agent, "sluice-health");
    req.keep_alive(false);
    auto write_op = http::async_write(stream, req, asio::as_tuple(asio::use_awaitable));
    auto [wec, wn] = co_await std::move(write_op);
    if (wec) {
      problem = "sending the request: " + wec.message();
      co_return;
    }
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    auto read_op = http::async_read(stream, buffer, res, asio::as_tuple(asio::use_awaitable));
    auto [rdec, rn] = co_await std::move(read_op);
    if (rdec) {
      problem = "reading the answer: " + rdec.message();
      co_return;
    }
    status = res.result_int();
    body = res.body();
  };
  asio::co_spawn(io, probe(), asio::detached);
  io.run_for(ctx.options().timeout);
  if (!status) throw failure(exit_code::cannot_connect, "health: " + vm["url"].as<std::string>() + ": " + problem);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  if (ctx.json()) {
    boost::json::object o{{"url", vm["url"].as<std::string>()}, {"status", *status}, {"body", body}};
    print_json(ctx.out, o);
  } else {
    ctx.out << *status << " " << body << "\n";
  }
  return *status == 200 ? 0 : static_cast<int>(exit_code::kafka_error);
}

}  // namespace sluice::cli
