#pragma once
// Fault injection (issue #18, DESIGN.md §6): rules that make requests fail on purpose, so that client retry and
// refresh paths can be tested from any language. Rules come from the HTTP admin side (`POST /v1/faults`,
// broker/http/README.md) and exist only when `sluice.test.faults.enable=true`; with no rule a request pays
// one relaxed atomic load.
//
// A rule names an API and an action, and applies to the next `count` matching requests or to a fraction
// `rate` of them (until deleted):
//   error  the request is not handled; its response carries `error` (per partition, per group or top level,
//          as Kafka's AbstractRequest.getErrorResponse builds it)
//   delay  the request is handled `delay_ms` later than it arrived
//   drop   the request is handled (it takes effect), its response is never sent; the connection stays open
//   close  the request is handled (it takes effect), then the connection is closed without its response
// optionally only for requests that mention `topic`, come with `client_id`, or over connection `connection`
// (the client's address and port as the broker sees it, "127.0.0.1:53422").
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/error_code.h"

namespace sluice::broker {

enum class fault_action { error, delay, drop, close };

std::string_view fault_action_name(fault_action a);
std::optional<fault_action> parse_fault_action(std::string_view name);

struct fault_rule {
  int64_t id = 0;                    // assigned by fault_injector::add
  int16_t api_key = 0;               // Kafka's API key
  fault_action action = fault_action::error;
  protocol::error_code error = protocol::error_code::none;  // for action error
  int64_t delay_ms = 0;              // for action delay
  std::optional<int64_t> remaining;  // count: how many more requests it applies to; nullopt: `rate`
  double rate = 1.0;                 // fraction of the matching requests (0..1) when no count is given
  std::optional<std::string> topic;
  std::optional<std::string> client_id;
  std::optional<std::string> connection;
  uint64_t applied = 0;              // requests it was applied to so far
};

/// What a request is, for matching.
struct fault_subject {
  int16_t api_key = 0;
  std::string_view client_id;
  std::string_view connection;
  /// True when the request names the topic (by name or id); called only for rules with a topic.
  std::function<bool(std::string_view topic)> mentions_topic;
};

/// Thread-safe: rules are kept under a mutex, taken only when at least one rule exists.
class fault_injector {
 public:
  fault_injector(bool enabled, uint64_t seed) : enabled_(enabled), rng_(seed) {}

  /// `sluice.test.faults.enable`: without it, add() refuses and match() never matches.
  bool enabled() const { return enabled_; }

  /// Adds a rule and returns its id (ids start at 1 and are never reused in a process).
  int64_t add(fault_rule r);
  /// False when there is no rule `id`.
  bool remove(int64_t id);
  void clear();
  std::vector<fault_rule> list() const;

  /// The first rule (in order of addition) that matches `s` and fires (its count not used up, or its rate
  /// drawn), with its count decremented; a rule whose count reaches 0 is removed. nullopt: none applies.
  std::optional<fault_rule> match(const fault_subject& s);

  /// Whether any rule exists for `api_key` (no lock: one relaxed load when there are none at all).
  bool any_for(int16_t api_key) const;

 private:
  bool enabled_;
  std::atomic<int> count_{0};
  mutable std::mutex mutex_;
  std::vector<fault_rule> rules_;
  int64_t next_id_ = 1;
  std::mt19937_64 rng_;
};

}  // namespace sluice::broker
