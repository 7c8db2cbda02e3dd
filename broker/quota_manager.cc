#include "broker/quota_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "base/logging.h"

namespace sluice::broker {

namespace {
/// Kafka's replication.quota.window.num default (samples of replication.quota.window.size.seconds = 1).
constexpr int32_t replication_windows = 11;
}  // namespace

sampled_rate::sampled_rate(int32_t samples, int64_t sample_ms)
    : sample_ms_(std::max<int64_t>(1, sample_ms)), samples_(static_cast<size_t>(std::max(2, samples))) {}

void sampled_rate::record(double value, int64_t now_ms) {
  sample* s = &samples_[current_];
  if (!s->used || now_ms >= s->start_ms + sample_ms_) {
    if (s->used) current_ = (current_ + 1) % samples_.size();
    s = &samples_[current_];
    *s = sample{now_ms, 0, true};
  }
  s->value += value;
  last_ms_ = now_ms;
}

int64_t sampled_rate::window_ms(int64_t now_ms) const {
  const int64_t horizon = now_ms - static_cast<int64_t>(samples_.size()) * sample_ms_;
  int64_t oldest = now_ms;
  for (const auto& s : samples_)
    if (s.used && s.start_ms > horizon) oldest = std::min(oldest, s.start_ms);
  int64_t elapsed = now_ms - oldest;
  // Kafka's Rate: a young window still counts samples-1 full samples, so a burst is not a huge rate.
  const int64_t full = elapsed / sample_ms_;
  const int64_t min_full = static_cast<int64_t>(samples_.size()) - 1;
  if (full < min_full) elapsed += (min_full - full) * sample_ms_;
  return std::max<int64_t>(1, elapsed);
}

double sampled_rate::rate(int64_t now_ms) const {
  const int64_t horizon = now_ms - static_cast<int64_t>(samples_.size()) * sample_ms_;
  double total = 0;
  for (const auto& s : samples_)
    if (s.used && s.start_ms > horizon) total += s.value;
  return total * 1000.0 / static_cast<double>(window_ms(now_ms));
}

quota_manager::quota_manager(coordination::cluster_store& store, int32_t window_num, int32_t window_size_seconds,
                             int32_t refresh_ms)
    : window_num_(window_num),
      window_size_ms_(int64_t{window_size_seconds} * 1000),
      store_(store),
      refresh_ms_(refresh_ms),
      leader_replication_(replication_windows, 1000),
      follower_replication_(replication_windows, 1000) {}

quota_manager::~quota_manager() { refresher_.stop(); }

void quota_manager::start() {
  refresher_.start(std::chrono::milliseconds(refresh_ms_), [this] {
    if (auto r = reload(); !r) log::warn("client quotas not refreshed: {}", r.err().message);
  });
}

void quota_manager::set_connection_rate_limits(double broker_rate, std::map<std::string, double> listener_rates,
                                               std::string inter_broker_listener) {
  std::lock_guard lock(mutex_);
  broker_connection_rate_ = broker_rate;
  listener_connection_rates_ = std::move(listener_rates);
  inter_broker_listener_ = std::move(inter_broker_listener);
}

result<void> quota_manager::reload() {
  auto users = store_.entity_configs("users");
  if (!users) return users.err();
  auto clients = store_.entity_configs("clients");
  if (!clients) return clients.err();
  auto ips = store_.entity_configs("ips");
  if (!ips) return ips.err();
  auto names = store_.entity_names("users");
  if (!names) return names.err();
  auto brokers = store_.entity_configs("brokers");
  if (!brokers) return brokers.err();
  std::map<std::pair<std::string, std::string>, config_map> user_clients;
  for (const auto& user : *names) {
    auto nested = store_.entity_configs("users/" + user + "/clients");
    if (!nested) return nested.err();
    for (auto& [client_id, configs] : *nested) user_clients[{user, client_id}] = std::move(configs);
  }
  std::lock_guard lock(mutex_);
  users_ = std::move(*users);
  clients_ = std::move(*clients);
  ips_ = std::move(*ips);
  user_clients_ = std::move(user_clients);
  brokers_ = std::move(*brokers);
  return {};
}

namespace {

std::optional<double> number_in(const std::map<std::string, std::string>& configs, const char* key) {
  auto v = configs.find(key);
  if (v == configs.end()) return std::nullopt;
  double d = 0;
  const auto& text = v->second;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(d > 0)) return std::nullopt;
  return d;
}

template <typename Map, typename Key>
std::optional<double> number_of(const Map& entities, const Key& name, const char* key) {
  auto e = entities.find(name);
  if (e == entities.end()) return std::nullopt;
  return number_in(e->second, key);
}

const char* key_of(quota_manager::kind k) {
  switch (k) {
    case quota_manager::kind::produce: return "producer_byte_rate";
    case quota_manager::kind::fetch: return "consumer_byte_rate";
    case quota_manager::kind::request: return "request_percentage";
  }
  return "";
}

}  // namespace

std::optional<quota_manager::resolved> quota_manager::resolve(const char* key, const std::string& user,
                                                              const std::string& client_id) const {
  const std::string d = default_quota_entity;
  const std::string both = std::string(key) + "/user-client/" + user + "\n" + client_id;
  const std::string user_only = std::string(key) + "/user/" + user;
  const std::string client_only = std::string(key) + "/client/" + client_id;
  if (auto q = number_of(user_clients_, std::pair{user, client_id}, key)) return resolved{*q, both};
  if (auto q = number_of(user_clients_, std::pair{user, d}, key)) return resolved{*q, both};
  if (auto q = number_of(users_, user, key)) return resolved{*q, user_only};
  if (auto q = number_of(user_clients_, std::pair{d, client_id}, key)) return resolved{*q, both};
  if (auto q = number_of(user_clients_, std::pair{d, d}, key)) return resolved{*q, both};
  if (auto q = number_of(users_, d, key)) return resolved{*q, user_only};
  if (auto q = number_of(clients_, client_id, key)) return resolved{*q, client_only};
  if (auto q = number_of(clients_, d, key)) return resolved{*q, client_only};
  return std::nullopt;
}

std::optional<double> quota_manager::quota_of(kind k, const std::string& user, const std::string& client_id) const {
  std::lock_guard lock(mutex_);
  auto r = resolve(key_of(k), user, client_id);
  if (!r) return std::nullopt;
  return r->quota;
}

int32_t quota_manager::record_locked(const std::string& rate_key, double quota, double value, int64_t now_ms) {
  // Rates idle for longer than their window (and a minute) are dropped, so many short-lived client ids do
  // not pile up (Kafka expires its quota sensors after an hour).
  const int64_t window_total = int64_t{window_num_} * window_size_ms_;
  if (now_ms - last_purge_ms_ > window_total) {
    std::erase_if(rates_, [&](const auto& e) { return now_ms - e.second.last_ms() > std::max<int64_t>(window_total, 60000); });
    last_purge_ms_ = now_ms;
  }
  auto it = rates_.try_emplace(rate_key, window_num_, window_size_ms_).first;
  it->second.record(value, now_ms);
  const double rate = it->second.rate(now_ms);
  if (rate <= quota) return 0;
  const double throttle = (rate - quota) / quota * static_cast<double>(it->second.window_ms(now_ms));
  return static_cast<int32_t>(std::min(throttle, static_cast<double>(window_total)));
}

int32_t quota_manager::record(kind k, const std::string& user, const std::string& client_id, int64_t bytes,
                              int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto r = resolve(key_of(k), user, client_id);
  if (!r) return 0;
  return record_locked(r->rate_key, r->quota, static_cast<double>(bytes), now_ms);
}

int32_t quota_manager::record_request_time(const std::string& user, const std::string& client_id, int64_t time_us,
                                           int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto r = resolve(key_of(kind::request), user, client_id);
  if (!r) return 0;
  // Percent of one thread: 10 ms of work in a second is 1 (Kafka records nanoseconds * 100 / 1e9).
  return record_locked(r->rate_key, r->quota, static_cast<double>(time_us) / 10000.0, now_ms);
}

int64_t quota_manager::record_accept(const std::string& listener, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  int64_t wait = 0;
  if (auto it = listener_connection_rates_.find(listener); it != listener_connection_rates_.end() && it->second > 0)
    wait = std::max<int64_t>(wait, record_locked("connections/listener/" + listener, it->second, 1, now_ms));
  if (broker_connection_rate_ > 0 && listener != inter_broker_listener_)
    wait = std::max<int64_t>(wait, record_locked("connections/broker", broker_connection_rate_, 1, now_ms));
  return wait;
}

int64_t quota_manager::record_ip_connection(const std::string& ip, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto quota = number_of(ips_, ip, ip_quota_key);
  if (!quota) quota = number_of(ips_, std::string(default_quota_entity), ip_quota_key);
  if (!quota) return 0;
  const std::string rate_key = std::string("connections/ip/") + ip;
  const int32_t throttle = record_locked(rate_key, *quota, 1, now_ms);
  if (throttle > 0) rates_.at(rate_key).record(-1, now_ms);  // Kafka does not count a refused connection
  return throttle;
}

std::map<std::string, std::string> quota_manager::broker_configs(const std::string& entity) const {
  auto all = store_.entity_configs("brokers");
  if (!all) return {};
  auto it = all->find(entity);
  return it == all->end() ? std::map<std::string, std::string>{} : it->second;
}

void quota_manager::set_broker_id(int32_t id) {
  std::lock_guard lock(mutex_);
  broker_entity_ = std::to_string(id);
}

std::optional<double> quota_manager::replication_limit_locked(replication_side side) const {
  const char* key = side == replication_side::leader ? leader_throttled_rate : follower_throttled_rate;
  if (auto own = number_of(brokers_, broker_entity_, key)) return own;
  return number_of(brokers_, std::string(default_quota_entity), key);
}

std::optional<double> quota_manager::replication_limit(replication_side side) const {
  std::lock_guard lock(mutex_);
  return replication_limit_locked(side);
}

bool quota_manager::replication_exceeded(replication_side side, int64_t now_ms) const {
  std::lock_guard lock(mutex_);
  auto limit = replication_limit_locked(side);
  if (!limit) return false;
  const auto& rate = side == replication_side::leader ? leader_replication_ : follower_replication_;
  return rate.rate(now_ms) > *limit;
}

void quota_manager::record_replication(replication_side side, int64_t bytes, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  (side == replication_side::leader ? leader_replication_ : follower_replication_).record(static_cast<double>(bytes), now_ms);
}

}  // namespace sluice::broker
