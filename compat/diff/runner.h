#pragma once
// runner: what scenarios and the random mode share: the two brokers, the versions both serve, sending
// one step to both, normalising, comparing, and applying compat/diff/known.txt.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "compat/diff/broker_client.h"
#include "compat/diff/normalise.h"

namespace sluice::diff {

/// One line of known.txt: differences that stay (KNOWN.md explains each).
struct known_difference {
  std::string api;      // Kafka API name or "*", optionally "@lo-hi" (versions) after it: "Produce@0-2"
  std::string pattern;  // path glob
  std::string why;
};

std::vector<known_difference> load_known(const std::string& path);

/// Per broker state of one scenario run: variables saved from responses, renaming maps.
struct side_state {
  std::map<std::string, boost::json::value> vars;
  rename_maps maps;
};

/// The outcome of one step on both brokers.
struct step_report {
  std::vector<difference> unexplained;
  std::vector<std::pair<difference, std::string>> known;  // with the reason
  boost::json::value kafka_raw, sluice_raw;                // before normalisation
};

class runner {
 public:
  runner(broker_client& kafka, broker_client& sluice, std::vector<known_difference> known, int64_t base_ms)
      : kafka_(kafka), sluice_(sluice), known_(std::move(known)), base_ms_(base_ms) {}

  /// N14 (the random mode): DescribeLogDirs `partition_size` compared as the growth since the previous listing of
  /// the same partition by the same broker, so that a difference is reported where it arose and not again in
  /// every later listing of all topics.
  void compare_log_dir_growth(bool on) { log_dir_growth_ = on; }

  broker_client& kafka() { return kafka_; }
  broker_client& sluice() { return sluice_; }
  int64_t base_ms() const { return base_ms_; }
  /// Api keys both advertise, with the versions both serve and Sluice's codec defines: [lo, hi].
  const std::map<int16_t, std::pair<int16_t, int16_t>>& common() const { return common_; }
  const std::set<int16_t>& common_keys() const { return common_keys_; }
  void compute_common();

  /// Replaces %t, $var, $id:<topic>, $now[+-N] in `v` for one side.
  boost::json::value substitute(const boost::json::value& v, const std::string& prefix, side_state& side,
                                broker_client& b);

  /// Sends the request JSON `kafka_req` / `sluice_req` (already substituted) to both brokers at once, normalises and
  /// compares; `ignore` are extra path globs of this step.
  step_report exchange(int16_t api_key, int16_t version, const boost::json::value& kafka_req,
                       const boost::json::value& sluice_req, side_state& ks, side_state& ss,
                       const std::vector<std::string>& ignore, int timeout_ms, const frame_edit& edit,
                       const std::vector<known_difference>& extra_known = {});

 private:
  using size_map = std::map<std::pair<std::string, int64_t>, int64_t>;  // (topic, partition) -> last size seen
  /// N14: replaces each partition_size of a DescribeLogDirs answer by its growth since `last`, then records it.
  static void to_growth(boost::json::value& response, size_map& last);
  bool log_dir_growth_ = false;
  size_map kafka_sizes_, sluice_sizes_;
  boost::json::value result_json(const exchange_result& r);

  broker_client& kafka_;
  broker_client& sluice_;
  std::vector<known_difference> known_;
  int64_t base_ms_;
  std::map<int16_t, std::pair<int16_t, int16_t>> common_;
  std::set<int16_t> common_keys_;
};

/// Api key of a Kafka API name ("Metadata"), -1 when unknown.
int16_t api_key_of(const std::string& name);

}  // namespace sluice::diff
