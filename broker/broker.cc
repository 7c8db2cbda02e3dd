#include "broker/broker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <utility>

#include "base/logging.h"
#include "base/metrics.h"
#include "broker/meta_properties.h"
#include "storage/log_dir_failure.h"
#include "broker/security/tls_context.h"
#include "broker/topic_config.h"
#include "coordination/embedded_store.h"
#include "coordination/zk/zk_cluster.h"

namespace sluice::broker {

broker::broker(broker_config config) : config_(std::move(config)), io_(), signals_(io_, SIGINT, SIGTERM) {}

result<void> broker::start() {
  for (const auto& dir : config_.log_dirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return error{base_errc::failed, "cannot create log dir " + dir.string() + ": " + ec.message()};
    // One process per log dir (Kafka's .lock file): a second broker on the same files would corrupt them.
    const auto lock_path = dir / ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return error{base_errc::failed, "cannot open " + lock_path.string() + ": " + std::strerror(errno)};
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return error{base_errc::failed, "failed to acquire lock on " + lock_path.string() +
                          ": another process is using this log directory"};
    }
    log_dir_locks_.push_back(fd);  // held until the process exits
  }
  // Whose dirs these are (Kafka's meta.properties, checked at every start): a dir of another broker or of
  // another cluster is refused before anything opens, recovers or deletes partition data, and a refusal
  // changes no file in the log dirs. The broker id is checked now; the cluster id once it is known.
  auto meta = meta_properties_ensemble::load(config_.log_dirs);
  if (!meta) return meta.err();
  if (auto r = meta->verify(config_.broker_id); !r) return r;
  cluster_mode_ = !config_.zookeeper_connect.empty();
  if (cluster_mode_) {
    auto options = coordination::zk::zk_options::from_config(config_.values);
    if (!options) return error{base_errc::failed, "zookeeper settings: " + options.err().message};
    options->connect = config_.zookeeper_connect;
    auto zk = coordination::zk::zk_cluster::open(*options);
    if (!zk) return error{base_errc::failed, "cannot connect to ZooKeeper at " + config_.zookeeper_connect + ": " + zk.err().message};
    // Kafka's KafkaServer: the cluster id is known once connected (/cluster/id), and checked before the logs load.
    if (auto r = meta->verify_cluster_id((*zk)->cluster_id(), "/cluster/id of ZooKeeper at " + config_.zookeeper_connect,
                                         "The broker is trying to join the wrong cluster. Configured zookeeper.connect "
                                         "may be wrong, or the dir is of a single-node broker (its own cluster).");
        !r)
      return r;
    view_ = zk->get();
    store_ = std::move(*zk);
  } else {
    const auto& first = config_.log_dirs.front();
    const auto metadata_file = coordination::embedded_store::file_in(first);
    std::error_code ec;
    if (auto stored = meta->cluster_id(); stored && !std::filesystem::exists(metadata_file, ec)) {
      // The embedded store would start a new cluster here: refuse before it writes anything.
      return error{base_errc::failed, "Log dir " + meta->cluster_id_dir().string() + " belongs to cluster " + *stored + " (" +
                          (meta->cluster_id_dir() / meta_properties_file).string() +
                          "), but this single-node broker finds no cluster metadata in " + metadata_file.string() +
                          " and would start a new cluster with another id. A dir of a ZooKeeper cluster needs "
                          "zookeeper.connect; a single-node broker's first log dir must stay first in log.dirs."};
    }
    auto store = coordination::embedded_store::open(first);
    if (!store) return error{base_errc::failed, "cannot open cluster metadata: " + store.err().message};
    if (auto r = meta->verify_cluster_id((*store)->cluster_id(), "single-node cluster metadata " + metadata_file.string(),
                                         "The dir belongs to another cluster: zookeeper.connect may be missing (a dir "
                                         "of a ZooKeeper cluster), or the dir is another single-node broker's.");
        !r)
      return r;
    (*store)->set_broker_id(config_.broker_id);
    view_ = store->get();
    store_ = std::move(*store);
  }
  // Every dir now carries this broker's and this cluster's ids (written where missing: a new dir, or an older
  // Sluice's dir, adopted as Kafka adopts a dir without meta.properties).
  auto written = meta->complete(config_.broker_id, store_->cluster_id());
  if (!written) return written.err();
  for (const auto& dir : *written)
    log::info("wrote {} (broker.id {}, cluster.id {})", (dir / meta_properties_file).string(), config_.broker_id,
              store_->cluster_id());

  // A log dir failure (a failed fsync, a write that cannot be cut back; storage/log_dir_failure.h) halts the broker,
  // as Kafka halts when its last log dir fails: it must not go on serving data that may not be on disk. Kafka keeps
  // a broker with several log.dirs serving the others; Sluice halts then too (README: limits). In cluster mode the
  // controller moves the leadership once the ZooKeeper session ends.
  storage::set_log_dir_failure_handler([](const std::filesystem::path& file, const std::string& reason) {
    log::error("log dir failure in {}: {}; halting the broker (exit 1): its data may not be durable", file.string(),
               reason);
    // No log::shutdown() here: other threads may still be logging, and destroying the logger under them is a race
    // (TSan). The line is already out: the logger writes to stderr, which stdio never buffers.
    std::_Exit(1);
  });
  logs_ = std::make_unique<storage::log_manager>(config_.log_dirs, make_log_config(config_, {}),
                                                 system_clock::instance());
  if (auto r = logs_->load(); !r) return error{base_errc::failed, "cannot load logs: " + r.err().message};
  topics_ = std::make_unique<topic_registry>(config_, *store_, *logs_, io_.get_executor());
  if (!cluster_mode_) {
    if (auto r = topics_->load(); !r) return r;
  }  // cluster mode: the replica manager syncs the registry with the cluster once registered

  groups_ = std::make_unique<group_service>(config_, *topics_, system_clock::instance());
  topics_->on_deleted([groups = groups_.get()](const std::string& name, int32_t partitions) {
    groups->on_topic_deleted(name, partitions);
  });
  producer_ids_ = std::make_unique<producer_id_manager>(*store_, config_.broker_id);
  txns_ = std::make_unique<txn_service>(config_, *topics_, system_clock::instance(), *producer_ids_, *groups_,
                                        io_.get_executor());
  metrics::set_enabled(config_.metrics_enable);
  faults_ = std::make_unique<fault_injector>(config_.test_faults_enable, config_.test_faults_seed);
  if (faults_->enabled())
    log::warn("TEST CONTROLS ACTIVE: sluice.test.faults.enable=true: POST /v1/faults makes requests fail on purpose; "
              "never in production");
  if (cluster_mode_) {
    replicas_ = std::make_unique<replica_manager>(config_, *view_, *topics_, io_.get_executor(), system_clock::instance());
    replicas_->on_leadership_change([groups = groups_.get(), txns = txns_.get()](std::shared_ptr<partition> p, bool leader) {
      groups->on_leadership_change(p, leader);
      txns->on_leadership_change(p, leader);
    });
  }
  credentials_ = std::make_unique<security::credential_store>(*store_);
  services_ = std::unique_ptr<broker_services>(new broker_services{config_, *topics_, *view_, *groups_, *txns_, *producer_ids_,
                                                                   *faults_, system_clock::instance(),
                                                                   *credentials_, store_->cluster_id(), replicas_.get()});
  quotas_ = std::make_unique<quota_manager>(*store_, config_.quota_window_num, config_.quota_window_size_seconds);
  {
    // KIP-612: Kafka's default, Int.MaxValue, means no limit.
    auto limit_of = [](const std::string& text) {
      double d = 0;
      try { d = std::stod(text); } catch (const std::exception&) { return 0.0; }
      return d >= INT32_MAX || d <= 0 ? 0.0 : d;
    };
    std::map<std::string, double> per_listener;
    for (const auto& ep : config_.listeners) {
      std::string lower = ep.listener_name;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const std::string key = "listener.name." + lower + ".max.connection.creation.rate";
      if (auto it = config_.listener_values.find(key); it != config_.listener_values.end())
        per_listener[ep.listener_name] = limit_of(it->second);
    }
    quotas_->set_connection_rate_limits(limit_of(config_.values.at("max.connection.creation.rate")),
                                        std::move(per_listener), config_.inter_broker_listener_name);
  }
  quotas_->set_broker_id(config_.broker_id);
  if (auto r = quotas_->reload(); !r) return error{r.err().code, "cannot read the client quotas: " + r.err().message};
  quotas_->start();
  if (replicas_) {
    // The follower side of the replication throttle (KIP-73): this broker's replicas named by their topic's
    // follower.replication.throttled.replicas, limited by its follower.replication.throttled.rate.
    follower_throttle throttle;
    throttle.covers = [topics = topics_.get(), self = config_.broker_id](const std::string& topic, int32_t partition) {
      auto t = topics->find(topic);
      return t && replica_throttled(t->configs, follower_throttled_replicas_key, partition, self);
    };
    throttle.exceeded = [q = quotas_.get()](int64_t now_ms) {
      return q->replication_exceeded(quota_manager::replication_side::follower, now_ms);
    };
    throttle.record = [q = quotas_.get()](int64_t bytes, int64_t now_ms) {
      q->record_replication(quota_manager::replication_side::follower, bytes, now_ms);
    };
    replicas_->set_follower_throttle(std::move(throttle));
  }
  services_->quotas = quotas_.get();
  fetch_sessions_ = std::make_unique<fetch_session_cache>(system_clock::instance(),
                                                          config_.max_incremental_fetch_session_cache_slots);
  services_->fetch_sessions = fetch_sessions_.get();
  // /metrics: Kafka's FetchSessionCache gauges and evictions meter, under the JMX exporter's names.
  fetch_session_metrics_ = metrics::process_registry().add_collector([c = fetch_sessions_.get()](metrics::sample_sink& out) {
    out.gauge("kafka_server_fetchsessioncache_numincrementalfetchsessions", "Incremental fetch sessions cached (KIP-227)",
              {}, static_cast<double>(c->size()));
    out.gauge("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
              "Partitions in all cached incremental fetch sessions", {}, static_cast<double>(c->total_partitions()));
    out.counter_value("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
                      "Incremental fetch sessions evicted to make room for new ones", {},
                      static_cast<double>(c->evictions()));
  });
  if (config_.authorizer_enabled) {
    security::authorizer_options o;
    o.super_users = security::parse_super_users(config_.values.at("super.users"));
    o.allow_everyone_if_no_acl_found = config_.allow_everyone_if_no_acl_found;
    o.refresh_ms = config_.acl_refresh_interval_ms;
    authorizer_ = std::make_unique<security::authorizer>(*store_, std::move(o));
    if (auto r = authorizer_->reload(); !r) return error{r.err().code, "cannot read the ACLs: " + r.err().message};
    authorizer_->start();
    services_->authorizer = authorizer_.get();
  }
  dispatcher_ = std::make_unique<dispatcher>(*services_);
  if (!cluster_mode_) {
    groups_->start();  // replays __consumer_offsets if it exists
    txns_->start();    // and __transaction_state
  }
  server_ = std::make_unique<net::server>(io_, config_, *dispatcher_);
  server_->set_quotas(quotas_.get(), &services_->clock);
  if (auto r = server_->listen(config_.listeners); !r) return r;
  // A listener on port 0 is advertised with the port it got (before any request is served), as Kafka does.
  for (auto& ep : config_.advertised_listeners)
    if (ep.port == 0) ep.port = server_->local_port(ep.listener_name);
  server_->start();
  if (cluster_mode_) {
    // Listening first, so that followers and clients can connect as soon as the registration is seen.
    coordination::broker_registration self;
    self.id = config_.broker_id;
    // Every advertised listener, the inter-broker one first (replication connects to the first endpoint).
    for (const auto& ep : config_.advertised_listeners) {
      coordination::listener_endpoint e;
      e.listener_name = ep.listener_name;
      e.host = ep.host.empty() ? "localhost" : ep.host;
      e.port = ep.port != 0 ? ep.port : server_->local_port(ep.listener_name);
      e.security_protocol = security_protocol_of(config_.values, ep.listener_name);
      if (ep.listener_name == config_.inter_broker_listener_name) self.endpoints.insert(self.endpoints.begin(), e);
      else self.endpoints.push_back(e);
    }
    if (self.endpoints.empty() || self.endpoints.front().listener_name != config_.inter_broker_listener_name)
      return error{base_errc::failed, "advertised.listeners must include the inter-broker listener " + config_.inter_broker_listener_name};
    if (self.endpoints.front().security_protocol != "PLAINTEXT")
      return error{base_errc::failed, "the inter-broker listener " + config_.inter_broker_listener_name + " uses " +
                                          self.endpoints.front().security_protocol +
                                          ": Sluice brokers replicate over PLAINTEXT only (for now); name a PLAINTEXT "
                                          "listener in inter.broker.listener.name"};
    self.host = self.endpoints.front().host;
    self.port = self.endpoints.front().port;
    self.listener_name = self.endpoints.front().listener_name;
    if (auto it = config_.values.find("broker.rack"); it != config_.values.end() && !it->second.empty()) self.rack = it->second;
    if (auto r = view_->start(self); !r) return error{base_errc::failed, "cannot register broker " + std::to_string(self.id) + " in ZooKeeper: " + r.err().message};
    replicas_->start();
  }
  maintenance_ = std::make_unique<log_maintenance>(io_.get_executor(), config_, *topics_, system_clock::instance());
  maintenance_->start();
  cleaner_ = std::make_unique<log_cleaner_manager>(config_, *topics_, system_clock::instance());
  cleaner_->start();

  // The HTTP side (broker/http/README.md). The default http.listeners is a convenience: when its port is
  // taken (a second broker on this machine) the broker warns and runs without HTTP; a listener the
  // configuration names must bind, or the broker does not start.
  if (!config_.http_listeners.empty()) {
    admin_ = std::make_unique<http::admin_api>(*services_);
    http::server_limits limits{config_.http_max_connections, config_.http_max_request_bytes, config_.http_request_timeout_ms};
    http_ = std::make_unique<http::http_server>(io_, limits, [this](const http::request& r, const http::peer_info& p) { return admin_->handle(r, p); });
    std::shared_ptr<boost::asio::ssl::context> http_tls;
    if (std::any_of(config_.http_listeners.begin(), config_.http_listeners.end(), [](const auto& e) { return e.tls; })) {
      // https:// listeners: the ssl.* keys as for a Kafka listener named HTTP (listener.name.http.ssl.* first).
      auto ctx = security::make_server_tls_context(config_, "HTTP");
      if (!ctx) return error{base_errc::failed, "http.listeners: " + ctx.err().message};
      http_tls = std::move(*ctx);
    }
    if (auto r = http_->listen(config_.http_listeners, http_tls); !r) {
      if (config_.explicit_keys.contains("http.listeners")) return r;
      log::warn("{}; no HTTP side (set http.listeners to choose another address, or to empty for none)", r.err().message);
      http_.reset();
    } else {
      http_->start();
    }
  }

  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    log::info("signal {} received, shutting down", signal);
    begin_shutdown();
  });

  unsigned n = config_.num_io_threads > 0 ? static_cast<unsigned>(config_.num_io_threads)
                                          : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { io_.run(); });

  std::string where;
  for (const auto& ep : server_->local_endpoints()) {
    if (!where.empty()) where += ", ";
    where += ep.address().is_v6() ? "[" + ep.address().to_string() + "]:" + std::to_string(ep.port())
                                  : ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  std::string http_where;
  if (http_)
    for (const auto& url : http_->urls()) http_where += (http_where.empty() ? ", HTTP on " : ", ") + url;
  std::string dirs;
  for (const auto& d : config_.log_dirs) dirs += (dirs.empty() ? "" : ",") + d.string();
  log::info("sluice broker {} started: listening on {}{}, {} topics, cluster id {}, log dirs {}", config_.broker_id,
            where, http_where, topics_->all().size(), services_->cluster_id, dirs);
  if (admin_) admin_->set_ready(true);
  return {};
}

void broker::begin_shutdown() {
  if (!cluster_mode_ || shutdown_thread_.joinable()) {
    stop();
    return;
  }
  // Controlled shutdown blocks on ZooKeeper round trips: not on an io thread, which must keep serving
  // followers while leadership moves away.
  shutdown_thread_ = std::thread([this] {
    const int64_t timeout_ms = 10000;
    if (replicas_) replicas_->stop_following();
    if (auto r = view_->controlled_shutdown(timeout_ms); !r) log::warn("controlled shutdown: {}", r.err().message);
    else log::info("controlled shutdown done: no partition is led here any more");
    stop();
  });
}

void broker::wait() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void broker::stop() {
  boost::asio::post(io_, [this] {
    if (server_) server_->stop();
    if (http_) http_->stop();
    io_.stop();
  });
}

void broker::close() {
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
  if (fetch_session_metrics_ != 0) metrics::process_registry().remove_collector(std::exchange(fetch_session_metrics_, 0));
  if (cleaner_) cleaner_->stop();  // before the logs close: a pass under way is dropped
  // The refreshers read the store, which stops below; left running they would log its errors at process exit.
  if (quotas_) quotas_->stop();
  if (authorizer_) authorizer_->stop();
  if (replicas_) replicas_->stop();
  if (cluster_mode_ && view_) view_->stop();  // closes the session: the registration goes at once
  if (topics_) topics_->close_all();
  if (logs_) logs_->close_all();
  log::info("logs flushed and closed");
}

}  // namespace sluice::broker
