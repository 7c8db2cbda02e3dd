#pragma once
// Client byte-rate quotas (KIP-13, KIP-55, throttling as KIP-219): producer_byte_rate and consumer_byte_rate of
// users and client ids, set with AlterClientQuotas (KIP-546) and kept in the users'/clients' entity configs
// (ZooKeeper /config/users/<user>, /config/clients/<client-id>, "<default>" for the defaults).
//
// The quota of a request is the first that is set of: the user, the default user, the client id, the default
// client id (combined user+client-id quotas are not supported). Each user or client id so limited has its own
// rate, measured as Kafka's sampled Rate: quota.window.num samples of quota.window.size.seconds. When the rate
// including this request exceeds the quota the broker answers with throttle_time_ms = (rate - quota) / quota *
// window and then does not read that connection's next request until the throttle time has passed, as Kafka
// mutes the channel (KIP-219).
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/periodic_thread.h"
#include "base/result.h"
#include "coordination/cluster_store.h"

namespace sluice::broker {

/// The quota keys of a user or client id (Kafka's QuotaConfig), all numbers.
inline constexpr const char* quota_keys[] = {"producer_byte_rate", "consumer_byte_rate", "request_percentage",
                                             "controller_mutation_rate"};
/// Kafka's name of the default entity in ZooKeeper paths.
inline constexpr const char* default_quota_entity = "<default>";

/// A windowed rate (bytes per second) of quota.window.num samples of `sample_ms` each.
class sampled_rate {
 public:
  sampled_rate(int32_t samples, int64_t sample_ms);
  void record(double value, int64_t now_ms);
  /// Units per second over the live samples; the window counts at least samples-1 full samples.
  double rate(int64_t now_ms) const;
  /// The window the rate divides by (ms), for the throttle time.
  int64_t window_ms(int64_t now_ms) const;

 private:
  struct sample {
    int64_t start_ms = 0;
    double value = 0;
    bool used = false;
  };
  int64_t sample_ms_;
  std::vector<sample> samples_;
  size_t current_ = 0;
};

class quota_manager {
 public:
  enum class kind { produce, fetch };

  /// `now_ms`: the broker's monotonic clock. `refresh_ms`: how often the quotas are re-read from the store.
  quota_manager(coordination::cluster_store& store, int32_t window_num, int32_t window_size_seconds,
                int32_t refresh_ms = 500);
  ~quota_manager();
  quota_manager(const quota_manager&) = delete;
  quota_manager& operator=(const quota_manager&) = delete;

  /// Reads the quotas from the store now (the previous ones stay when it fails).
  result<void> reload();
  /// Starts the refresh thread (stopped by the destructor).
  void start();

  /// Records `bytes` of a request of `user` (principal name without "User:") and `client_id`; returns the
  /// throttle time in ms (0 when no quota applies or the rate is within it).
  int32_t record(kind k, const std::string& user, const std::string& client_id, int64_t bytes, int64_t now_ms);
  /// The entity configs of "users" or "clients" as the store holds them (quota keys and others).
  result<std::map<std::string, std::map<std::string, std::string>>> entity_configs(const std::string& type) const {
    return store_.entity_configs(type);
  }
  /// Replaces one entity's configs in the store; reload() makes them apply here at once.
  result<void> set_entity_configs(const std::string& type, const std::string& name,
                                  std::map<std::string, std::string> configs) {
    return store_.set_entity_configs(type, name, std::move(configs));
  }
  /// The quota (bytes/s) that applies, if any.
  std::optional<double> quota_of(kind k, const std::string& user, const std::string& client_id) const;

 private:
  using entity_map = std::map<std::string, std::map<std::string, std::string>>;
  int32_t window_num_;
  int64_t window_size_ms_;
  coordination::cluster_store& store_;
  int32_t refresh_ms_;
  mutable std::mutex mutex_;
  entity_map users_, clients_;
  std::map<std::string, sampled_rate> rates_;  // "<kind>/<level>/<name>"
  periodic_thread refresher_;  // last member: stopped first
};

}  // namespace sluice::broker
