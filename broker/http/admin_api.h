#pragma once
// The routes of the broker's HTTP side (issue #18; broker/http/README.md and openapi.yaml):
//   GET  /healthz                 200 while the process serves HTTP
//   GET  /readyz                  200 once listening, logs recovered and (cluster) registered; else 503
//   GET  /metrics                 Prometheus text format 0.0.4 (the process registry plus broker gauges)
//   GET  /v1/brokers              the live brokers and their listeners
//   GET  /v1/cluster              cluster id, controller, this broker's id
//   GET  /v1/topics               topic names with partition count and replication factor
//   GET  /v1/faults               fault rules in force (sluice.test.faults.enable=true only, else 403)
//   POST /v1/faults               adds one; 201 {"id": N, ...}; 400 with the reason for a bad body
//   DELETE /v1/faults             removes every rule; DELETE /v1/faults/{id} one (404 if none)
// Errors are JSON {"error": "<Kafka error name or HTTP reason>", "message": "..."}.
#include <atomic>
#include <memory>

#include "broker/broker_services.h"
#include "broker/http/http_server.h"

namespace sluice::broker::http {

class admin_api {
 public:
  explicit admin_api(broker_services& services);
  ~admin_api();

  /// The router for http_server.
  boost::asio::awaitable<reply> handle(const request& req, const peer_info& peer);

  /// Set once the broker has recovered its logs, is listening and (cluster mode) registered.
  void set_ready(bool ready) { ready_.store(ready, std::memory_order_release); }

 private:
  boost::asio::awaitable<reply> route(const request& req, const peer_info& peer);
  boost::asio::awaitable<reply> metrics(const peer_info& peer);
  /// GET / and /console/<file>: the web console (console_assets.h), with an ETag (304 on If-None-Match) and a CSP.
  reply console(const request& req, std::string_view path);
  reply faults(const request& req, std::string_view rest);

  broker_services& services_;
  std::atomic<bool> ready_{false};
  int collector_ = 0;
};

}  // namespace sluice::broker::http
