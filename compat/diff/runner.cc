#include "compat/diff/runner.h"

#include <exception>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>

#include "protocol/api_traits.h"

namespace sluice::diff {

int16_t api_key_of(const std::string& name) {
  for (const auto& t : protocol::all_api_traits())
    if (t.name == name) return static_cast<int16_t>(t.key);
  return -1;
}

std::vector<known_difference> load_known(const std::string& path) {
  std::vector<known_difference> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    known_difference k;
    ls >> k.api >> k.pattern;
    std::getline(ls, k.why);
    const size_t start = k.why.find_first_not_of(' ');
    k.why = start == std::string::npos ? "" : k.why.substr(start);
    if (!k.pattern.empty()) out.push_back(k);
  }
  return out;
}

void runner::compute_common() {
  for (const auto& [key, kv] : kafka_.advertised()) {
    auto it = sluice_.advertised().find(key);
    const auto* traits = protocol::find_api_traits(key);
    if (it == sluice_.advertised().end() || traits == nullptr) continue;
    const int16_t lo = std::max({kv.first, it->second.first, traits->min_version});
    const int16_t hi = std::min({kv.second, it->second.second, traits->max_version});
    common_keys_.insert(key);
    if (lo <= hi) common_[key] = {lo, hi};
  }
}

boost::json::value runner::substitute(const boost::json::value& v, const std::string& prefix, side_state& side,
                                      broker_client& b) {
  if (v.is_object()) {
    boost::json::object o;
    for (const auto& kv : v.as_object()) o[kv.key()] = substitute(kv.value(), prefix, side, b);
    return o;
  }
  if (v.is_array()) {
    boost::json::array a;
    for (const auto& e : v.as_array()) a.push_back(substitute(e, prefix, side, b));
    return a;
  }
  if (!v.is_string()) return v;
  std::string s(v.as_string());
  for (size_t pos = s.find("%t"); pos != std::string::npos; pos = s.find("%t", pos + prefix.size()))
    s.replace(pos, 2, prefix);
  if (s.rfind("$now", 0) == 0) {
    int64_t off = s.size() > 4 ? std::stoll(s.substr(4)) : 0;
    return base_ms_ + off;
  }
  if (s.rfind("$repeat:", 0) == 0) {  // $repeat:N:TEXT
    const size_t colon = s.find(':', 8);
    const size_t n = std::min<size_t>(std::stoul(s.substr(8, colon - 8)), 10u << 20);
    const std::string unit = s.substr(colon + 1);
    std::string out;
    for (size_t i = 0; i < n; ++i) out += unit;
    return boost::json::string(out);
  }
  if (s.rfind("$id:", 0) == 0) return boost::json::string(b.topic_id(s.substr(4)));
  if (s.size() > 1 && s[0] == '$') {
    auto it = side.vars.find(s.substr(1));
    if (it == side.vars.end()) throw std::runtime_error("variable " + s + " not saved by an earlier step");
    return it->second;
  }
  return boost::json::string(s);
}

namespace {
/// "Produce@0-2" -> api Produce, versions 0..2; "*" any api.
bool known_applies(const known_difference& k, const std::string& api, int16_t version) {
  const auto at = k.api.find('@');
  const std::string name = k.api.substr(0, at);
  if (name != "*" && name != api) return false;
  if (at == std::string::npos) return true;
  const std::string range = k.api.substr(at + 1);
  const auto dash = range.find('-');
  const int lo = std::stoi(range.substr(0, dash));
  const int hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1));
  return lo <= version && version <= hi;
}
}  // namespace

boost::json::value runner::result_json(const exchange_result& r) {
  if (r.how != outcome::response) {
    if (r.no_response_expected && r.how == outcome::response) return nullptr;
    return boost::json::string(std::string(outcome_name(r.how)));
  }
  if (r.no_response_expected) return boost::json::string("<no response (acks=0), connection kept>");
  if (!r.decode_error.empty()) return boost::json::string("<undecodable: " + r.decode_error + ">");
  return r.body;
}

void runner::to_growth(boost::json::value& response, size_map& last) {
  if (!response.is_object()) return;
  auto* results = response.as_object().if_contains("results");
  if (!results || !results->is_array()) return;
  for (auto& dir : results->as_array()) {
    auto* topics = dir.is_object() ? dir.as_object().if_contains("topics") : nullptr;
    if (!topics || !topics->is_array()) continue;
    for (auto& t : topics->as_array()) {
      if (!t.is_object()) continue;
      const auto* name = t.as_object().if_contains("name");
      auto* parts = t.as_object().if_contains("partitions");
      if (!name || !name->is_string() || !parts || !parts->is_array()) continue;
      for (auto& p : parts->as_array()) {
        if (!p.is_object()) continue;
        auto& o = p.as_object();
        const auto* index = o.if_contains("partition_index");
        auto* size = o.if_contains("partition_size");
        if (!index || !index->is_int64() || !size || !size->is_int64()) continue;
        auto key = std::make_pair(std::string(name->as_string()), index->as_int64());
        const int64_t now = size->as_int64();
        auto it = last.find(key);
        *size = now - (it == last.end() ? 0 : it->second);
        last[key] = now;
      }
    }
  }
}

step_report runner::exchange(int16_t api_key, int16_t version, const boost::json::value& kafka_req,
                             const boost::json::value& sluice_req, side_state& ks, side_state& ss,
                             const std::vector<std::string>& ignore, int timeout_ms, const frame_edit& edit,
                             const std::vector<known_difference>& extra_known) {
  step_report rep;
  build_context kc{base_ms_, {}}, sc{base_ms_, {}};
  // Both brokers get the request at the same moment: sent one after the other, a request that Kafka parks
  // (a JoinGroup waiting for its rebalance) would reach Sluice only seconds later, after Sluice's own timers
  // (session expiry, rebalance timeout) fired, and the two groups' histories would part for that reason alone.
  // The two calls share no state: each has its own connection, correlation ids and build context.
  std::future<exchange_result> kafka_call = std::async(std::launch::async, [&] {
    return kafka_.call(api_key, version, kafka_req, kc, timeout_ms, edit);
  });
  std::optional<exchange_result> sluice_result;
  std::exception_ptr sluice_error;
  try {
    sluice_result = sluice_.call(api_key, version, sluice_req, sc, timeout_ms, edit);
  } catch (...) {
    sluice_error = std::current_exception();
  }
  const exchange_result kr = kafka_call.get();  // waits for Kafka's side; rethrows its exception
  if (sluice_error) std::rethrow_exception(sluice_error);
  const exchange_result& sr = *sluice_result;
  rep.kafka_raw = result_json(kr);
  rep.sluice_raw = result_json(sr);
  if (kr.no_response_expected && kr.how == outcome::response) rep.kafka_raw = "<no response (acks=0), connection kept>";
  if (sr.no_response_expected && sr.how == outcome::response) rep.sluice_raw = "<no response (acks=0), connection kept>";
  boost::json::value kn = rep.kafka_raw, sn = rep.sluice_raw;
  if (log_dir_growth_ && api_key == 35) {
    to_growth(kn, kafka_sizes_);
    to_growth(sn, sluice_sizes_);
  }
  normalise(kn, api_key, ks.maps, common_keys_);
  normalise(sn, api_key, ss.maps, common_keys_);
  const std::string api(protocol::api_name(api_key));
  // Kafka silent where Sluice answers gets a path of its own, so that known.txt can accept exactly that case
  // (K16) without accepting the other way round (Sluice silent, which the random mode counts as lost).
  const bool only_kafka_silent = kr.how == outcome::timeout && sr.how == outcome::response && !sr.no_response_expected;
  for (auto& d : compare(kn, sn)) {
    if (only_kafka_silent && d.path == "<response>") d.path = "<response:kafka-never-answered>";
    bool ignored = false;
    for (const auto& p : ignore) ignored = ignored || path_matches(p, d.path);
    if (ignored) continue;
    const known_difference* k = nullptr;
    for (const std::vector<known_difference>* list : {&extra_known, static_cast<const std::vector<known_difference>*>(&known_)})
      for (const auto& kd : *list)
        if (!k && known_applies(kd, api, version) &&
            (path_matches(kd.pattern, d.path) || (only_kafka_silent && path_matches(kd.pattern, "<response>"))))
          k = &kd;  // a "<response>" entry (K6, K11, K14 scenarios) covers the Kafka-silent case too
    if (k)
      rep.known.push_back({d, k->why});
    else
      rep.unexplained.push_back(d);
  }
  return rep;
}

}  // namespace sluice::diff
