// Idle connections of sluice_load (--idle-connections): connections that negotiate and then hold still while the
// busy ones run, as the many quiet clients of a real cluster do (issue #23: 10,000 idle connections + 10 busy).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "bench/load/kafka_connection.h"
#include "bench/load/load_run.h"
#include "protocol/messages/api_versions.h"

namespace sluice::bench {
namespace asio = boost::asio;

namespace {

asio::awaitable<void> run_idle(std::shared_ptr<kafka_connection> conn, load_thread& thread, shared_run& run) {
  try {
    // GCC 12: each awaitable is built before its co_await.
    auto connecting = conn->connect();
    co_await std::move(connecting);
    auto negotiating = conn->negotiate();
    co_await std::move(negotiating);
  } catch (const std::exception& e) {
    run.idle_failed.fetch_add(1);
    run.note_error(std::string("idle: ") + e.what());
    co_return;
  }
  run.idle_ready.fetch_add(1);
  auto starting = thread.wait_start();
  co_await std::move(starting);
  // Hold the connection, without a request, until the busy connections' deadline.
  asio::steady_timer timer(thread.io, run.times.deadline);
  boost::system::error_code ec;
  auto waiting = timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_await std::move(waiting);
  // Still served? One ApiVersions round trip proves the broker kept the connection and still answers on it.
  try {
    protocol::api_versions_request req;
    req.client_software_name = "sluice-load";
    req.client_software_version = "1";
    auto calling = conn->call<protocol::api_versions_response>(req, 3);
    auto resp = co_await std::move(calling);
    if (resp.error_code != protocol::error_code::none) conn->fail("ApiVersions after idling: error");
    run.idle_alive.fetch_add(1);
  } catch (const std::exception& e) {
    run.note_error(std::string("idle, after the run: ") + e.what());
  }
  conn->close();
}

}  // namespace

void spawn_idle_connection(load_thread& thread, shared_run& run, broker_address broker) {
  auto conn = std::make_shared<kafka_connection>(thread.io, std::move(broker), run.opts.client_id);
  asio::co_spawn(thread.io, run_idle(conn, thread, run), asio::detached);
}

}  // namespace sluice::bench
