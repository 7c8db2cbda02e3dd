#pragma once
// Test support: the services broker::start builds on a single node, for tests that drive the dispatcher, the
// handlers or the coordinator runtime directly on their own clock and io_context.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "broker/broker_services.h"
#include "broker/config.h"
#include "broker/fault_injection.h"
#include "broker/group_service.h"
#include "broker/producer_id_manager.h"
#include "broker/quota_manager.h"
#include "broker/security/credential_store.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"
#include "broker/txn_service.h"
#include "coordination/embedded_store.h"
#include "storage/log_manager.h"

namespace sluice::broker::testing {

/// A fresh log dir under the temporary directory, named `prefix`-pid-test name, with an embedded store, the logs,
/// the topic registry, the group service, producer ids, no faults and the broker_services over them. `open` records
/// a fatal gtest failure when a part cannot be built (check HasFatalFailure()); the destructor closes the logs and
/// removes the dir.
struct single_node {
  std::filesystem::path dir;
  std::unique_ptr<broker_config> config;
  std::unique_ptr<coordination::embedded_store> store;
  std::unique_ptr<storage::log_manager> logs;
  std::unique_ptr<topic_registry> topics;
  std::unique_ptr<group_service> groups;
  std::unique_ptr<txn_service> txns;
  std::unique_ptr<producer_id_manager> ids;
  fault_injector faults{0, 1};
  std::unique_ptr<security::credential_store> credentials;
  std::unique_ptr<quota_manager> quotas;
  std::unique_ptr<broker_services> services;

  /// `properties`: broker keys besides log.dirs (e.g. broker.id). Topics and timers run on `io` and `clock`.
  void open(const std::string& prefix, std::map<std::string, std::string> properties, sluice::clock& clock,
            boost::asio::io_context& io) {
    dir = std::filesystem::temp_directory_path() /
          (prefix + "-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    properties["log.dirs"] = dir.string();
    auto c = make_config(properties, {});
    ASSERT_TRUE(c.ok()) << c.err().message;
    config = std::make_unique<broker_config>(std::move(*c));
    auto s = coordination::embedded_store::open(dir);
    ASSERT_TRUE(s.ok()) << s.err().message;
    store = std::move(*s);
    logs = std::make_unique<storage::log_manager>(config->log_dirs, make_log_config(*config, {}), clock);
    ASSERT_TRUE(logs->load().ok());
    topics = std::make_unique<topic_registry>(*config, *store, *logs, io.get_executor());
    ASSERT_TRUE(topics->load().ok());
    groups = std::make_unique<group_service>(*config, *topics, clock);
    ids = std::make_unique<producer_id_manager>(*store, config->broker_id);
    txns = std::make_unique<txn_service>(*config, *topics, clock, *ids, *groups, io.get_executor());
    credentials = std::make_unique<security::credential_store>(*store);
    services = std::unique_ptr<broker_services>(new broker_services{*config, *topics, *store, *groups, *txns, *ids, faults,
                                                                    clock, *credentials, store->cluster_id(), nullptr});
    quotas = std::make_unique<quota_manager>(*store, 11, 1);
    services->quotas = quotas.get();
  }

  ~single_node() {
    if (topics) topics->close_all();
    if (logs) logs->close_all();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

}  // namespace sluice::broker::testing
