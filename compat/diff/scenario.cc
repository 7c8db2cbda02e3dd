#include "compat/diff/scenario.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "protocol/api_key.h"

namespace sluice::diff {
namespace {

std::pair<int16_t, int16_t> parse_range(const std::string& text, std::pair<int16_t, int16_t> all) {
  if (text.empty() || text == "all") return all;
  if (text.back() == '+') return {static_cast<int16_t>(std::stoi(text)), all.second};
  if (auto dash = text.find('-'); dash != std::string::npos)
    return {static_cast<int16_t>(std::stoi(text.substr(0, dash))), static_cast<int16_t>(std::stoi(text.substr(dash + 1)))};
  const auto v = static_cast<int16_t>(std::stoi(text));
  return {v, v};
}

std::string str_of(const boost::json::object& o, const char* k, std::string dflt = {}) {
  auto it = o.find(k);
  return it == o.end() ? dflt : std::string(it->value().as_string());
}

bool wait_leaders(broker_client& b, const std::string& topic, int partitions) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < deadline; ++i) {
    build_context ctx;
    boost::json::object req{{"topics", boost::json::array{boost::json::object{{"name", topic}}}},
                            {"allow_auto_topic_creation", false}};
    exchange_result r = b.call(static_cast<int16_t>(protocol::api_key::metadata), 12, req, ctx, 5000);
    if (r.how == outcome::response && r.decode_error.empty()) {
      const auto& t = r.body.at("topics").as_array();
      if (!t.empty() && t[0].at("error_code").as_string() == "NONE") {
        int ready = 0;
        for (const auto& p : t[0].at("partitions").as_array())
          if (p.at("error_code").as_string() == "NONE" && p.at("leader_id").as_int64() >= 0) ++ready;
        if (ready == partitions) return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

/// Kafka lists a leader in Metadata a moment before the partition serves (NOT_LEADER_OR_FOLLOWER): waits
/// (bounded) until ListOffsets (latest) answers every partition without error.
bool wait_serving(broker_client& b, const std::string& topic, int partitions) {
  boost::json::array parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(boost::json::object{{"partition_index", p}, {"current_leader_epoch", -1}, {"timestamp", -1}});
  boost::json::object req{{"replica_id", -1}, {"topics", boost::json::array{boost::json::object{{"name", topic}, {"partitions", parts}}}}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < deadline; ++i) {
    build_context ctx;
    exchange_result r = b.call(static_cast<int16_t>(protocol::api_key::list_offsets), 7, req, ctx, 5000);
    if (r.how == outcome::response && r.decode_error.empty()) {
      int ok = 0;
      for (const auto& p : r.body.at("topics").as_array()[0].at("partitions").as_array())
        if (p.at("error_code").as_string() == "NONE") ++ok;
      if (ok == partitions) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

void print_report(const std::string& title, const step_report& rep, const scenario_options& opt) {
  if (rep.unexplained.empty() && !(opt.verbose && !rep.known.empty()) && !opt.trace) return;
  std::cout << title << "\n";
  for (const auto& d : rep.unexplained)
    std::cout << "  " << d.path << ": kafka=" << d.kafka << " sluice=" << d.sluice << "\n";
  if (opt.verbose)
    for (const auto& [d, why] : rep.known)
      std::cout << "  (known) " << d.path << ": kafka=" << d.kafka << " sluice=" << d.sluice << "  # " << why << "\n";
  if (opt.verbose || opt.trace) {
    std::cout << "  kafka:  " << boost::json::serialize(rep.kafka_raw).substr(0, 4000) << "\n";
    std::cout << "  sluice: " << boost::json::serialize(rep.sluice_raw).substr(0, 4000) << "\n";
  }
}

/// Sugar steps of setups: create, produce, sleep_ms. Returns false on failure (message in error).
bool run_sugar(runner& run, const boost::json::object& step, const std::string& prefix, side_state& ks,
               side_state& ss, std::string& error) {
  if (step.contains("sleep_ms")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(step.at("sleep_ms").to_number<int64_t>(), 10000)));
    return true;
  }
  if (step.contains("create")) {
    const std::string topic = std::string(run.substitute(step.at("create"), prefix, ks, run.kafka()).as_string());
    const int parts = step.contains("partitions") ? step.at("partitions").to_number<int>() : 1;
    boost::json::object configs = step.contains("configs") ? step.at("configs").as_object() : boost::json::object{};
    return create_topic_both(run, topic, parts, configs, error);
  }
  if (step.contains("produce")) {
    boost::json::object req{{"acks", -1}, {"timeout_ms", 5000},
                            {"topic_data", boost::json::array{boost::json::object{
                                {"name", step.at("produce")},
                                {"partition_data", boost::json::array{boost::json::object{
                                    {"index", step.contains("partition") ? step.at("partition") : boost::json::value(0)},
                                    {"records", step.contains("records") ? step.at("records") : boost::json::object{}}}}}}}}};
    const auto kq = run.substitute(req, prefix, ks, run.kafka());
    const auto sq = run.substitute(req, prefix, ss, run.sluice());
    step_report rep = run.exchange(0, 9, kq, sq, ks, ss, {}, 10000, {});
    for (const auto* raw : {&rep.kafka_raw, &rep.sluice_raw}) {
      const auto* e = value_at(*raw, "responses[0].partition_responses[0].error_code");
      if (!e || *e != "NONE") {
        error = "setup produce failed: " + boost::json::serialize(*raw).substr(0, 300);
        return false;
      }
    }
    return true;
  }
  error = "unknown setup step " + boost::json::serialize(step);
  return false;
}

}  // namespace

bool create_topic_both(runner& run, const std::string& topic, int partitions, const boost::json::object& configs,
                       std::string& error) {
  boost::json::array cfg;
  for (const auto& kv : configs) cfg.push_back(boost::json::object{{"name", kv.key()}, {"value", kv.value()}});
  boost::json::object req{{"topics", boost::json::array{boost::json::object{{"name", topic},
                                                                            {"num_partitions", partitions},
                                                                            {"replication_factor", 1},
                                                                            {"configs", cfg}}}},
                          {"timeout_ms", 10000}};
  for (broker_client* b : {&run.kafka(), &run.sluice()}) {
    build_context ctx;
    exchange_result r = b->call(static_cast<int16_t>(protocol::api_key::create_topics), 7, req, ctx, 15000);
    const boost::json::value* e = r.how == outcome::response ? value_at(r.body, "topics[0].error_code") : nullptr;
    if (!e || (*e != "NONE" && *e != "TOPIC_ALREADY_EXISTS")) {
      error = b->name() + ": create " + topic + ": " + std::string(outcome_name(r.how)) + " " +
              (r.body.is_null() ? "" : boost::json::serialize(r.body).substr(0, 300));
      return false;
    }
    if (!wait_leaders(*b, topic, partitions) || !wait_serving(*b, topic, partitions)) {
      error = b->name() + ": " + topic + " not served after 10 s";
      return false;
    }
  }
  return true;
}

void run_scenario_file(runner& run, const std::string& file, const scenario_options& opt, scenario_totals& totals) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  boost::json::value doc;
  try {
    doc = boost::json::parse(ss.str());
  } catch (const std::exception& e) {
    std::cout << file << ": not JSON: " << e.what() << "\n";
    ++totals.errors;
    return;
  }
  const auto& root = doc.as_object();
  const std::string file_api = str_of(root, "api");
  int index = 0;
  const std::string stem = file.substr(file.find_last_of('/') + 1, file.rfind('.') - file.find_last_of('/') - 1);
  for (const auto& sv : root.at("scenarios").as_array()) {
    const auto& sc = sv.as_object();
    const std::string name = str_of(sc, "name", "#" + std::to_string(index));
    ++index;
    const std::string label = file_api + "/" + name;
    if (!opt.filter.empty() && label.find(opt.filter) == std::string::npos) continue;
    const std::string sweep_api = str_of(sc, "api", file_api);
    const int16_t sweep_key = api_key_of(sweep_api);
    auto common = run.common().find(sweep_key);
    if (sweep_key < 0 || common == run.common().end()) {
      std::cout << "[" << label << "] SKIP: " << sweep_api << " not served by both brokers\n";
      continue;
    }
    const auto range = parse_range(str_of(sc, "versions"), common->second);
    const int16_t lo = std::max(range.first, common->second.first);
    const int16_t hi = std::min(range.second, common->second.second);
    for (int16_t v = lo; v <= hi; ++v) {
      ++totals.runs;
      const std::string prefix = "d-" + stem + "-" + std::to_string(index) + "-v" + std::to_string(v) + "-" +
                                 std::to_string(run.base_ms() % 100000);
      side_state ks, ssd;
      run.kafka().forget_ids();
      run.sluice().forget_ids();
      std::string error;
      bool ok = true;
      if (sc.contains("setup"))
        for (const auto& st : sc.at("setup").as_array()) {
          if (st.as_object().contains("api")) continue;  // generic setup steps run below as uncompared steps
          if (!(ok = run_sugar(run, st.as_object(), prefix, ks, ssd, error))) break;
        }
      boost::json::array steps;
      if (sc.contains("setup"))
        for (const auto& st : sc.at("setup").as_array())
          if (st.as_object().contains("api")) {
            boost::json::object s = st.as_object();
            s["compare"] = false;
            steps.push_back(s);
          }
      if (sc.contains("steps"))
        for (const auto& st : sc.at("steps").as_array()) steps.push_back(st);
      else if (sc.contains("request"))
        steps.push_back(boost::json::object{{"request", sc.at("request")}, {"save", sc.contains("save") ? sc.at("save") : boost::json::object{}}});
      int step_no = 0;
      for (const auto& stv : steps) {
        if (!ok) break;
        const auto& st = stv.as_object();
        ++step_no;
        try {
          const std::string api = str_of(st, "api", sweep_api);
          const int16_t key = api_key_of(api);
          int16_t version = v;
          if (st.contains("version")) version = st.at("version").to_number<int16_t>();
          else if (api != sweep_api) {
            auto c = run.common().find(key);
            if (c == run.common().end()) throw std::runtime_error(api + " not served by both");
            version = c->second.second;
          }
          if (st.contains("sleep_ms"))
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(st.at("sleep_ms").to_number<int64_t>(), 10000)));
          const boost::json::value req = st.contains("request") ? st.at("request") : boost::json::object{};
          const auto kq = run.substitute(req, prefix, ks, run.kafka());
          const auto sq = run.substitute(req, prefix, ssd, run.sluice());
          std::vector<std::string> ignore;
          for (const auto* src : {&st, &sc})
            if (src->contains("ignore"))
              for (const auto& p : src->at("ignore").as_array()) ignore.emplace_back(p.as_string());
          frame_edit edit;
          if (st.contains("truncate")) edit.truncate = st.at("truncate").to_number<int64_t>();
          if (st.contains("append_hex")) edit.append_hex = std::string(st.at("append_hex").as_string());
          const int timeout = st.contains("timeout_ms") ? st.at("timeout_ms").to_number<int>() : opt.timeout_ms;
          std::vector<known_difference> known;  // "known": [{"path": glob, "why": "Kn: ..."}] of the step or scenario
          for (const auto* src : {&st, &sc})
            if (src->contains("known"))
              for (const auto& kv : src->at("known").as_array())
                known.push_back({"*", std::string(kv.at("path").as_string()), std::string(kv.at("why").as_string())});
          step_report rep = run.exchange(key, version, kq, sq, ks, ssd, ignore, timeout, edit, known);
          ++totals.requests;
          if (st.contains("save"))
            for (const auto& kv : st.at("save").as_object()) {
              const std::string path(kv.value().as_string());
              const auto* kvv = value_at(rep.kafka_raw, path);
              const auto* svv = value_at(rep.sluice_raw, path);
              if (kvv) ks.vars[std::string(kv.key())] = *kvv;
              if (svv) ssd.vars[std::string(kv.key())] = *svv;
            }
          if (st.contains("compare") && !st.at("compare").as_bool()) continue;
          totals.unexplained += static_cast<int64_t>(rep.unexplained.size());
          totals.known += static_cast<int64_t>(rep.known.size());
          std::ostringstream title;
          title << "[" << label << "] " << api << " v" << version << " step " << step_no << ":";
          print_report(title.str(), rep, opt);
        } catch (const std::exception& e) {
          std::cout << "[" << label << "] v" << v << " step " << step_no << ": ERROR " << e.what() << "\n";
          ++totals.errors;
          ok = false;
        }
      }
      if (!error.empty()) {
        std::cout << "[" << label << "] v" << v << ": SETUP FAILED " << error << "\n";
        ++totals.errors;
      }
    }
  }
}

}  // namespace sluice::diff
