#include "coordination/zk/zk_cluster.h"

#include <chrono>

#include "base/logging.h"
#include "coordination/zk/zk_c_client.h"
#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

using detail::view_fail;

// ---------------------------------------------------------------------------------------------------------
// construction and the lifecycle

zk_cluster::zk_cluster(const zk_options& options, std::shared_ptr<zk_connector> connector)
    : session_(options, std::move(connector), *this),
      store_(session_),
      follower_(session_, store_),
      controller_(session_, follower_) {
  follower_.set_listener(controller_);
}

zk_cluster::~zk_cluster() {
  stop();
  session_.join_thread();  // before any part is destroyed
}

result<std::unique_ptr<zk_cluster>> zk_cluster::open(const zk_options& options) {
  if (options.connect.empty()) return view_fail(view_errc::unavailable, "zookeeper.connect is empty");
  return open(options, std::make_shared<zk_c_connector>(options.connect));
}

result<std::unique_ptr<zk_cluster>> zk_cluster::open(const zk_options& options,
                                                     std::shared_ptr<zk_connector> connector) {
  std::unique_ptr<zk_cluster> c(new zk_cluster(options, std::move(connector)));
  auto r = c->session_.run_sync([&]() -> result<void> {
    if (auto r = c->session_.connect(); !r) return r;
    if (auto r = c->store_.init_paths_and_cluster_id(); !r) return r;
    c->follower_.publish();  // registered=false until start(): snapshot() is never null
    return {};
  });
  if (!r) {
    c->stop();
    return r.err();
  }
  return c;
}

int64_t zk_cluster::session_id() const { return session_.session_id(); }

result<void> zk_cluster::start(const broker_registration& self) {
  if (session_.stopped()) return view_fail(view_errc::unavailable, "stopped");
  return session_.run_sync([&]() -> result<void> {
    if (session_.registered()) return {};
    session_.set_self(self);
    if (!session_.current()) {
      if (auto r = session_.connect(); !r) return r;
    }
    if (auto r = session_.register_self(true); !r) return r;
    log::info("zookeeper: registered broker {} at {} (session 0x{:x})", self.id, broker_znode::path(self.id),
              session_.session_id());
    session_.set_registered(true);
    follower_.sync_all();
    controller_.try_elect();
    after_change();
    return {};
  });
}

void zk_cluster::stop() {
  if (!session_.mark_stopped()) return;
  session_.run_sync([this] {  // inline when called from a subscriber
    controller_.stop();
    session_.close();  // ephemerals (/brokers/ids/<id>, /controller) go at once
    follower_.drop_shutdown_wait();
    return 0;
  });
  session_.stop_thread();
}

// ---------------------------------------------------------------------------------------------------------
// what the session manager reports (coordination thread)

void zk_cluster::watch_fired(const std::string& path) {
  follower_.on_watch(path);
  after_change();
}

void zk_cluster::resync() {
  follower_.sync_all();
  after_change();
}

void zk_cluster::session_lost() {
  if (controller_.is_controller()) controller_.resign();
  follower_.state().controller_id = -1;
}

void zk_cluster::session_closed() {
  follower_.publish();  // registered=false at once: stop acting as leader or coordinator
}

void zk_cluster::registered_again() {
  follower_.recreate_shutdown_marker();
  session_.set_registered(true);
  follower_.sync_all();
  controller_.try_elect();
  log::info("zookeeper: broker {} registered again with session 0x{:x}", session_.self_id(), session_.session_id());
  after_change();
}

void zk_cluster::after_change() {
  if (controller_.is_controller()) controller_.reconcile();
  follower_.publish();
}

// ---------------------------------------------------------------------------------------------------------
// cluster_view

std::shared_ptr<const cluster_snapshot> zk_cluster::snapshot() const { return follower_.snapshot(); }

void zk_cluster::subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) {
  follower_.subscribe(std::move(on_change));
}

result<partition_state> zk_cluster::update_isr(const std::string& topic, int32_t partition,
                                               const partition_state& next) {
  return store_.update_isr(topic, partition, next);
}

result<void> zk_cluster::controlled_shutdown(int64_t timeout_ms) {
  if (session_.stopped()) return view_fail(view_errc::not_registered, "stopped");
  if (session_.on_thread())
    return view_fail(view_errc::unavailable, "controlled_shutdown cannot wait on the coordination thread");
  auto started = session_.run_sync([this] { return follower_.request_controlled_shutdown(); });
  if (!started) return started.err();
  if (started->wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready)
    return view_fail(view_errc::timeout, "the controller did not move every leadership away within " +
                                             std::to_string(timeout_ms) + " ms");
  return {};
}

result<void> zk_cluster::request_leader_move(const std::string& topic, int32_t partition, int32_t broker) {
  return store_.request_leader_move(topic, partition, broker);
}

template <typename Step>
result<std::vector<partition_outcome>> zk_cluster::run_controller_step(const char* what, Step step) {
  if (session_.stopped()) return view_fail(view_errc::not_registered, "stopped");
  if (session_.on_thread()) return view_fail(view_errc::unavailable, std::string(what) + " called on the coordination thread");
  return session_.run_sync([&]() -> result<std::vector<partition_outcome>> {
    auto r = step();
    follower_.publish();
    return r;
  });
}

result<std::vector<partition_outcome>> zk_cluster::alter_reassignments(const std::vector<reassignment_request>& requests,
                                                                       bool allow_rf_change) {
  return run_controller_step("alter_reassignments",
                             [&] { return controller_.alter_reassignments(requests, allow_rf_change); });
}

result<std::vector<partition_outcome>> zk_cluster::elect_leaders(
    bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) {
  return run_controller_step("elect_leaders", [&] { return controller_.elect_leaders(unclean, partitions); });
}

// ---------------------------------------------------------------------------------------------------------
// cluster_store (caller's thread)

std::string zk_cluster::cluster_id() const { return store_.cluster_id(); }

std::vector<topic_assignment> zk_cluster::topics() const { return store_.topics(); }

result<void> zk_cluster::create_topic(const topic_assignment& topic) { return store_.create_topic(topic); }

result<void> zk_cluster::delete_topic(const std::string& name) { return store_.delete_topic(name); }

result<void> zk_cluster::set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) {
  return store_.set_topic_configs(name, configs);
}

result<void> zk_cluster::add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) {
  return store_.add_partitions(name, replicas);
}

result<producer_id_block> zk_cluster::allocate_producer_id_block(int32_t broker_id, int64_t size) {
  return store_.allocate_producer_id_block(broker_id, size);
}

result<std::map<std::string, std::map<std::string, std::string>>> zk_cluster::entity_configs(
    const std::string& entity_type) const {
  return store_.entity_configs(entity_type);
}

result<std::vector<std::string>> zk_cluster::entity_names(const std::string& entity_type) const {
  return store_.entity_names(entity_type);
}

result<void> zk_cluster::set_entity_configs(const std::string& entity_type, const std::string& name,
                                            std::map<std::string, std::string> configs) {
  return store_.set_entity_configs(entity_type, name, configs);
}

result<std::map<acl_node_key, std::string>> zk_cluster::acl_nodes() const { return store_.acl_nodes(); }

result<void> zk_cluster::set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) {
  return store_.set_acl_node(key, data);
}

}  // namespace sluice::coordination::zk
