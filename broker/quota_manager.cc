#include "broker/quota_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "base/logging.h"

namespace sluice::broker {

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
      refresh_ms_(refresh_ms) {}

quota_manager::~quota_manager() { refresher_.stop(); }

void quota_manager::start() {
  refresher_.start(std::chrono::milliseconds(refresh_ms_), [this] {
    if (auto r = reload(); !r) log::warn("client quotas not refreshed: {}", r.err().message);
  });
}

result<void> quota_manager::reload() {
  auto users = store_.entity_configs("users");
  if (!users) return users.err();
  auto clients = store_.entity_configs("clients");
  if (!clients) return clients.err();
  std::lock_guard lock(mutex_);
  users_ = std::move(*users);
  clients_ = std::move(*clients);
  return {};
}

namespace {

std::optional<double> number_of(const std::map<std::string, std::map<std::string, std::string>>& entities,
                                const std::string& name, const char* key) {
  auto e = entities.find(name);
  if (e == entities.end()) return std::nullopt;
  auto v = e->second.find(key);
  if (v == e->second.end()) return std::nullopt;
  double d = 0;
  const auto& text = v->second;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(d > 0)) return std::nullopt;
  return d;
}

}  // namespace

std::optional<double> quota_manager::quota_of(kind k, const std::string& user, const std::string& client_id) const {
  const char* key = k == kind::produce ? "producer_byte_rate" : "consumer_byte_rate";
  std::lock_guard lock(mutex_);
  if (auto q = number_of(users_, user, key)) return q;
  if (auto q = number_of(users_, default_quota_entity, key)) return q;
  if (auto q = number_of(clients_, client_id, key)) return q;
  return number_of(clients_, default_quota_entity, key);
}

int32_t quota_manager::record(kind k, const std::string& user, const std::string& client_id, int64_t bytes,
                              int64_t now_ms) {
  const char* key = k == kind::produce ? "producer_byte_rate" : "consumer_byte_rate";
  std::lock_guard lock(mutex_);
  // The level that sets the quota names the rate: each user (or client id) has its own, defaults included.
  std::optional<double> quota;
  std::string rate_key;
  if ((quota = number_of(users_, user, key)) || (quota = number_of(users_, default_quota_entity, key))) {
    rate_key = std::string(key) + "/user/" + user;
  } else if ((quota = number_of(clients_, client_id, key)) ||
             (quota = number_of(clients_, default_quota_entity, key))) {
    rate_key = std::string(key) + "/client/" + client_id;
  } else {
    return 0;
  }
  auto it = rates_.try_emplace(rate_key, window_num_, window_size_ms_).first;
  it->second.record(static_cast<double>(bytes), now_ms);
  const double rate = it->second.rate(now_ms);
  if (rate <= *quota) return 0;
  const double throttle = (rate - *quota) / *quota * static_cast<double>(it->second.window_ms(now_ms));
  const double cap = static_cast<double>(window_num_) * static_cast<double>(window_size_ms_);
  return static_cast<int32_t>(std::min(throttle, cap));
}

}  // namespace sluice::broker
