#pragma once
// normalise: rewrites a response's JSON so that what legitimately differs between two brokers compares
// equal (README.md "Normalisations" names and justifies each rule), and compare: the field-by-field
// differences of two normalised responses.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>

namespace sluice::diff {

/// Per broker and per scenario run: random identifiers renamed in order of first appearance, so that
/// "the same member answered twice" still compares ("<member-1>" on both sides).
struct rename_maps {
  std::map<std::string, std::string> members;
  std::map<int64_t, int64_t> producer_ids;
};

/// Applies every rule to `v` (a response of `api_key`). `common_keys`: api keys both brokers advertise
/// (ApiVersions responses keep only those).
void normalise(boost::json::value& v, int16_t api_key, rename_maps& maps, const std::set<int16_t>& common_keys);

struct difference {
  std::string path;  // e.g. topics[0].partitions[1].error_code
  std::string kafka;
  std::string sluice;
};

/// Every leaf where `kafka` and `sluice` differ (a missing key or element shows as "<absent>").
std::vector<difference> compare(const boost::json::value& kafka, const boost::json::value& sluice);

/// Whether `path` matches `pattern`: '*' matches any run of characters, "[*]" any index.
bool path_matches(const std::string& pattern, const std::string& path);

/// Value at a dotted path ("topics[0].topic_id", "member_id") or nullptr.
const boost::json::value* value_at(const boost::json::value& v, const std::string& path);

}  // namespace sluice::diff
