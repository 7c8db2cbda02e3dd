#include "compat/diff/random_mode.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "compat/diff/scenario.h"
#include "protocol/api_key.h"
#include "protocol/messages/fields.h"

namespace sluice::diff {
namespace {

/// Values of one seed: its topics and groups, and the generator.
struct pools {
  std::mt19937_64 rng;
  std::string prefix;
  int16_t api = 0;
  int16_t version = 0;
  int pick(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  template <typename T>
  T of(std::initializer_list<T> l) {
    return *(l.begin() + pick(static_cast<int>(l.size())));
  }
  std::string topic() {
    if (api == 19 || api == 20)  // CreateTopics, DeleteTopics: topics of their own, the others stay
      return of<std::string>({prefix + "-c", prefix + "-d", prefix + "-missing", "bad topic!", ""});
    if (api == 3 && version < 4)  // Metadata v0-3 always auto-create, which Kafka does asynchronously (KNOWN.md)
      return of<std::string>({prefix + "-a", prefix + "-b", "bad topic!"});
    return of<std::string>({prefix + "-a", prefix + "-a", prefix + "-b", prefix + "-missing", "bad topic!", ""});
  }
  std::string group() { return of<std::string>({prefix + "-g1", prefix + "-g1", prefix + "-g2", ""}); }
};

/// What makes two generated array elements duplicates: a scalar's value, a struct's first key field.
std::string element_key(const boost::json::value& e) {
  if (!e.is_object()) return boost::json::serialize(e);
  for (const char* k : {"name", "topic", "topic_id", "partition_index", "partition", "index", "group_id", "key_",
                        "resource_name", "member_id", "api_key", "transactional_id", "producer_id"})
    if (auto it = e.as_object().find(k); it != e.as_object().end()) return k + boost::json::serialize(it->value());
  return boost::json::serialize(e);
}

bool has(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

boost::json::value string_value(pools& p, std::string_view n) {
  if (n == "name" || has(n, "topic")) return boost::json::string(p.topic());
  if (has(n, "group_id") || n == "key_" || n == "coordinator_keys" || n == "states_filter" || n == "groups")
    return boost::json::string(p.group());
  if (has(n, "member_id")) return boost::json::string(p.of<std::string>({"", "", "unknown-member"}));
  if (has(n, "group_instance_id")) return boost::json::string(p.of<std::string>({"inst-1", "inst-2"}));
  if (n == "protocol_type") return boost::json::string(p.of<std::string>({"consumer", "consumer", "other"}));
  if (n == "protocol_name" || n == "protocol") return boost::json::string(p.of<std::string>({"range", "roundrobin"}));
  if (n == "resource_name") return boost::json::string(p.of<std::string>({p.prefix + "-a", p.prefix + "-missing", ""}));
  if (n == "value")
    return boost::json::string(p.of<std::string>({"86400000", "compact", "delete", "-5", "abc", "1048576"}));
  if (has(n, "config") || n == "name")
    return boost::json::string(p.of<std::string>({"retention.ms", "cleanup.policy", "bogus.config", "segment.bytes"}));
  if (has(n, "metadata") || has(n, "committed_metadata")) return boost::json::string(p.of<std::string>({"", "m"}));
  if (has(n, "mechanism")) return boost::json::string(p.of<std::string>({"PLAIN", "GSSAPI", "NOPE"}));
  if (has(n, "rack")) return boost::json::string(p.of<std::string>({"", "r1"}));
  return boost::json::string(p.of<std::string>({"", "x", p.prefix + "-a"}));
}

int64_t int_value(pools& p, std::string_view n, int bits) {
  if (n == "acks") return p.of<int64_t>({-1, 1, 0});
  if (has(n, "partition") || n == "index" || n == "partitions" || (has(n, "replica") && bits == 32 && !has(n, "replica_id")))
    return p.of<int64_t>({-1, 0, 0, 1, 2, 3});
  if (n == "replica_id") return p.of<int64_t>({-1, -1, -1, 0});
  if (has(n, "count") || n == "num_partitions") return p.of<int64_t>({-1, 1, 2, 4});
  if (n == "replication_factor") return p.of<int64_t>({-1, 1, 2});
  if (has(n, "session_timeout")) return p.of<int64_t>({6000, 10000, 10});
  if (has(n, "rebalance_timeout")) return p.of<int64_t>({-1, 200, 500});
  if (n == "session_id") return 0;      // no fetch sessions (KNOWN.md K4): full fetches only
  if (n == "session_epoch") return -1;
  if (has(n, "max_wait")) return p.of<int64_t>({0, 0, 50});
  if (n == "timeout_ms") return p.of<int64_t>({100, 5000});  // 0: see scenario "timeout 0" of CreateTopics
  if (has(n, "timeout")) return p.of<int64_t>({0, 100, 60000});
  if (has(n, "generation")) return p.of<int64_t>({-1, 0, 1, 2});
  if (has(n, "epoch")) return p.of<int64_t>({-1, 0, 1});
  if (has(n, "timestamp")) return p.of<int64_t>({-1, -2, -3, 0, 1, 1000});  // relative values fixed below
  if (has(n, "offset")) return p.of<int64_t>({-2, -1, 0, 1, 3, 10, 1000});
  if (has(n, "max_bytes")) return p.of<int64_t>({0, 1, 100, 1048576});
  if (has(n, "isolation")) return p.of<int64_t>({0, 1});
  if (has(n, "producer_id")) return p.of<int64_t>({-1, -1, 0, 1});
  if (has(n, "sequence")) return p.of<int64_t>({-1, 0});
  if (n == "resource_type") return p.of<int64_t>({2, 2, 2, 0, 99});
  if (has(n, "key_type")) return p.of<int64_t>({0, 0, 5});
  // An unknown config operation fails Kafka's whole IncrementalAlterConfigs request with an internal error (K7, in
  // the scenarios): not drawn here, where it would hide the request's other resources.
  if (has(n, "operation") || n == "config_operation") return p.of<int64_t>({0, 1, 2, 3});
  if (has(n, "error")) return 0;
  if (bits == 8) return p.of<int64_t>({0, 1, -1});
  return p.of<int64_t>({-1, 0, 1, 2});
}

template <typename T>
boost::json::value gen(pools& p, std::string_view n, int16_t version, bool nullable, int depth);

template <typename S>
boost::json::value gen_struct(pools& p, int16_t version, int depth) {
  boost::json::object o;
  S s{};
  protocol::field_list<S>::each(s, [&](auto& member, const protocol::field_info& info) {
    if (!info.present(version)) return;
    if (info.tagged && p.chance(70)) return;  // tagged fields: mostly left at their defaults
    using M = std::remove_cvref_t<decltype(member)>;
    o[info.name] = gen<M>(p, info.name, version, info.nullable(version), depth + 1);
  });
  return o;
}

template <typename T>
boost::json::value gen(pools& p, std::string_view n, int16_t version, bool nullable, int depth) {
  if constexpr (is_optional<T>::value) {
    // Null only where nullable, and then rarely; transactional ids stay null (transactions: issue #16).
    // AlterConfigs values may be null (the crash they once caused is fixed since af85361; the case stays in
    // scenarios/destructive/alter_configs_null_value.json).
    // Produce's records stay non-null: Kafka 4.4 never answers a null records field (K6).
    if (n == "transactional_id" ||
        (nullable && p.chance(15) && n != "records_"))
      return nullptr;
    return gen<typename T::value_type>(p, n, version, false, depth);
  } else if constexpr (protocol::has_field_list<T>) {
    return gen_struct<T>(p, version, depth);
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    // Bytes: a consumer protocol subscription/assignment v0 with no topics, or empty.
    return boost::json::string(p.chance(80) ? "000000000000ffffffff" : "");
  } else if constexpr (is_vector<T>::value) {
    // Distinct elements only (by value, or by the struct's key field): duplicates are a case of their own
    // (scenarios "duplicate ..."), which would otherwise hide every other difference of the request.
    boost::json::array a;
    std::set<std::string> keys;
    int len = depth > 4 ? 0 : p.of<int>({0, 1, 1, 1, 2});
    // AddPartitionsToTxn v4+ with no transactions: Kafka 4.4 never answers (K11).
    if (p.api == 24 && n == "transactions" && len == 0) len = 1;
    for (int i = 0; i < len; ++i) {
      boost::json::value e = gen<typename T::value_type>(p, n, version, false, depth);
      if (keys.insert(element_key(e)).second) a.push_back(std::move(e));
    }
    return a;
  } else if constexpr (std::is_same_v<T, protocol::error_code>) {
    return 0;
  } else if constexpr (std::is_same_v<T, protocol::uuid>) {
    if (p.api == 20)  // DeleteTopics: ids of its own topics only (deleting -a or -b by id ends the seed's topics)
      return boost::json::string(p.of<std::string>({"$id:" + p.prefix + "-c", "$id:" + p.prefix + "-d", "zero",
                                                    "AAAAAAAAAAAAAAAAAAAAAQ"}));
    if (p.api == 1)  // Fetch: no zero id (K13: beside an unknown partition it fails Kafka's whole fetch)
      return boost::json::string(p.of<std::string>({"$id:" + p.prefix + "-a", "$id:" + p.prefix + "-b", "AAAAAAAAAAAAAAAAAAAAAQ"}));
    return boost::json::string(p.of<std::string>({"$id:" + p.prefix + "-a", "$id:" + p.prefix + "-b", "zero",
                                                  "AAAAAAAAAAAAAAAAAAAAAQ"}));
  } else if constexpr (std::is_same_v<T, protocol::records>) {
    boost::json::object spec{{"count", p.of<int>({1, 1, 3})}, {"codec", p.chance(30) ? "gzip" : "none"}};
    if (p.chance(10)) spec["bad_crc"] = true;
    return spec;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return string_value(p, n);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (n == "allow_auto_topic_creation") return false;  // auto-creation is asynchronous in Kafka
    return p.chance(50);
  } else if constexpr (std::is_same_v<T, double>) {
    return 0.0;
  } else {
    int64_t v = int_value(p, n, static_cast<int>(sizeof(T) * 8));
    if (has(n, "timestamp") && v >= 0) return boost::json::string("$now+" + std::to_string(v));
    return static_cast<T>(v);
  }
}

std::string signature(int16_t api, int16_t version, const std::string& path) {
  std::string p;  // indexes dropped: one signature per field
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      p += "[]";
      i = path.find(']', i);
      continue;
    }
    p += path[i];
  }
  return std::string(protocol::api_name(api)) + " v" + std::to_string(version) + " " + p;
}

/// One step of a seed's sequence, as run_sequence hands it over: the request's position (1-based), API, version,
/// the generated request and both answers. Returns false to stop the sequence.
using step_visitor = std::function<bool(int64_t n, int16_t key, int16_t version, const boost::json::value& req,
                                        const step_report& rep)>;

/// Runs up to `count` requests of `seed`'s sequence with topic and group names under `prefix` (its two topics made
/// first), each through `visit`. The same seed gives the same requests under any prefix. Returns false when the
/// setup failed (message in `error`).
bool run_sequence(runner& run, const random_options& opt, uint64_t seed, const std::string& prefix, int64_t count,
                  const std::function<bool()>& out_of_time, const step_visitor& visit, std::string& error) {
  std::vector<int16_t> keys;
  for (const auto& [k, r] : run.common()) keys.push_back(k);
  pools p{std::mt19937_64(seed), prefix};
  if (!create_topic_both(run, p.prefix + "-a", 3, {}, error) || !create_topic_both(run, p.prefix + "-b", 1, {}, error))
    return false;
  side_state ks, ss;
  run.kafka().forget_ids();
  run.sluice().forget_ids();
  for (int64_t i = 0; i < count && !out_of_time(); ++i) {
    const int16_t key = keys[p.pick(static_cast<int>(keys.size()))];
    const auto [lo, hi] = run.common().at(key);
    const int16_t version = static_cast<int16_t>(lo + p.pick(hi - lo + 1));
    p.api = key;
    p.version = version;
    boost::json::value req;
    protocol::visit_request_type(key, [&](auto tag) {
      using req_t = typename decltype(tag)::type;
      req = gen_struct<req_t>(p, version, 0);
    });
    step_report rep;
    // Random requests stand alone: member and producer ids are renamed per response (N5, N6), so that one
    // earlier difference (a member one broker added) does not shift every later name.
    ks.maps = {};
    ss.maps = {};
    try {
      const auto kq = run.substitute(req, p.prefix, ks, run.kafka());
      const auto sq = run.substitute(req, p.prefix, ss, run.sluice());
      rep = run.exchange(key, version, kq, sq, ks, ss, {}, opt.timeout_ms, {});
    } catch (const std::exception& e) {
      std::cout << "random: seed " << seed << " request " << i + 1 << ": ERROR " << e.what() << "\n";
      continue;
    }
    // Kafka creates new partitions' logs a moment after CreateTopics/CreatePartitions answer (the controller's
    // metadata reaches the broker asynchronously; Sluice creates them before answering): after a creation that
    // succeeded on Kafka, give it that moment before the next request (bounded: 300 ms).
    if ((key == 19 || key == 37) && !(req.as_object().contains("validate_only") && req.at("validate_only") == true) &&
        rep.kafka_raw.is_object() && boost::json::serialize(rep.kafka_raw).find("\"error_code\":\"NONE\"") != std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (!visit(i + 1, key, version, req, rep)) break;
  }
  return true;
}

}  // namespace

bool run_random(runner& run, const random_options& opt, random_totals& totals) {
  run.compare_log_dir_growth(true);  // N14
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto out_of_time = [&] { return elapsed() >= opt.time_limit_s; };
  // A seed's topic and group names: r<seed>-<run> (the run's start time keeps runs on the same brokers apart).
  auto seed_prefix = [&](uint64_t seed) {
    return "r" + std::to_string(seed) + "-" + std::to_string(run.base_ms() % 100000);
  };
  std::set<std::string> seen;
  int lost_in_a_row = 0;
  int replays = 0;
  bool stopped = false;  // Sluice refuses connections
  // A difference the seed's sequence does not give again, on fresh names against the same brokers, was a race with
  // a real-time deadline (a member's session or a rebalance timeout ending within milliseconds of the request on
  // one broker and not yet on the other): replays its first `n` requests and tells whether request n differs again.
  auto reproduces = [&](uint64_t seed, int64_t n) {
    ++replays;
    const std::string prefix = seed_prefix(seed) + "-p" + std::to_string(replays);
    bool differs = true;  // a replay that cannot run proves nothing
    std::string error;
    run_sequence(run, opt, seed, prefix, n, out_of_time,
                 [&](int64_t i, int16_t, int16_t, const boost::json::value&, const step_report& rep) {
                   if (i == n) differs = !rep.unexplained.empty();
                   return true;
                 },
                 error);
    return differs;
  };
  for (int64_t si = 0; si < opt.seeds && !out_of_time() && !stopped; ++si) {
    const uint64_t seed = opt.seed + static_cast<uint64_t>(si);
    const std::string prefix = seed_prefix(seed);
    std::string error;
    auto visit = [&](int64_t n, int16_t key, int16_t version, const boost::json::value& req, const step_report& rep) {
      ++totals.requests;
      if (opt.trace)
        std::cout << "trace: #" << n << " " << protocol::api_name(key) << " v" << version << " "
                  << boost::json::serialize(req) << "\n  kafka:  " << boost::json::serialize(rep.kafka_raw).substr(0, 1500)
                  << "\n  sluice: " << boost::json::serialize(rep.sluice_raw).substr(0, 1500) << "\n";
      const bool sluice_lost = rep.sluice_raw.is_string() && !rep.kafka_raw.is_string();
      if (sluice_lost) ++totals.sluice_lost;
      lost_in_a_row = rep.sluice_raw == "<connect failed>" ? lost_in_a_row + 1 : 0;
      if (!rep.unexplained.empty()) {
        const bool timing = !sluice_lost && replays < opt.max_replays && !reproduces(seed, n);
        if (timing) {
          ++totals.timing;
        } else {
          ++totals.differing;
          totals.unexplained += static_cast<int64_t>(rep.unexplained.size());
        }
        bool fresh = false;
        for (const auto& d : rep.unexplained) fresh = seen.insert(signature(key, version, d.path)).second || fresh;
        if (fresh || opt.verbose || timing) {
          std::cout << "random: " << (timing ? "not reproduced on replay (timing)" : "difference") << ": seed " << seed
                    << " request " << n << " (replay: --random --seed " << seed << " --count " << n << ") "
                    << protocol::api_name(key) << " v" << version << "\n";
          std::cout << "  request: " << boost::json::serialize(req) << "\n";
          for (const auto& d : rep.unexplained)
            std::cout << "  " << d.path << ": kafka=" << d.kafka << " sluice=" << d.sluice << "\n";
          if (opt.verbose) {
            std::cout << "  kafka:  " << boost::json::serialize(rep.kafka_raw).substr(0, 3000) << "\n";
            std::cout << "  sluice: " << boost::json::serialize(rep.sluice_raw).substr(0, 3000) << "\n";
          }
        }
        if (opt.stop_on_first && !timing) return false;
      }
      if (lost_in_a_row >= 3) {
        std::cout << "random: Sluice refuses connections (crashed?) at seed " << seed << " request " << n << "\n";
        stopped = true;
        return false;
      }
      return true;
    };
    if (!run_sequence(run, opt, seed, prefix, opt.count, out_of_time, visit, error)) {
      std::cout << "random: seed " << seed << ": setup failed: " << error << "\n";
      return false;
    }
    if (stopped) return false;
    if (opt.stop_on_first && totals.differing > 0) return true;
    ++totals.seeds_done;
    totals.last_seed = seed;
  }
  return true;
}

}  // namespace sluice::diff
