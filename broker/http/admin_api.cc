#include "broker/http/admin_api.h"

#include <boost/json.hpp>
#include <charconv>
#include <mutex>

#include "base/metrics.h"
#include "broker/fault_injection.h"
#include "broker/handlers/fault_response.h"
#include "broker/handlers/handlers.h"
#include "broker/http/admin_kafka.h"
#include "broker/http/console_assets.h"
#include "broker/group_service.h"
#include "broker/partition.h"
#include "broker/purgatory.h"
#include "broker/replication/replica_manager.h"
#include "broker/txn_service.h"
#include "broker/session.h"
#include "broker/topic_registry.h"
#include "protocol/api_key.h"
#include "protocol/error_code.h"

namespace sluice::broker::http {

namespace json = boost::json;
using beast_http::verb;

namespace {

std::optional<int16_t> api_key_of(const json::value& v) {
  if (v.is_int64()) {
    const auto k = v.as_int64();
    if (k < 0 || k > 127 || protocol::api_name(static_cast<int16_t>(k)) == "unknown") return std::nullopt;
    return static_cast<int16_t>(k);
  }
  if (!v.is_string()) return std::nullopt;
  const std::string_view name = v.as_string();
  for (int16_t k = 0; k < 128; ++k)
    if (protocol::api_name(k) == name) return k;
  return std::nullopt;
}

std::optional<protocol::error_code> error_of(const json::value& v) {
  if (v.is_int64()) {
    const auto c = v.as_int64();
    if (c < -1 || c > 1000) return std::nullopt;
    const auto e = static_cast<protocol::error_code>(c);
    if (protocol::error_name(e) == "UNKNOWN_ERROR_CODE") return std::nullopt;
    return e;
  }
  if (!v.is_string()) return std::nullopt;
  const std::string_view name = v.as_string();
  for (int c = -1; c < 1000; ++c)
    if (protocol::error_name(static_cast<protocol::error_code>(c)) == name) return static_cast<protocol::error_code>(c);
  return std::nullopt;
}

json::object rule_json(const fault_rule& r) {
  json::object o{{"id", r.id},
                 {"api", protocol::api_name(r.api_key)},
                 {"api_key", r.api_key},
                 {"action", fault_action_name(r.action)},
                 {"applied", r.applied}};
  if (r.action == fault_action::error) {
    o["error"] = protocol::error_name(r.error);
    o["error_code"] = static_cast<int>(r.error);
  }
  if (r.action == fault_action::delay) o["delay_ms"] = r.delay_ms;
  if (r.remaining) o["count"] = *r.remaining;
  else o["rate"] = r.rate;
  if (r.topic) o["topic"] = *r.topic;
  if (r.client_id) o["client_id"] = *r.client_id;
  if (r.connection) o["connection"] = *r.connection;
  return o;
}

/// Broker state computed at scrape time: partitions, leaders, offsets and sizes, per-topic traffic.
void collect_broker(broker_services& svc, metrics::sample_sink& out) {
  const auto snapshot = svc.cluster.snapshot();
  const int32_t self = svc.config.broker_id;
  double partitions = 0, leaders = 0, under_replicated = 0, offline = 0;
  for (const auto& t : svc.topics.all()) {
    double messages_in = 0, bytes_in = 0, bytes_out = 0;
    for (const auto& p : t->partitions) {
      if (!p) continue;
      ++partitions;
      const metrics::labels l{{"topic", t->name}, {"partition", std::to_string(p->index())}};
      const bool leads = p->is_leader();
      if (leads) {
        ++leaders;
        int32_t rf = t->replication_factor;
        if (snapshot)
          if (auto a = snapshot->topics.find(t->name);
              a != snapshot->topics.end() && p->index() < a->second.partition_count())
            rf = static_cast<int32_t>(a->second.replicas[static_cast<size_t>(p->index())].size());
        if (p->isr_size() < rf) ++under_replicated;
        out.gauge("kafka_cluster_partition_underreplicated", "1 when this leader's ISR is smaller than its replica set", l,
                  p->isr_size() < rf ? 1 : 0);
      }
      // A single node leads every partition it has open (its leader id is not tracked there).
      if (svc.replicas != nullptr ? p->leader_id() < 0 : !leads) ++offline;
      out.gauge("kafka_log_log_size", "Bytes of the partition's log on disk", l, static_cast<double>(p->size_bytes()));
      out.gauge("kafka_log_log_logstartoffset", "The partition's log start offset", l,
                static_cast<double>(p->log_start_offset()));
      out.gauge("kafka_log_log_logendoffset", "The partition's log end offset", l, static_cast<double>(p->log_end_offset()));
      out.gauge("sluice_partition_high_watermark", "The partition's high watermark", l,
                static_cast<double>(p->high_watermark()));
      messages_in += static_cast<double>(p->messages_in.value());
      bytes_in += static_cast<double>(p->bytes_in.value());
      bytes_out += static_cast<double>(p->bytes_out.value());
    }
    const metrics::labels tl{{"topic", t->name}};
    out.counter_value("kafka_server_brokertopicmetrics_messagesin_total", "Records appended by Produce, per topic", tl,
                      messages_in);
    out.counter_value("kafka_server_brokertopicmetrics_bytesin_total", "Record batch bytes appended by Produce, per topic",
                      tl, bytes_in);
    out.counter_value("kafka_server_brokertopicmetrics_bytesout_total",
                      "Record bytes sent to consumers by Fetch (not to followers), per topic", tl, bytes_out);
  }
  out.gauge("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker", {}, partitions);
  out.gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads", {}, leaders);
  out.gauge("kafka_server_replicamanager_underreplicatedpartitions", "Led partitions whose ISR is short of the replicas",
            {}, under_replicated);
  out.gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions here without a leader", {}, offline);
  out.gauge("kafka_controller_kafkacontroller_activecontrollercount", "1 on the controller broker", {},
            svc.replicas == nullptr || (snapshot && snapshot->controller_id == self) ? 1 : 0);
}

}  // namespace

boost::asio::awaitable<reply> reset_route(kafka_caller& kc, const request&) {
  auto& svc = kc.services();
  const int64_t start_us = svc.clock.monotonic_us();
  svc.faults.clear();
  // Every topic, the internal ones too (their groups, offsets, transactions and producer states go with them).
  std::vector<std::string> names;
  for (const auto& t : svc.topics.all()) names.push_back(t->name);
  if (const auto snapshot = svc.cluster.snapshot())
    for (const auto& [name, _] : snapshot->topics)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::sort(names.begin(), names.end());
  if (!names.empty() && svc.replicas == nullptr) {
    // Single node: straight through the registry (what DeleteTopics does here), the checkpoint files written once
    // for all the topics.
    for (const auto& n : names) {
      auto op = svc.topics.remove(n, /*rewrite_checkpoints=*/false);
      auto e = co_await std::move(op);
      if (!e.ok() && e.code != protocol::error_code::unknown_topic_or_partition)
        co_return kafka_error_reply(e.code, "deleting " + n + ": " + e.message);
    }
    svc.topics.write_checkpoints();
  } else if (!names.empty()) {
    protocol::delete_topics_request dt;
    dt.timeout_ms = 30000;
    for (const auto& n : names) dt.topics.emplace_back().name = n;
    auto op = kc.call(&handlers::delete_topics, dt, 6);
    auto resp = co_await std::move(op);
    for (const auto& r : resp.responses)
      if (r.error_code != protocol::error_code::none && r.error_code != protocol::error_code::unknown_topic_or_partition)
        co_return kafka_error_reply(r.error_code, "deleting " + r.name.value_or("?") + ": " + r.error_message.value_or(""));
  }
  // Cluster mode: DeleteTopics answers once the controller took the deletions; wait (at most 10 s) until this
  // broker's view has none of the topics left, so the next test starts from nothing.
  if (svc.replicas != nullptr && !names.empty()) {
    auto wait = kc.wait_for_snapshot([&names](const coordination::cluster_snapshot& s) {
      return std::none_of(names.begin(), names.end(), [&s](const std::string& n) { return s.topics.contains(n); });
    }, 10000);
    (void)co_await std::move(wait);
  }
  // The coordinators forget what they had loaded; the next FindCoordinator creates their topics again.
  svc.groups.coordinators().reset();
  svc.txns.coordinators().reset();
  json::array deleted;
  for (const auto& n : names) deleted.push_back(json::string(n));
  co_return json_reply(200, json::object{{"deleted_topics", std::move(deleted)},
                                         {"took_us", svc.clock.monotonic_us() - start_us}});
}

admin_api::admin_api(broker_services& services) : services_(services) {
  static std::once_flag process_family;
  std::call_once(process_family, [] {
    metrics::add_process_metrics(metrics::process_registry());
    // Families that exist from the start, before their first event.
    (void)purgatory_size("Produce");
    (void)purgatory_size("Fetch");
    (void)isr_shrinks_counter();
    (void)isr_expands_counter();
  });
  collector_ = metrics::process_registry().add_collector([this](metrics::sample_sink& out) { collect_broker(services_, out); });
}

admin_api::~admin_api() { metrics::process_registry().remove_collector(collector_); }

boost::asio::awaitable<reply> admin_api::metrics(const peer_info& peer) {
  // Consumer-group lag (kafka_exporter's names): the groups coordinated here (ListGroups), their committed offsets
  // (one OffsetFetch for all of them) against the high watermark of this broker's replica of each partition.
  struct lag_sample {
    metrics::labels l;
    double committed, lag;
  };
  std::vector<lag_sample> lags;
  auto executor = co_await boost::asio::this_coro::executor;
  kafka_caller kc(services_, peer, executor);
  protocol::list_groups_request lg;
  auto lop = kc.call(&handlers::list_groups, lg, 5);
  auto listed = co_await std::move(lop);
  if (!listed.groups.empty()) {
    protocol::offset_fetch_request of;
    for (const auto& g : listed.groups) {
      auto& rg = of.groups.emplace_back();
      rg.group_id = g.group_id;
      rg.topics = std::nullopt;
    }
    auto fop = kc.call(&handlers::offset_fetch, of, 8);
    auto fetched = co_await std::move(fop);
    for (const auto& g : fetched.groups) {
      if (g.error_code != protocol::error_code::none) continue;
      for (const auto& t : g.topics) {
        auto topic = services_.topics.find(t.name);
        for (const auto& p : t.partitions) {
          if (p.error_code != protocol::error_code::none || p.committed_offset < 0) continue;
          std::shared_ptr<partition> replica;
          if (topic && p.partition_index >= 0 && p.partition_index < static_cast<int32_t>(topic->partitions.size()))
            replica = topic->partitions[static_cast<size_t>(p.partition_index)];
          if (!replica) continue;
          const double end = static_cast<double>(replica->high_watermark());
          const double committed = static_cast<double>(p.committed_offset);
          lags.push_back({{{"consumergroup", g.group_id}, {"topic", t.name}, {"partition", std::to_string(p.partition_index)}},
                          committed,
                          std::max(0.0, end - committed)});
        }
      }
    }
  }
  auto extra = [&lags](metrics::sample_sink& out) {
    for (const auto& s : lags) {
      out.gauge("kafka_consumergroup_current_offset", "Committed offset of a group coordinated here, per partition", s.l,
                s.committed);
      out.gauge("kafka_consumergroup_lag", "High watermark less the committed offset, per group and partition", s.l, s.lag);
    }
  };
  // Label values (group ids, client-given names) may hold bytes that are not UTF-8; the text format must be UTF-8.
  co_return reply{200, "text/plain; version=0.0.4; charset=utf-8", sanitize_utf8(metrics::process_registry().prometheus_text(extra))};
}

boost::asio::awaitable<reply> admin_api::handle(const request& req, const peer_info& peer) {
  auto routed = route(req, peer);
  co_return co_await std::move(routed);
}

boost::asio::awaitable<reply> admin_api::route(const request& req, const peer_info& peer) {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  while (target.size() > 1 && target.back() == '/') target.remove_suffix(1);  // "/v1/cluster/" is "/v1/cluster"
  const auto method = req.method();
  const bool get = method == verb::get || method == verb::head;
  if (target == "/" || target.starts_with("/console/")) co_return console(req, target);
  if (target == "/healthz") co_return get ? json_reply(200, json::object{{"status", "ok"}}) : method_not_allowed("GET");
  if (target == "/readyz") {
    if (!get) co_return method_not_allowed("GET");
    const auto snapshot = services_.cluster.snapshot();
    const bool cluster = services_.replicas != nullptr;
    const bool ready = ready_.load(std::memory_order_acquire) && (!cluster || (snapshot && snapshot->registered));
    co_return json_reply(ready ? 200 : 503, json::object{{"status", ready ? "ready" : "starting"}});
  }
  if (target == "/metrics") {
    if (!get) co_return method_not_allowed("GET");
    auto op = metrics(peer);
    co_return co_await std::move(op);
  }
  const bool cluster_mode = services_.replicas != nullptr;
  // A single node is its own controller, as its Metadata answers say.
  auto controller_id = [&] {
    const auto snapshot = services_.cluster.snapshot();
    return cluster_mode ? (snapshot ? snapshot->controller_id : -1) : services_.config.broker_id;
  };
  if (target == "/v1/cluster") {
    if (!get) co_return method_not_allowed("GET");
    co_return json_reply(200, json::object{{"cluster_id", services_.cluster_id},
                                        {"controller_id", controller_id()},
                                        {"broker_id", services_.config.broker_id}});
  }
  if (target == "/v1/brokers") {
    if (!get) co_return method_not_allowed("GET");
    json::array brokers;
    const auto snapshot = services_.cluster.snapshot();
    if (cluster_mode && snapshot) {
      for (const auto& [id, b] : snapshot->brokers) {
        json::array listeners;
        for (const auto& e : b.endpoints)
          listeners.push_back(json::object{{"name", e.listener_name}, {"host", e.host}, {"port", e.port},
                                           {"security_protocol", e.security_protocol}});
        brokers.push_back(json::object{{"id", id}, {"host", b.host}, {"port", b.port}, {"listeners", listeners},
                                       {"controller", id == snapshot->controller_id}});
      }
    } else {
      json::array listeners;
      for (const auto& e : services_.config.advertised_listeners)
        listeners.push_back(json::object{{"name", e.listener_name}, {"host", e.host}, {"port", e.port},
                                         {"security_protocol", security_protocol_of(services_.config.values, e.listener_name)}});
      brokers.push_back(json::object{{"id", services_.config.broker_id}, {"listeners", listeners}, {"controller", true}});
    }
    co_return json_reply(200, json::object{{"brokers", brokers}});
  }
  if (target == "/v1/faults" || target.starts_with("/v1/faults/")) co_return faults(req, target.substr(10));
  const auto parts = split_target(req.target());
  if (!parts.valid) co_return error_reply(400, "INVALID_REQUEST", "the path has a malformed %-escape or is not UTF-8");
  const auto& s = parts.segments;
  if (s.size() >= 2 && s[0] == "v1") {
    auto executor = co_await boost::asio::this_coro::executor;
    kafka_caller kc(services_, peer, executor);
    if (s[1] == "topics") {
      auto op = topics_route(kc, req, parts);
      co_return co_await std::move(op);
    }
    if (s[1] == "groups") {
      auto op = groups_route(kc, req, parts);
      co_return co_await std::move(op);
    }
    if (s[1] == "reset" && s.size() == 2) {
      if (!services_.faults.enabled())
        co_return error_reply(403, "TEST_CONTROLS_DISABLED",
                              "test controls are off: start the broker with sluice.test.faults.enable=true");
      if (method != verb::post) co_return method_not_allowed("POST");
      auto op = reset_route(kc, req);
      co_return co_await std::move(op);
    }
  }
  co_return error_reply(404, "NOT_FOUND", "no route " + std::string(target));
}

reply admin_api::console(const request& req, std::string_view path) {
  const auto method = req.method();
  if (method != verb::get && method != verb::head) return method_not_allowed("GET");
  const auto* asset = find_console_asset(path);
  if (!asset) return error_reply(404, "NOT_FOUND", "no console file " + std::string(path));
  reply r{200, std::string(asset->content_type), std::string(asset->body)};
  // no-cache: the browser asks again with If-None-Match and gets 304, so a new binary's console shows at once.
  r.headers = {{"Cache-Control", "no-cache"},
               {"ETag", std::string(asset->etag)},
               {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"},
               {"Content-Security-Policy",
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"}};
  if (const auto it = req.find(beast_http::field::if_none_match); it != req.end()) {
    const std::string_view want = it->value();
    if (want == "*" || want.find(asset->etag) != std::string_view::npos) {  // the tag alone, W/ or in a list
      r.status = 304;
      r.body.clear();
    }
  }
  return r;
}

reply admin_api::faults(const request& req, std::string_view rest) {
  auto& injector = services_.faults;
  const bool get = req.method() == verb::get || req.method() == verb::head;
  if (!injector.enabled())
    return error_reply(403, "FAULTS_DISABLED", "fault injection is off: start the broker with sluice.test.faults.enable=true");
  const auto method = req.method();
  if (!rest.empty()) {  // "/{id}"
    int64_t id = 0;
    const auto digits = rest.substr(1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (ec != std::errc{} || ptr != digits.data() + digits.size()) return error_reply(404, "NOT_FOUND", "no fault " + std::string(digits));
    if (method == verb::delete_)
      return injector.remove(id) ? reply{204, "application/json", ""} : error_reply(404, "NOT_FOUND", "no fault " + std::to_string(id));
    if (get)
      for (const auto& r : injector.list())
        if (r.id == id) return json_reply(200, rule_json(r));
    if (get) return error_reply(404, "NOT_FOUND", "no fault " + std::to_string(id));
    return method_not_allowed("GET, DELETE");
  }
  if (get) {
    json::array rules;
    for (const auto& r : injector.list()) rules.push_back(rule_json(r));
    return json_reply(200, json::object{{"faults", rules}});
  }
  if (method == verb::delete_) {
    injector.clear();
    return {204, "application/json", ""};
  }
  if (method != verb::post) return method_not_allowed("GET, POST, DELETE");

  boost::system::error_code ec;
  json::value body = json::parse(req.body(), ec);
  if (ec || !body.is_object()) return error_reply(400, "INVALID_REQUEST", "the body must be a JSON object");
  const auto& o = body.as_object();
  for (const auto& [k, v] : o) {
    static const std::string_view known[] = {"api", "action", "error", "delay_ms", "count", "rate", "topic", "client_id", "connection"};
    if (std::find(std::begin(known), std::end(known), std::string_view(k)) == std::end(known))
      return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k));
  }
  fault_rule r;
  const auto* api = o.if_contains("api");
  if (!api) return error_reply(400, "INVALID_REQUEST", "\"api\" is required (Kafka's API name, e.g. Produce, or its key)");
  auto key = api_key_of(*api);
  if (!key) return error_reply(400, "INVALID_REQUEST", "unknown API " + json::serialize(*api));
  r.api_key = *key;
  const auto* action = o.if_contains("action");
  if (!action || !action->is_string()) return error_reply(400, "INVALID_REQUEST", "\"action\" is required: error, delay, drop or close");
  auto a = parse_fault_action(std::string_view(action->as_string()));
  if (!a) return error_reply(400, "INVALID_REQUEST", "unknown action " + std::string(action->as_string()) + ": error, delay, drop or close");
  r.action = *a;
  if (r.action == fault_action::error) {
    const auto* e = o.if_contains("error");
    if (!e) return error_reply(400, "INVALID_REQUEST", "action error needs \"error\" (a Kafka error name or code)");
    auto code = error_of(*e);
    if (!code || *code == protocol::error_code::none)
      return error_reply(400, "INVALID_REQUEST", "unknown Kafka error " + json::serialize(*e));
    if (!handlers::fault_error_supported(r.api_key))
      return error_reply(400, "INVALID_REQUEST", std::string(protocol::api_name(r.api_key)) +
                                                     " is not served here or has no error field an injected error can go into: use delay, drop or close");
    r.error = *code;
  } else if (o.contains("error")) {
    return error_reply(400, "INVALID_REQUEST", "\"error\" goes with action error only");
  }
  if (const auto* d = o.if_contains("delay_ms")) {
    if (r.action != fault_action::delay) return error_reply(400, "INVALID_REQUEST", "\"delay_ms\" goes with action delay only");
    if (!d->is_int64() || d->as_int64() < 0 || d->as_int64() > 3600000)
      return error_reply(400, "INVALID_REQUEST", "\"delay_ms\" must be an integer 0..3600000");
    r.delay_ms = d->as_int64();
  } else if (r.action == fault_action::delay) {
    return error_reply(400, "INVALID_REQUEST", "action delay needs \"delay_ms\"");
  }
  const auto* count = o.if_contains("count");
  const auto* rate = o.if_contains("rate");
  if (count && rate) return error_reply(400, "INVALID_REQUEST", "give \"count\" or \"rate\", not both");
  if (count) {
    if (!count->is_int64() || count->as_int64() < 1) return error_reply(400, "INVALID_REQUEST", "\"count\" must be an integer >= 1");
    r.remaining = count->as_int64();
  } else if (rate) {
    const double x = rate->is_double() ? rate->as_double() : rate->is_int64() ? static_cast<double>(rate->as_int64()) : -1;
    if (x < 0 || x > 1) return error_reply(400, "INVALID_REQUEST", "\"rate\" must be a number 0..1");
    r.rate = x;
  } else {
    r.remaining = 1;  // the next matching request
  }
  for (auto [field, slot] : {std::pair{"topic", &r.topic}, {"client_id", &r.client_id}, {"connection", &r.connection}}) {
    if (const auto* v = o.if_contains(field)) {
      if (!v->is_string()) return error_reply(400, "INVALID_REQUEST", std::string("\"") + field + "\" must be a string");
      *slot = std::string(v->as_string());
    }
  }
  r.id = injector.add(r);
  return json_reply(201, rule_json(r));
}

}  // namespace sluice::broker::http
