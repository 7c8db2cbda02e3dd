#include "compat/diff/normalise.h"

#include <algorithm>
#include <map>
#include <set>

namespace sluice::diff {
namespace {

constexpr const char* zero_uuid = "AAAAAAAAAAAAAAAAAAAAAA";
// Keys by which arrays of structs are sorted (N10, "unordered arrays"), first match wins.
constexpr const char* sort_keys[] = {"name", "topic", "topic_name", "group_id", "transactional_id", "resource_name", "config_name",
                                     "partition_index", "partition", "index", "api_key", "key", "broker_id", "node_id",
                                     "producer_id", "user", "entity_type"};

void walk(boost::json::value& v, const std::string& key, rename_maps& maps, bool in_batch);

void rule(boost::json::value& v, const std::string& key, rename_maps& maps) {
  if (key == "throttle_time_ms" && v.is_int64()) {
    v = 0;  // N1 throttle
  } else if (key == "port" && v.is_int64()) {
    v = 0;  // N2 ports
  } else if (key == "session_id" && v.is_int64() && v.as_int64() != 0) {
    v = "<session-id>";  // N17 fetch session ids (KIP-227): random per broker; 0 (no session) stays 0
  } else if (key == "cluster_id" && v.is_string()) {
    v = "<cluster-id>";  // N3
  } else if ((key == "topic_id") && v.is_string() && v.as_string() != zero_uuid) {
    v = "<topic-id>";  // N4
  } else if ((key == "member_id" || key == "leader") && v.is_string() && !v.as_string().empty()) {
    std::string s(v.as_string());  // N5 member ids
    auto it = maps.members.find(s);
    if (it == maps.members.end())
      it = maps.members.emplace(s, "<member-" + std::to_string(maps.members.size() + 1) + ">").first;
    v = boost::json::string(it->second);
  } else if (key == "producer_id" && v.is_int64() && v.as_int64() >= 0) {
    auto it = maps.producer_ids.find(v.as_int64());  // N6 producer ids
    if (it == maps.producer_ids.end())
      it = maps.producer_ids.emplace(v.as_int64(), static_cast<int64_t>(maps.producer_ids.size()) + 1000000).first;
    v = it->second;
  } else if (key == "log_append_time_ms" && v.is_int64() && v.as_int64() != -1) {
    v = "<time>";  // N7 timestamps
  } else if (key == "error_message" && v.is_string()) {
    v = "<message>";  // N8 error messages
  } else if (key == "log_dir" && v.is_string()) {
    v = "<dir>";  // N9 log dirs
  } else if ((key == "total_bytes" || key == "usable_bytes") && v.is_int64() && v.as_int64() >= 0) {
    v = "<bytes>";
  }
}

std::string key_name_of(const boost::json::value& e) {
  if (!e.is_object()) return {};
  for (const char* k : sort_keys)
    if (e.as_object().contains(k)) return k;
  return {};
}

std::string sort_key_of(const boost::json::value& e) {
  if (!e.is_object()) return {};
  for (const char* k : sort_keys)
    if (auto it = e.as_object().find(k); it != e.as_object().end()) return boost::json::serialize(it->value());
  return {};
}

std::string member_sort_key(const boost::json::value& e) {
  if (!e.is_object()) return boost::json::serialize(e);
  boost::json::object o = e.as_object();
  o.erase("member_id");
  return boost::json::serialize(o);
}

/// Whether a field of this name holds record batches: Kafka's Records fields (`records_` as the generated codec
/// names them).
bool holds_batches(const std::string& key) { return key == "records" || key == "records_"; }

void walk(boost::json::value& v, const std::string& key, rename_maps& maps, bool in_batch) {
  if (v.is_object()) {
    auto& o = v.as_object();
    if (in_batch && o.contains("attributes") && (o.at("attributes").as_int64() & (8 | 32))) {
      // N7: LogAppendTime batches (attribute bit 3) and control batches (bit 5: transaction markers, written by
      // the broker itself) carry the broker's clock.
      o["base_timestamp"] = "<time>";
      o["max_timestamp"] = "<time>";
    }
    for (auto& kv : o) walk(kv.value(), std::string(kv.key()), maps, in_batch || holds_batches(key));
    return;
  }
  if (v.is_array()) {
    auto& a = v.as_array();
    // N10 first, then the elements: the renamings (N5, N6) then name ids in the sorted order, the same on both
    // sides whatever order each broker listed them in.
    if (key != "members" && key != "records" && !a.empty() && !sort_key_of(a[0]).empty()) {
      std::stable_sort(a.begin(), a.end(), [](const boost::json::value& x, const boost::json::value& y) {
        return sort_key_of(x) < sort_key_of(y);
      });
    }
    if (key == "members" && a.size() > 1) {
      // N13: group members in an order of their own (Kafka lists them from a hash map keyed by the random member
      // id): by what they carry besides the ids, before the ids are renamed.
      std::stable_sort(a.begin(), a.end(), [](const boost::json::value& x, const boost::json::value& y) {
        return member_sort_key(x) < member_sort_key(y);
      });
    }
    for (auto& e : a) walk(e, key, maps, in_batch || holds_batches(key));
    if (key == "entries" && a.size() > 1 &&
        std::all_of(a.begin(), a.end(), [](const boost::json::value& e) { return e.is_object() && e.as_object().contains("entity"); })) {
      // N16: client quota entries, by their entity (sorted by type above); Kafka lists them from a hash map.
      std::stable_sort(a.begin(), a.end(), [](const boost::json::value& x, const boost::json::value& y) {
        return boost::json::serialize(x.as_object().at("entity")) < boost::json::serialize(y.as_object().at("entity"));
      });
    }
    if (key == "members" && a.size() > 1) {
      // N13, ties: members that carry the same besides their ids keep each broker's hash order, in which ids named
      // earlier in the response (the leader, the member's own id) land at different places; once renamed, the ids
      // decide between them.
      std::stable_sort(a.begin(), a.end(), [](const boost::json::value& x, const boost::json::value& y) {
        return std::make_pair(member_sort_key(x), boost::json::serialize(x)) <
               std::make_pair(member_sort_key(y), boost::json::serialize(y));
      });
    }
    if (key == "partitions" && !a.empty() &&
        std::all_of(a.begin(), a.end(), [](const boost::json::value& e) { return e.is_int64(); })) {  // N12
      std::sort(a.begin(), a.end(),
                [](const boost::json::value& x, const boost::json::value& y) { return x.as_int64() < y.as_int64(); });
      return;
    }
    return;
  }
  rule(v, key, maps);
}

void diff_into(const boost::json::value& a, const boost::json::value& b, const std::string& path,
               std::vector<difference>& out) {
  if (a.is_object() && b.is_object()) {
    const auto& ao = a.as_object();
    const auto& bo = b.as_object();
    for (const auto& kv : ao) {
      const std::string p = path.empty() ? std::string(kv.key()) : path + "." + std::string(kv.key());
      if (auto it = bo.find(kv.key()); it != bo.end())
        diff_into(kv.value(), it->value(), p, out);
      else
        out.push_back({p, boost::json::serialize(kv.value()), "<absent>"});
    }
    for (const auto& kv : bo)
      if (!ao.contains(kv.key()))
        out.push_back({path.empty() ? std::string(kv.key()) : path + "." + std::string(kv.key()), "<absent>",
                       boost::json::serialize(kv.value())});
    return;
  }
  if (a.is_array() && b.is_array()) {
    const auto& aa = a.as_array();
    const auto& ba = b.as_array();
    // Elements with a key field (name, partition_index, ...) are matched by key: path "topics[name=x]".
    std::string kname;
    bool keyed = !aa.empty() || !ba.empty();
    for (const auto* arr : {&aa, &ba})
      for (const auto& e : *arr) {
        const std::string k = key_name_of(e);
        if (k.empty() || (!kname.empty() && k != kname)) keyed = false;
        kname = k;
      }
    if (keyed) {
      std::map<std::string, std::pair<const boost::json::value*, const boost::json::value*>> by_key;
      std::set<std::string> dup;
      for (const auto& e : aa) {
        const std::string k = boost::json::serialize(e.as_object().at(kname));
        if (by_key[k].first) dup.insert(k);
        by_key[k].first = &e;
      }
      for (const auto& e : ba) {
        const std::string k = boost::json::serialize(e.as_object().at(kname));
        if (by_key[k].second) dup.insert(k);
        by_key[k].second = &e;
      }
      if (dup.empty()) {
        for (const auto& [k, pr] : by_key) {
          std::string kv = k;
          if (kv.size() >= 2 && kv.front() == '"') kv = kv.substr(1, kv.size() - 2);
          const std::string p = path + "[" + kname + "=" + kv + "]";
          if (pr.first && pr.second)
            diff_into(*pr.first, *pr.second, p, out);
          else if (pr.first)
            out.push_back({p, boost::json::serialize(*pr.first), "<absent>"});
          else
            out.push_back({p, "<absent>", boost::json::serialize(*pr.second)});
        }
        return;
      }
    }
    const size_t n = std::max(aa.size(), ba.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      if (i < aa.size() && i < ba.size())
        diff_into(aa[i], ba[i], p, out);
      else if (i < aa.size())
        out.push_back({p, boost::json::serialize(aa[i]), "<absent>"});
      else
        out.push_back({p, "<absent>", boost::json::serialize(ba[i])});
    }
    return;
  }
  if (a != b) out.push_back({path.empty() ? "<response>" : path, boost::json::serialize(a), boost::json::serialize(b)});
}

}  // namespace

namespace {

void collect_producer_ids(const boost::json::value& v, const std::string& key, std::set<int64_t>& out) {
  if (v.is_object()) {
    for (const auto& kv : v.as_object()) collect_producer_ids(kv.value(), std::string(kv.key()), out);
  } else if (v.is_array()) {
    for (const auto& e : v.as_array()) collect_producer_ids(e, key, out);
  } else if (key == "producer_id" && v.is_int64() && v.as_int64() >= 0) {
    out.insert(v.as_int64());
  }
}

}  // namespace

void normalise(boost::json::value& v, int16_t api_key, rename_maps& maps, const std::set<int16_t>& common_keys) {
  // N6: producer ids new in this response are named in ascending order, not in order of appearance, so that the
  // same ids listed in another order (WriteTxnMarkers answers from a hash map in Kafka) get the same names.
  std::set<int64_t> ids;
  collect_producer_ids(v, "", ids);
  for (int64_t id : ids)
    if (!maps.producer_ids.contains(id)) maps.producer_ids.emplace(id, static_cast<int64_t>(maps.producer_ids.size()) + 1000000);
  if (api_key == 18 && v.is_object() && v.as_object().contains("api_keys")) {  // N11 ApiVersions
    auto& keys = v.as_object()["api_keys"].as_array();
    boost::json::array kept;
    for (auto& k : keys)
      if (common_keys.contains(static_cast<int16_t>(k.at("api_key").as_int64()))) kept.push_back(k);
    keys = std::move(kept);
  }
  walk(v, "", maps, false);
}

std::vector<difference> compare(const boost::json::value& kafka, const boost::json::value& sluice) {
  std::vector<difference> out;
  diff_into(kafka, sluice, "", out);
  return out;
}

bool path_matches(const std::string& pattern, const std::string& path) {
  // Iterative glob: '*' any run; "[*]" is the same as '*' restricted by the brackets around it.
  size_t p = 0, s = 0, star = std::string::npos, mark = 0;
  while (s < path.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (p < pattern.size() && pattern[p] == path[s]) {
      ++p;
      ++s;
    } else if (star != std::string::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const boost::json::value* value_at(const boost::json::value& v, const std::string& path) {
  const boost::json::value* cur = &v;
  size_t i = 0;
  while (i < path.size() && cur) {
    if (path[i] == '.') {
      ++i;
      continue;
    }
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      const size_t idx = std::stoul(path.substr(i + 1, close - i - 1));
      if (!cur->is_array() || idx >= cur->as_array().size()) return nullptr;
      cur = &cur->as_array()[idx];
      i = close + 1;
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    if (end == std::string::npos) end = path.size();
    const std::string k = path.substr(i, end - i);
    if (!cur->is_object()) return nullptr;
    auto it = cur->as_object().find(k);
    if (it == cur->as_object().end()) return nullptr;
    cur = &it->value();
    i = end;
  }
  return cur;
}

}  // namespace sluice::diff
