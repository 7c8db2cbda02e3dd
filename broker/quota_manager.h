#pragma once
// Client quotas (KIP-13, KIP-55, KIP-124, KIP-612; throttling as KIP-219): producer_byte_rate,
// consumer_byte_rate and request_percentage of users, client ids and users per client id, and
// connection_creation_rate of client addresses, set with AlterClientQuotas (KIP-546) and kept in the entities'
// configs (ZooKeeper /config/users/<user>, /config/clients/<client-id>, /config/users/<user>/clients/<client-id>,
// /config/ips/<ip>; "<default>" names a default entity). Also the broker's own connection creation limits,
// max.connection.creation.rate and listener.name.<l>.max.connection.creation.rate (KIP-612).
//
// The quota of a request is, for each quota key on its own, the first that is set of Kafka's eight levels:
//   /config/users/<user>/clients/<client-id>, /config/users/<user>/clients/<default>, /config/users/<user>,
//   /config/users/<default>/clients/<client-id>, /config/users/<default>/clients/<default>,
//   /config/users/<default>, /config/clients/<client-id>, /config/clients/<default>.
// The level names the rate it is measured against, as Kafka's metric tags: (user, client id) for the
// user+client-id levels, the user for the user levels, the client id for the client levels; so each user or
// client id has its own rate even under a default quota. Rates are Kafka's sampled Rate: quota.window.num
// samples of quota.window.size.seconds. When the rate including this request exceeds the quota the broker
// answers with throttle_time_ms = (rate - quota) / quota * window and then does not read that connection's
// next request until the throttle time has passed, as Kafka mutes the channel (KIP-219).
//
// request_percentage counts the time the broker spent on a client's requests (decode, handler, encode; not
// the time parked in purgatory waiting for data or replication) in percent of one thread: 100 is one thread
// kept busy (KIP-124).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/periodic_thread.h"
#include "base/result.h"
#include "coordination/cluster_store.h"

namespace sluice::broker {

/// The quota keys of users and client ids (Kafka's QuotaConfig), all numbers.
inline constexpr const char* quota_keys[] = {"producer_byte_rate", "consumer_byte_rate", "request_percentage",
                                             "controller_mutation_rate"};
/// The quota key of client addresses (KIP-612), connections per second.
inline constexpr const char* ip_quota_key = "connection_creation_rate";
/// Kafka's name of the default entity in ZooKeeper paths.
inline constexpr const char* default_quota_entity = "<default>";

/// A windowed rate (units per second) of quota.window.num samples of `sample_ms` each.
class sampled_rate {
 public:
  sampled_rate(int32_t samples, int64_t sample_ms);
  void record(double value, int64_t now_ms);
  /// Units per second over the live samples; the window counts at least samples-1 full samples.
  double rate(int64_t now_ms) const;
  /// The window the rate divides by (ms), for the throttle time.
  int64_t window_ms(int64_t now_ms) const;
  /// When the last value was recorded (ms), for dropping idle rates.
  int64_t last_ms() const { return last_ms_; }

 private:
  struct sample {
    int64_t start_ms = 0;
    double value = 0;
    bool used = false;
  };
  int64_t sample_ms_;
  std::vector<sample> samples_;
  size_t current_ = 0;
  int64_t last_ms_ = 0;
};

class quota_manager {
 public:
  enum class kind { produce, fetch, request };

  /// `now_ms`: the broker's monotonic clock. `refresh_ms`: how often the quotas are re-read from the store.
  quota_manager(coordination::cluster_store& store, int32_t window_num, int32_t window_size_seconds,
                int32_t refresh_ms = 500);
  ~quota_manager();
  quota_manager(const quota_manager&) = delete;
  quota_manager& operator=(const quota_manager&) = delete;

  /// The broker's connection creation limits in connections per second (KIP-612): `broker_rate`
  /// (max.connection.creation.rate, not applied to `inter_broker_listener`) and per listener
  /// (listener.name.<l>.max.connection.creation.rate). Call before start().
  void set_connection_rate_limits(double broker_rate, std::map<std::string, double> listener_rates,
                                  std::string inter_broker_listener);

  /// Reads the quotas from the store now (the previous ones stay when it fails).
  result<void> reload();
  /// Starts the refresh thread (stopped by the destructor).
  void start();
  /// Stops the refresh thread (joins it; idempotent). The broker never destroys this object (broker.h), so
  /// close() calls this before the store closes: a refresh failing then would log after log::shutdown().
  void stop() { refresher_.stop(); }

  /// Records `bytes` of a produce or fetch request of `user` (principal name without "User:") and
  /// `client_id`; returns the throttle time in ms (0 when no quota applies or the rate is within it).
  int32_t record(kind k, const std::string& user, const std::string& client_id, int64_t bytes, int64_t now_ms);
  /// Records `time_us` microseconds the broker spent on one request (request_percentage); the throttle time.
  int32_t record_request_time(const std::string& user, const std::string& client_id, int64_t time_us, int64_t now_ms);
  /// The quota that applies to `k` (bytes/s; percent for kind::request), if any.
  std::optional<double> quota_of(kind k, const std::string& user, const std::string& client_id) const;

  /// A connection accepted on `listener`: counts it in the listener's and the broker's creation rate and
  /// returns how long (ms) the listener should wait before accepting the next (0: at once).
  int64_t record_accept(const std::string& listener, int64_t now_ms);
  /// A connection from `ip` (address text): counts it against the address's connection_creation_rate and
  /// returns 0, or, over the quota, the throttle time (ms) after which Kafka closes the connection unread (the
  /// refused connection is not counted then).
  int64_t record_ip_connection(const std::string& ip, int64_t now_ms);

  /// Replication throttles (KIP-73; Kafka's ReplicationQuotaManager): this broker's dynamic configs
  /// leader.replication.throttled.rate and follower.replication.throttled.rate (bytes/s), read from the store's
  /// "brokers" entities (ZooKeeper /config/brokers/<id>, else /config/brokers/<default>) with the quotas. The
  /// leader side counts bytes it sends to throttled followers, the follower side bytes it fetches for throttled
  /// replicas; each over replication_windows samples of one second (Kafka's replication.quota.window.* defaults).
  enum class replication_side { leader, follower };
  /// The dynamic broker configs Sluice takes (Kafka's DynamicConfig.Broker; LONG bytes per second, at least 0),
  /// kept as "brokers" entities: <id> for one broker, default_quota_entity for the cluster-wide default.
  static constexpr const char* leader_throttled_rate = "leader.replication.throttled.rate";
  static constexpr const char* follower_throttled_rate = "follower.replication.throttled.rate";
  static constexpr std::string_view dynamic_broker_configs[] = {leader_throttled_rate, follower_throttled_rate,
                                                                "replica.alter.log.dirs.io.max.bytes.per.second"};
  /// One "brokers" entity's dynamic configs as the store holds them now (empty when none or unreadable).
  std::map<std::string, std::string> broker_configs(const std::string& entity) const;
  /// This broker's id, whose entity holds its rates. Call before start().
  void set_broker_id(int32_t id);
  /// The side's rate limit in bytes/s, nullopt when none is set.
  std::optional<double> replication_limit(replication_side side) const;
  /// True when the side's measured rate is above its limit (false without a limit).
  bool replication_exceeded(replication_side side, int64_t now_ms) const;
  /// Counts `bytes` replicated for throttled replicas on `side`.
  void record_replication(replication_side side, int64_t bytes, int64_t now_ms);

  /// The entity configs of "users", "clients", "ips" or "users/<user>/clients" as the store holds them.
  result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(const std::string& type) const {
    return store_.entity_configs(type);
  }
  /// The names of the entities of `type`, including those that hold only nested entities.
  result<std::vector<std::string>> entity_names(const std::string& type) const { return store_.entity_names(type); }
  /// Replaces one entity's configs in the store; reload() makes them apply here at once.
  result<void> set_entity_configs(const std::string& type, const std::string& name,
                                  std::map<std::string, std::string> configs) {
    return store_.set_entity_configs(type, name, std::move(configs));
  }

 private:
  using config_map = std::map<std::string, std::string>;
  using entity_map = std::map<std::string, config_map>;
  struct resolved {
    double quota;
    std::string rate_key;
  };
  /// Kafka's eight levels for `key`; the caller holds mutex_.
  std::optional<resolved> resolve(const char* key, const std::string& user, const std::string& client_id) const;
  /// Records `value` against `rate_key`, returns the throttle time for `quota`; the caller holds mutex_.
  int32_t record_locked(const std::string& rate_key, double quota, double value, int64_t now_ms);

  int32_t window_num_;
  int64_t window_size_ms_;
  coordination::cluster_store& store_;
  int32_t refresh_ms_;
  mutable std::mutex mutex_;
  entity_map users_, clients_, ips_;
  std::map<std::pair<std::string, std::string>, config_map> user_clients_;  // (user, client id) -> configs
  std::map<std::string, sampled_rate> rates_;  // "<key>/<level>/<names>"
  std::optional<double> replication_limit_locked(replication_side side) const;  // under mutex_
  std::string broker_entity_ = "-1";  // this broker's id as its "brokers" entity name
  entity_map brokers_;  // "brokers" entities: the replication throttle rates
  sampled_rate leader_replication_, follower_replication_;
  double broker_connection_rate_ = 0;          // 0: no limit
  std::map<std::string, double> listener_connection_rates_;
  std::string inter_broker_listener_;
  int64_t last_purge_ms_ = 0;
  periodic_thread refresher_;  // last member: stopped first
};

}  // namespace sluice::broker
