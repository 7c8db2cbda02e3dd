#include "cli/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "protocol/messages/find_coordinator.h"

namespace sluice::cli {

namespace {
bool retriable(protocol::error_code e) {
  using protocol::error_code;
  return e == error_code::leader_not_available || e == error_code::coordinator_load_in_progress ||
         e == error_code::coordinator_not_available || e == error_code::not_coordinator ||
         e == error_code::not_leader_or_follower || e == error_code::request_timed_out;
}
}  // namespace

const topic_info* cluster_metadata::find(const std::string& name) const {
  for (const auto& t : topics)
    if (t.name == name) return &t;
  return nullptr;
}

cluster::cluster(std::vector<endpoint> bootstrap, std::chrono::milliseconds timeout, std::string client_id,
                 std::shared_ptr<const client_security> security)
    : bootstrap_list_(std::move(bootstrap)), timeout_(timeout), client_id_(std::move(client_id)), security_(std::move(security)) {}

connection& cluster::bootstrap() {
  if (bootstrap_) return *bootstrap_;
  std::string reasons;
  for (const auto& e : bootstrap_list_) {
    auto c = std::make_unique<connection>(io_, e, timeout_, client_id_, security_);
    try {
      c->open();
      bootstrap_ = std::move(c);
      return *bootstrap_;
    } catch (const failure& f) {
      if (f.code() != exit_code::cannot_connect) throw;
      reasons += reasons.empty() ? f.what() : std::string("; ") + f.what();
    }
  }
  throw failure(exit_code::cannot_connect, "no broker reachable: " + reasons);
}

connection& cluster::node(int32_t id) {
  if (auto it = nodes_.find(id); it != nodes_.end()) return *it->second;
  if (metadata_.brokers.empty()) refresh(std::vector<std::string>{});
  const broker_info* b = nullptr;
  for (const auto& x : metadata_.brokers)
    if (x.id == id) b = &x;
  if (!b) throw failure(exit_code::kafka_error, fmt::format("LEADER_NOT_AVAILABLE: broker {} is not in the metadata", id));
  endpoint e{b->host, static_cast<uint16_t>(b->port)};
  // The bootstrap connection is reused when it is this broker (same address as advertised).
  if (bootstrap_ && bootstrap_->where().host == e.host && bootstrap_->where().port == e.port) return *bootstrap_;
  auto c = std::make_unique<connection>(io_, e, timeout_, client_id_, security_);
  c->open();
  return *nodes_.emplace(id, std::move(c)).first->second;
}

connection& cluster::controller() {
  if (metadata_.brokers.empty()) refresh(std::vector<std::string>{});
  if (metadata_.controller_id >= 0) {
    for (const auto& b : metadata_.brokers)
      if (b.id == metadata_.controller_id) return node(b.id);
  }
  return bootstrap();
}

connection& cluster::coordinator(const std::string& group) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    auto& c = bootstrap();
    const int16_t v = c.pick(protocol::api_key::find_coordinator, 0, 4);
    protocol::find_coordinator_request req;
    req.key_type = 0;
    if (v >= 4) req.coordinator_keys = {group};
    else req.key_ = group;
    auto resp = c.call<protocol::find_coordinator_response>(req, v);
    protocol::error_code err = resp.error_code;
    std::optional<std::string> msg = resp.error_message;
    int32_t id = resp.node_id;
    std::string host = resp.host;
    int32_t port = resp.port;
    if (v >= 4) {
      if (resp.coordinators.empty()) throw failure(exit_code::kafka_error, "FindCoordinator: empty answer");
      const auto& k = resp.coordinators.front();
      err = k.error_code, msg = k.error_message, id = k.node_id, host = k.host, port = k.port;
    }
    if (err == protocol::error_code::none) {
      if (auto it = nodes_.find(id); it != nodes_.end()) return *it->second;
      endpoint e{host, static_cast<uint16_t>(port)};
      if (bootstrap_->where().host == e.host && bootstrap_->where().port == e.port) return *bootstrap_;
      auto conn = std::make_unique<connection>(io_, e, timeout_, client_id_, security_);
      conn->open();
      return *nodes_.emplace(id, std::move(conn)).first->second;
    }
    if (!retriable(err) || std::chrono::steady_clock::now() >= deadline)
      kafka_failure(err, msg, fmt::format("FindCoordinator for group '{}'", group));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

const cluster_metadata& cluster::refresh(std::optional<std::vector<std::string>> topics, bool auto_create) {
  auto& c = bootstrap();
  const int16_t v = c.pick(protocol::api_key::metadata, 1, 12);
  protocol::metadata_request req;
  if (topics) {
    std::vector<protocol::metadata_request::metadata_request_topic> list;
    for (auto& name : *topics) {
      protocol::metadata_request::metadata_request_topic t;
      t.name = name;
      list.push_back(std::move(t));
    }
    req.topics = std::move(list);
  } else {
    req.topics = std::nullopt;  // v1+: every topic
  }
  req.allow_auto_topic_creation = auto_create;
  auto resp = c.call<protocol::metadata_response>(req, v);
  cluster_metadata m;
  m.cluster_id = resp.cluster_id;
  m.controller_id = resp.controller_id;
  for (const auto& b : resp.brokers) m.brokers.push_back({b.node_id, b.host, b.port, b.rack});
  std::sort(m.brokers.begin(), m.brokers.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (const auto& t : resp.topics) {
    topic_info ti;
    ti.name = t.name.value_or("");
    ti.topic_id = t.topic_id;
    ti.internal = t.is_internal;
    ti.error = t.error_code;
    for (const auto& p : t.partitions)
      ti.partitions.push_back({p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
                               p.offline_replicas, p.error_code});
    std::sort(ti.partitions.begin(), ti.partitions.end(),
              [](const auto& a, const auto& b) { return a.partition < b.partition; });
    m.topics.push_back(std::move(ti));
  }
  metadata_ = std::move(m);
  return metadata_;
}

const topic_info& cluster::topic(const std::string& name, bool auto_create) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    refresh(std::vector<std::string>{name}, auto_create);
    const topic_info* t = metadata_.find(name);
    protocol::error_code err = t ? t->error : protocol::error_code::unknown_topic_or_partition;
    if (err == protocol::error_code::none && t) {
      bool leaders = std::all_of(t->partitions.begin(), t->partitions.end(), [](const auto& p) { return p.leader >= 0; });
      if (leaders || std::chrono::steady_clock::now() >= deadline) return *t;
    } else if (!retriable(err) || std::chrono::steady_clock::now() >= deadline) {
      kafka_failure(err, fmt::format("Topic '{}'{}", name,
                                     err == protocol::error_code::unknown_topic_or_partition ? " does not exist." : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace sluice::cli
