#include "broker/fault_injection.h"

#include <algorithm>

namespace sluice::broker {

std::string_view fault_action_name(fault_action a) {
  switch (a) {
    case fault_action::error: return "error";
    case fault_action::delay: return "delay";
    case fault_action::drop: return "drop";
    case fault_action::close: return "close";
  }
  return "?";
}

std::optional<fault_action> parse_fault_action(std::string_view name) {
  for (auto a : {fault_action::error, fault_action::delay, fault_action::drop, fault_action::close})
    if (fault_action_name(a) == name) return a;
  return std::nullopt;
}

int64_t fault_injector::add(fault_rule r) {
  std::lock_guard lock(mutex_);
  r.id = next_id_++;
  r.applied = 0;
  rules_.push_back(r);
  count_.store(static_cast<int>(rules_.size()), std::memory_order_relaxed);
  return r.id;
}

bool fault_injector::remove(int64_t id) {
  std::lock_guard lock(mutex_);
  const auto n = std::erase_if(rules_, [&](const fault_rule& r) { return r.id == id; });
  count_.store(static_cast<int>(rules_.size()), std::memory_order_relaxed);
  return n > 0;
}

void fault_injector::clear() {
  std::lock_guard lock(mutex_);
  rules_.clear();
  count_.store(0, std::memory_order_relaxed);
}

std::vector<fault_rule> fault_injector::list() const {
  std::lock_guard lock(mutex_);
  return rules_;
}

bool fault_injector::any_for(int16_t api_key) const {
  if (!enabled_ || count_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mutex_);
  return std::any_of(rules_.begin(), rules_.end(), [&](const fault_rule& r) { return r.api_key == api_key; });
}

std::optional<fault_rule> fault_injector::match(const fault_subject& s) {
  if (!enabled_ || count_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    auto& r = *it;
    if (r.api_key != s.api_key) continue;
    if (r.client_id && *r.client_id != s.client_id) continue;
    if (r.connection && *r.connection != s.connection) continue;
    if (r.topic && !(s.mentions_topic && s.mentions_topic(*r.topic))) continue;
    if (!r.remaining && r.rate < 1.0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) >= r.rate) continue;
    ++r.applied;
    fault_rule fired = r;
    if (r.remaining && --*r.remaining <= 0) {
      rules_.erase(it);
      count_.store(static_cast<int>(rules_.size()), std::memory_order_relaxed);
    }
    return fired;
  }
  return std::nullopt;
}

}  // namespace sluice::broker
