#include "broker/broker.h"

#include "base/logging.h"
#include "broker/topic_config.h"
#include "coordination/embedded_store.h"

namespace sluice::broker {

broker::broker(broker_config config) : config_(std::move(config)), io_(), signals_(io_, SIGINT, SIGTERM) {}

result<void> broker::start() {
  if (!config_.zookeeper_connect.empty())
    return error{1, "zookeeper.connect is set, but cluster mode is not available in this build yet; "
                    "unset it to run the embedded single-node mode"};
  for (const auto& dir : config_.log_dirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return error{1, "cannot create log dir " + dir.string() + ": " + ec.message()};
  }
  auto store = coordination::embedded_store::open(config_.log_dirs.front());
  if (!store) return error{1, "cannot open cluster metadata: " + store.err().message};
  store_ = std::move(*store);

  logs_ = std::make_unique<storage::log_manager>(config_.log_dirs, make_log_config(config_, {}),
                                                 system_clock::instance());
  if (auto r = logs_->load(); !r) return error{1, "cannot load logs: " + r.err().message};
  topics_ = std::make_unique<topic_registry>(config_, *store_, *logs_, io_.get_executor());
  if (auto r = topics_->load(); !r) return r;

  context_ = std::unique_ptr<handler_context>(
      new handler_context{config_, *topics_, system_clock::instance(), store_->cluster_id(), nullptr});
  groups_ = std::make_unique<group_service>(config_, *topics_, system_clock::instance());
  context_->groups = groups_.get();
  producer_ids_ = std::make_unique<producer_id_manager>(*store_, config_.broker_id);
  context_->producer_ids = producer_ids_.get();
  faults_ = std::make_unique<fault_injector>(config_.test_fault_produce_drop_response_rate, config_.test_fault_seed);
  context_->faults = faults_.get();
  if (faults_->enabled())
    log::warn("TEST HOOK ACTIVE: sluice.test.fault.produce.drop.response.rate={} (seed {}): Produce responses are "
              "dropped on purpose", config_.test_fault_produce_drop_response_rate, config_.test_fault_seed);
  groups_->start();  // replays __consumer_offsets if it exists
  server_ = std::make_unique<net::server>(io_, *context_);
  if (auto r = server_->listen(config_.listeners); !r) return r;
  server_->start();
  maintenance_ = std::make_unique<log_maintenance>(io_.get_executor(), config_, *topics_, system_clock::instance());
  maintenance_->start();

  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    log::info("signal {} received, shutting down", signal);
    stop();
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
  log::info("sluice broker {} started: listening on {}, {} topics, cluster id {}, log dirs {}", config_.broker_id,
            where, topics_->all().size(), context_->cluster_id, config_.log_dirs.front().string());
  return {};
}

void broker::wait() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void broker::stop() {
  boost::asio::post(io_, [this] {
    if (server_) server_->stop();
    io_.stop();
  });
}

void broker::close() {
  if (topics_) topics_->close_all();
  if (logs_) logs_->close_all();
  log::info("logs flushed and closed");
}

}  // namespace sluice::broker
