#include "coordination/zk/zk_options.h"

#include <cctype>
#include <optional>
#include <type_traits>

#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

result<zk_options> zk_options::from_config(const std::map<std::string, std::string>& props) {
  zk_options o;
  auto bad = [](const std::string& key, const std::string& v) {
    return error{zk_errc::malformed, "invalid value for " + key + ": " + v};
  };
  auto get_int = [&](const std::string& key, int64_t lo, int64_t hi, auto& out) -> std::optional<error> {
    auto it = props.find(key);
    if (it == props.end() || it->second.empty()) return std::nullopt;  // unset: the default
    int64_t v = 0;
    if (!detail::parse_int(it->second, v) || v < lo || v > hi) return bad(key, it->second);
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return std::nullopt;
  };
  auto get_bool = [&](const std::string& key, bool& out) -> std::optional<error> {
    auto it = props.find(key);
    if (it == props.end() || it->second.empty()) return std::nullopt;
    std::string v;
    for (char c : it->second) v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (v == "true") out = true;
    else if (v == "false") out = false;
    else return bad(key, it->second);
    return std::nullopt;
  };
  if (auto it = props.find("zookeeper.connect"); it != props.end()) o.connect = it->second;
  int64_t interval_s = o.leader_imbalance_check_interval_ms / 1000;
  for (auto e : {get_int("zookeeper.session.timeout.ms", 1, INT32_MAX, o.session_timeout_ms),
                 get_int("zookeeper.connection.timeout.ms", 1, INT32_MAX, o.connection_timeout_ms),
                 get_bool("unclean.leader.election.enable", o.unclean_leader_election),
                 get_bool("auto.leader.rebalance.enable", o.auto_leader_rebalance),
                 get_int("leader.imbalance.check.interval.seconds", 1, INT32_MAX, interval_s),
                 get_int("leader.imbalance.per.broker.percentage", 0, 100, o.leader_imbalance_per_broker_percentage),
                 get_int("sluice.zookeeper.registration.retry.ms", 0, INT32_MAX, o.registration_retry_ms)}) {
    if (e) return *e;
  }
  o.leader_imbalance_check_interval_ms = interval_s * 1000;
  if (auto e = get_int("sluice.leader.imbalance.check.interval.ms", 1, INT64_MAX, o.leader_imbalance_check_interval_ms))
    return *e;
  return o;
}

}  // namespace sluice::coordination::zk
