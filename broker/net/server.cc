#include "broker/net/server.h"

#include "base/logging.h"
#include "base/metrics.h"
#include "broker/net/connection.h"

namespace sluice::broker::net {

using tcp = asio::ip::tcp;

server::server(asio::io_context& io, const broker_config& config, dispatcher& d)
    : io_(io), config_(config), dispatcher_(d) {
  limits_->max_total = config_long(config_, "max.connections", INT32_MAX);
  limits_->max_per_ip = config_long(config_, "max.connections.per.ip", INT32_MAX);
}

result<void> server::listen(const std::vector<endpoint>& endpoints) {
  for (const auto& ep : endpoints) {
    auto security = security::make_listener_security(config_, ep.listener_name);
    if (!security) return security.err();
    std::vector<tcp::endpoint> addresses;
    if (ep.host.empty()) {
      addresses.emplace_back(asio::ip::address_v6::any(), ep.port);  // dual-stack: every interface
    } else {
      boost::system::error_code ec;
      auto address = asio::ip::make_address(ep.host, ec);
      if (!ec) {
        addresses.emplace_back(address, ep.port);
      } else if (ep.host == "localhost") {
        // Both loopbacks whatever /etc/hosts says: clients resolve localhost to ::1 first (librdkafka)
        // or to 127.0.0.1 only, and either must reach the broker.
        addresses.emplace_back(asio::ip::address_v4::loopback(), ep.port);
        addresses.emplace_back(asio::ip::address_v6::loopback(), ep.port);
      } else {
        tcp::resolver resolver(io_);
        auto results = resolver.resolve(ep.host, std::to_string(ep.port), tcp::resolver::passive, ec);
        if (ec) return error{base_errc::failed, "cannot resolve listener host " + ep.host + ": " + ec.message()};
        for (const auto& r : results) {
          auto e = r.endpoint();
          if (std::find(addresses.begin(), addresses.end(), e) == addresses.end()) addresses.push_back(e);
        }
      }
    }
    for (const auto& address : addresses) {
      auto acceptor = std::make_unique<tcp::acceptor>(io_);
      boost::system::error_code ec;
      acceptor->open(address.protocol(), ec);
      if (!ec) acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
      if (!ec && address.address().is_v6())
        acceptor->set_option(asio::ip::v6_only(!address.address().is_unspecified()), ec);
      if (!ec) acceptor->bind(address, ec);
      if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        // A host that resolves to ::1 on a machine without IPv6 should not stop the broker when another
        // address of the same listener was bound.
        if (address.address().is_v6() && addresses.size() > 1 && (ec == boost::system::errc::address_not_available || ec == boost::system::errc::address_family_not_supported)) {
          log::warn("listener {}: cannot bind [{}]:{}: {}", ep.host, address.address().to_string(), address.port(),
                    ec.message());
          continue;
        }
        return error{base_errc::failed, "cannot listen on " + address.address().to_string() + ":" + std::to_string(address.port()) +
                            ": " + ec.message()};
      }
      acceptors_.push_back({std::move(acceptor), ep.listener_name, *security});
    }
  }
  if (acceptors_.empty()) return error{base_errc::failed, "no listener could be bound"};
  return {};
}

void server::start() {
  for (auto& a : acceptors_) asio::co_spawn(io_, accept_loop(*a.acceptor, a.listener_name, a.security), asio::detached);
}

void server::stop() {
  for (auto& a : acceptors_) {
    boost::system::error_code ec;
    a.acceptor->close(ec);
  }
}

std::vector<tcp::endpoint> server::local_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    auto ep = a.acceptor->local_endpoint(ec);
    if (!ec) out.push_back(ep);
  }
  return out;
}

uint16_t server::local_port(const std::string& listener) const {
  for (const auto& a : acceptors_) {
    if (a.listener_name != listener) continue;
    boost::system::error_code ec;
    auto ep = a.acceptor->local_endpoint(ec);
    if (!ec) return ep.port();
  }
  return 0;
}

asio::awaitable<void> server::accept_loop(tcp::acceptor& acceptor, std::string listener_name,
                                          std::shared_ptr<const security::listener_security> security) {
  const std::string security_protocol = security->security_protocol;
  // Kafka's socket-server-metrics per listener (connection-count, connection-creation-total), JMX-exporter named.
  auto* open_connections = &metrics::process_registry().gauge(
      "kafka_server_socket_server_metrics_connection_count", "Client connections open, per listener", {{"listener", listener_name}});
  auto& created = metrics::process_registry().counter("kafka_server_socket_server_metrics_connection_creation_total",
                                                       "Client connections accepted, per listener", {{"listener", listener_name}});
  asio::steady_timer backoff(io_);
  int64_t failures = 0;
  bool waiting_logged = false;
  int64_t accept_delay_ms = 0;
  for (;;) {
    // max.connections reached: stop accepting (new connections wait in the listen backlog) until one closes,
    // as Kafka's acceptor does.
    if (limits_->full()) {
      if (!waiting_logged) log::info("max.connections={} reached: accepting again when one closes", limits_->max_total);
      waiting_logged = true;
      backoff.expires_after(std::chrono::milliseconds(20));
      auto wait = backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      co_await std::move(wait);
      if (!acceptor.is_open()) co_return;
      continue;
    }
    waiting_logged = false;
    if (accept_delay_ms > 0) {  // max.connection.creation.rate (KIP-612): the acceptor waits
      backoff.expires_after(std::chrono::milliseconds(accept_delay_ms));
      accept_delay_ms = 0;
      auto wait = backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      co_await std::move(wait);
      if (!acceptor.is_open()) co_return;
    }
    auto strand = asio::make_strand(io_);  // outside the co_await expression (GCC 12 temporaries)
    auto [ec, socket] = co_await acceptor.async_accept(strand, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // Out of file descriptors (EMFILE/ENFILE) the pending connection stays queued and accept fails again
      // at once: a tight retry loop burned a core and wrote millions of log lines. Back off 100 ms per
      // failure and log the first and then every 100th.
      if (failures++ % 100 == 0) log::warn("accept failed: {} ({} times so far; retrying every 100 ms)", ec.message(), failures);
      backoff.expires_after(std::chrono::milliseconds(100));
      auto wait = backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      co_await std::move(wait);
      continue;
    }
    if (failures > 0) {
      log::info("accepting connections again after {} failed accepts", failures);
      failures = 0;
    }
    boost::system::error_code rec;
    const auto peer = socket.remote_endpoint(rec).address();
    if (!limits_->admit(peer)) {
      // Kafka closes it at once (TooManyConnectionsException, logged at info).
      log::info("closing connection from {}: max.connections.per.ip={} reached", peer.to_string(), limits_->max_per_ip);
      socket.close(rec);
      continue;
    }
    if (quotas_ != nullptr) {
      const int64_t now = clock_->monotonic_ms();
      // KIP-612: over an address's connection_creation_rate the connection is closed unread after the throttle
      // time, as Kafka's ConnectionThrottledException; over the listener's or broker's rate the next accept waits.
      if (const int64_t throttle = quotas_->record_ip_connection(peer.to_string(), now); throttle > 0) {
        log::info("closing connection from {} in {} ms: its connection_creation_rate quota is exceeded", peer.to_string(),
                  throttle);
        auto held = std::make_shared<tcp::socket>(std::move(socket));
        auto timer = std::make_shared<asio::steady_timer>(held->get_executor(), std::chrono::milliseconds(throttle));
        timer->async_wait([held, timer, limits = limits_, peer](const boost::system::error_code&) {
          boost::system::error_code ignored;
          held->close(ignored);
          limits->release(peer);
        });
        continue;
      }
      if (const int64_t wait_ms = quotas_->record_accept(listener_name, now); wait_ms > 0) {
        log::debug("listener {}: connection creation rate over its limit, next accept in {} ms", listener_name, wait_ms);
        accept_delay_ms = wait_ms;
      }
    }
    session s;
    s.listener_name = listener_name;
    s.security_protocol = security_protocol;
    s.security = security;
    if (security->uses_sasl()) s.sasl = sasl_state::handshake_expected;
    std::unique_ptr<transport> stream;
    if (security->uses_tls()) stream = std::make_unique<tls_transport>(std::move(socket), security->tls);
    else stream = std::make_unique<plain_transport>(std::move(socket));
    auto conn = std::make_shared<connection>(std::move(stream), std::move(s), dispatcher_, config_.socket_request_max_bytes);
    auto executor = conn->run_executor();
    open_connections->add();
    created.add();
    asio::co_spawn(executor, conn->run(), [limits = limits_, peer, open_connections](std::exception_ptr) {
      open_connections->sub();
      limits->release(peer);
    });
  }
}

}  // namespace sluice::broker::net
