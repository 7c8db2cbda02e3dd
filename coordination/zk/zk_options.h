#pragma once
// Cluster mode settings: Kafka's broker keys for ZooKeeper, the controller's election and rebalance, and
// two Sluice keys. Shared by every part of zk_cluster (zk_cluster.h describes the parts).
#include <cstdint>
#include <map>
#include <string>

#include "base/result.h"

namespace sluice::coordination::zk {

/// Settings, with Kafka's broker keys and defaults (zk_options::from_config reads them).
struct zk_options {
  std::string connect;                            // zookeeper.connect: host:port[,host:port...][/chroot]
  int32_t session_timeout_ms = 18000;             // zookeeper.session.timeout.ms
  int32_t connection_timeout_ms = -1;             // zookeeper.connection.timeout.ms (-1: the session timeout)
  bool unclean_leader_election = false;           // unclean.leader.election.enable (topic config overrides)
  bool auto_leader_rebalance = true;              // auto.leader.rebalance.enable
  int64_t leader_imbalance_check_interval_ms = 300'000;  // leader.imbalance.check.interval.seconds * 1000
  int32_t leader_imbalance_per_broker_percentage = 10;   // leader.imbalance.per.broker.percentage
  /// How long start() keeps retrying when the broker id is registered by another session (a restarted
  /// broker whose previous session has not expired yet). 0: fail at once, as Kafka does.
  int64_t registration_retry_ms = 0;              // sluice.zookeeper.registration.retry.ms

  int32_t effective_connection_timeout_ms() const {
    return connection_timeout_ms > 0 ? connection_timeout_ms : session_timeout_ms;
  }
  /// Reads the keys above from broker properties (missing keys keep the defaults;
  /// `sluice.leader.imbalance.check.interval.ms`, when present, overrides the seconds key for tests).
  /// Errors: zk_errc::malformed naming the key with a bad value.
  static result<zk_options> from_config(const std::map<std::string, std::string>& props);
};

}  // namespace sluice::coordination::zk
