#pragma once
#include <boost/asio.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "base/clock.h"
#include "broker/dispatcher.h"
#include "broker/quota_manager.h"
#include "broker/security/listener_security.h"

namespace sluice::broker::net {

namespace asio = boost::asio;

/// Accepts client connections on the configured listeners. A listener host that names several
/// addresses (localhost: 127.0.0.1 and ::1) is bound on each; an empty host binds every interface.
/// Strand: accept loops run on the io_context; each connection gets its own strand.
class server {
 public:
  /// Each accepted connection gets a plain transport, a session naming its listener and security protocol,
  /// and `d` for its requests.
  server(asio::io_context& io, const broker_config& config, dispatcher& d);

  /// Builds each listener's security (TLS context, SASL settings: broker/security/listener_security.h), then
  /// binds and listens on every endpoint, so the ports accept as soon as this returns. Errors name the listener
  /// whose security settings are wrong or the address that could not be bound.
  result<void> listen(const std::vector<endpoint>& endpoints);
  /// Connection creation quotas (KIP-612): the broker's and listeners' rates and the addresses'
  /// connection_creation_rate from `quotas`, timed on `clock`. Without it no rate is limited. Before start().
  void set_quotas(quota_manager* quotas, const sluice::clock* clock) {
    quotas_ = quotas;
    clock_ = clock;
  }
  /// Starts the accept loops.
  void start();
  /// Stops accepting (existing connections end with the io_context).
  void stop();
  /// The bound addresses (with the real port when 0 was asked for).
  std::vector<asio::ip::tcp::endpoint> local_endpoints() const;
  /// The bound port of `listener` (its first address); 0 when it has none.
  uint16_t local_port(const std::string& listener) const;

 private:
  asio::awaitable<void> accept_loop(asio::ip::tcp::acceptor& acceptor, std::string listener_name,
                                    std::shared_ptr<const security::listener_security> security);

  /// Open connections, in total and per client address (Kafka's max.connections and
  /// max.connections.per.ip). Shared with each connection's completion handler, which releases its count.
  struct connection_limits {
    std::mutex mutex;
    int64_t max_total = INT32_MAX;
    int64_t max_per_ip = INT32_MAX;
    int64_t open = 0;
    std::map<asio::ip::address, int64_t> per_ip;
    bool full() {
      std::lock_guard lock(mutex);
      return open >= max_total;
    }
    /// Counts a new connection from `a`; false (nothing counted) when `a` already has max_per_ip.
    bool admit(const asio::ip::address& a) {
      std::lock_guard lock(mutex);
      auto& n = per_ip[a];
      if (n >= max_per_ip) {
        if (n == 0) per_ip.erase(a);
        return false;
      }
      ++n;
      ++open;
      return true;
    }
    void release(const asio::ip::address& a) {
      std::lock_guard lock(mutex);
      --open;
      if (auto it = per_ip.find(a); it != per_ip.end() && --it->second <= 0) per_ip.erase(it);
    }
  };

  asio::io_context& io_;
  quota_manager* quotas_ = nullptr;
  const sluice::clock* clock_ = nullptr;
  const broker_config& config_;
  dispatcher& dispatcher_;
  struct listening {
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
    std::string listener_name;
    std::shared_ptr<const security::listener_security> security;
  };
  std::vector<listening> acceptors_;
  std::shared_ptr<connection_limits> limits_ = std::make_shared<connection_limits>();
};

}  // namespace sluice::broker::net
