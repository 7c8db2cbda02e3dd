#pragma once
// Internals of the admin API (broker/http/README.md): the JSON answers, the HTTP status of each Kafka error, and
// `kafka_caller`, which runs the broker's own Kafka request handlers for an HTTP request, so that an admin call
// means exactly what the same Kafka request means (validation, ACLs, cluster mode, errors).
#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "broker/broker_services.h"
#include "broker/handlers/cluster_wait.h"
#include "broker/http/http_server.h"
#include "broker/request_context.h"
#include "broker/session.h"
#include "protocol/error_code.h"

namespace sluice::broker::http {

namespace json = boost::json;

/// `s` with every byte sequence that is not UTF-8 replaced by U+FFFD (names that came in over the Kafka protocol
/// may hold any bytes; JSON and Prometheus' text format must be UTF-8).
std::string sanitize_utf8(std::string s);

inline reply json_reply(unsigned status, const json::value& v) {
  return {status, "application/json", sanitize_utf8(json::serialize(v)) + "\n"};
}

inline reply error_reply(unsigned status, std::string_view code, std::string_view message) {
  return json_reply(status, json::object{{"error", code}, {"message", message}});
}

/// 405 with the Allow header and the allowed methods in the message.
inline reply method_not_allowed(std::string_view allowed) {
  reply r = error_reply(405, "METHOD_NOT_ALLOWED", "allowed: " + std::string(allowed));
  r.allow = std::string(allowed);
  return r;
}

/// The HTTP status for a Kafka error: 404 for what does not exist, 409 for a conflict with the current state
/// (exists already, group not empty), 403 for authorization, 421 when another broker leads or coordinates, 503
/// while something is not available yet, 504 for a timeout, 500 for a storage or unknown server error, else 400.
unsigned http_status_of(protocol::error_code e);

/// `{"error": "<Kafka error name>", "error_code": n, "message": m}` with http_status_of(e). An empty message
/// is replaced by the error's name.
reply kafka_error_reply(protocol::error_code e, std::string_view message = {});

/// Runs Kafka request handlers (broker/handlers/handlers.h) for one HTTP request. The session is that of an
/// unauthenticated client from the HTTP peer's address (principal User:ANONYMOUS, on the inter-broker listener,
/// so answers name brokers by its endpoints; client id "sluice-http"): with an authorizer, the admin API can do what ACLs allow such a client. Injected faults do
/// not apply (they sit in front of the Kafka listeners). Handlers see the request at the version given.
class kafka_caller {
 public:
  kafka_caller(broker_services& svc, const peer_info& peer, boost::asio::any_io_executor executor)
      : svc_(svc), executor_(std::move(executor)) {
    // Answers name brokers as the inter-broker listener advertises them (else the first advertised listener).
    session_.listener_name = svc.config.advertised_listeners.empty() ? svc.config.inter_broker_listener_name
                                                                     : svc.config.advertised_listeners.front().listener_name;
    for (const auto& e : svc.config.advertised_listeners)
      if (e.listener_name == svc.config.inter_broker_listener_name) session_.listener_name = e.listener_name;
    session_.peer = peer.address;
    session_.client_host = peer.host;
    session_.client_id = "sluice-http";
  }

  broker_services& services() { return svc_; }

  template <typename Resp, typename Req>
  boost::asio::awaitable<Resp> call(boost::asio::awaitable<Resp> (*handler)(broker_services&, request_context&, Req&), Req& request,
                                    int16_t version) {
    request_context rc{.header = protocol::request_header{static_cast<int16_t>(Req::key), version, ++correlation_id_,
                                                          session_.client_id},
                       .session = session_,
                       .executor = executor_};
    rc.start_us = svc_.clock.monotonic_us();
    rc.request_quota_exempt = true;
    auto op = handler(svc_, rc, request);
    co_return co_await std::move(op);
  }

  /// Cluster mode: handlers::wait_for_snapshot (handlers/cluster_wait.h) for this caller: until this broker's
  /// cluster snapshot satisfies `ready`, at most `timeout_ms` on the injected clock; whether it did.
  boost::asio::awaitable<bool> wait_for_snapshot(std::function<bool(const coordination::cluster_snapshot&)> ready,
                                                 int32_t timeout_ms) {
    request_context rc{.header = {}, .session = session_, .executor = executor_};
    auto op = handlers::wait_for_snapshot(svc_, rc, std::move(ready), timeout_ms);
    co_return co_await std::move(op);
  }

 private:
  broker_services& svc_;
  boost::asio::any_io_executor executor_;
  broker::session session_;
  int32_t correlation_id_ = 0;
};

/// A parsed request target: the path split at '/', and the query parameters (percent-decoded).
struct target_parts {
  std::vector<std::string> segments;  // "/v1/topics/a%2Fb" -> {"v1", "topics", "a/b"}
  bool valid = true;  // false: a path segment had a malformed %-escape or was not UTF-8 once decoded
  std::vector<std::pair<std::string, std::string>> query;
  const std::string* param(std::string_view name) const {
    for (const auto& [k, v] : query)
      if (k == name) return &v;
    return nullptr;
  }
};
target_parts split_target(std::string_view target);

/// " (led by broker N at host:port)" for a partition the cluster snapshot says another broker leads; "" when
/// unknown or on a single node.
std::string leader_hint(broker_services& svc, const std::string& topic, int32_t partition);

using topic_partition = std::pair<std::string, int32_t>;

/// One partition's answer to ListOffsets.
struct listed_offset {
  protocol::error_code error = protocol::error_code::none;
  int64_t offset = -1;
};

/// ListOffsets (one request, through the broker's handler) at `timestamp` (-2 earliest, -1 latest, else the first
/// offset at or after it) for each partition, read_uncommitted (0) or read_committed (1). In cluster mode a
/// partition led elsewhere answers NOT_LEADER_OR_FOLLOWER; for read_uncommitted earliest/latest its offsets then
/// come from this broker's replica when it has one (a follower's log start and high watermark lag the leader's by
/// at most one fetch).
boost::asio::awaitable<std::map<topic_partition, listed_offset>> list_offsets(kafka_caller& kc, const std::set<topic_partition>& which,
                                                                              int64_t timestamp, int8_t isolation = 0);

/// Parses a JSON object body; nullopt (and `error` set to a 400 reply) when it is not one.
std::optional<json::object> parse_object(std::string_view body, reply& error);

/// Bytes as JSON: a UTF-8 string when `encoding` is "utf8" and they are valid UTF-8, else base64 (`used` tells
/// which). "base64" always encodes; "hex" gives lower-case hex.
json::value bytes_json(std::string_view bytes, std::string_view encoding, std::string& used);
/// The inverse for a request body: the string as UTF-8 bytes ("utf8"), or decoded from base64 / hex.
/// nullopt when it does not decode.
std::optional<std::string> bytes_from(std::string_view text, std::string_view encoding);
bool valid_utf8(std::string_view s);

// The route groups (admin_topics.cc, admin_groups.cc, admin_records.cc). `parts.segments` starts with "v1".
boost::asio::awaitable<reply> topics_route(kafka_caller& kc, const request& req, const target_parts& parts);
boost::asio::awaitable<reply> groups_route(kafka_caller& kc, const request& req, const target_parts& parts);
/// GET and POST /v1/topics/{t}/partitions/{p}/records, POST /v1/topics/{t}/records.
boost::asio::awaitable<reply> records_route(kafka_caller& kc, const request& req, const target_parts& parts);
/// POST /v1/reset: every topic deleted (internal ones too), fault rules cleared.
boost::asio::awaitable<reply> reset_route(kafka_caller& kc, const request& req);

}  // namespace sluice::broker::http
