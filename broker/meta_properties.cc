#include "broker/meta_properties.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "broker/config.h"
#include "coordination/embedded_store.h"
#include "storage/offset_checkpoint.h"

namespace sluice::broker {
namespace {

error refuse(const std::string& message) { return error{base_errc::failed, message}; }

result<int32_t> parse_int32(const std::string& key, const std::string& text) {
  int32_t v = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;  // Java's Integer.parseInt takes a leading '+'
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (text.empty() || ec != std::errc{} || ptr != end)
    return refuse("Failed to parse " + key + " property as an int: '" + text + "'");
  return v;
}

/// Kafka's DirectoryId.reserved: the ids whose 8 high bytes are 0 and whose low 8 bytes are below 100.
bool reserved_directory_id(const coordination::topic_id& id) {
  uint64_t msb = 0, lsb = 0;
  for (size_t i = 0; i < 8; ++i) msb = (msb << 8) | id[i];
  for (size_t i = 8; i < 16; ++i) lsb = (lsb << 8) | id[i];
  return msb == 0 && lsb < 100;
}

std::string describe(const meta_properties& p) {
  std::string s = "version=" + std::to_string(p.version);
  s += ", broker.id=" + (p.broker_id ? std::to_string(*p.broker_id) : std::string("(none)"));
  s += ", cluster.id=" + p.cluster_id.value_or("(none)");
  if (p.directory_id) s += ", directory.id=" + *p.directory_id;
  return s;
}

std::string file_of(const std::filesystem::path& dir) { return (dir / meta_properties_file).string(); }

}  // namespace

result<meta_properties> parse_meta_properties(const std::string& text) {
  auto kv = parse_properties(text);
  if (!kv) return refuse("not a properties file: " + kv.err().message);
  const auto& m = *kv;
  auto find = [&](const char* key) -> const std::string* {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };
  if (!find("version") && !find("broker.id") && !find("node.id") && !find("cluster.id") && !find("directory.id"))
    return refuse("none of the keys version, broker.id, node.id, cluster.id, directory.id is present");
  meta_properties p;
  if (const auto* v = find("version")) {
    if (*v == "0") p.version = 0;
    else if (*v == "1") p.version = 1;
    else return refuse("Unknown meta.properties version number '" + *v + "' (known: 0, 1)");
  }
  const char* id_key = p.version == 0 ? "broker.id" : "node.id";
  if (const auto* v = find(id_key)) {
    auto id = parse_int32(id_key, *v);
    if (!id) return id.err();
    p.broker_id = *id;
  } else if (p.version == 1) {
    return refuse("node.id was not found (required in version 1)");
  }
  if (const auto* v = find("cluster.id")) p.cluster_id = *v;
  else if (p.version == 1) return refuse("cluster.id was not found (required in version 1)");
  if (const auto* v = find("directory.id")) {
    auto id = coordination::topic_id_from_base64(*v);
    if (!id) return refuse("Unable to read directory.id as a Uuid: '" + *v + "'");
    if (reserved_directory_id(*id)) return refuse("directory.id " + *v + " is a reserved id");
    p.directory_id = *v;
  }
  return p;
}

std::string format_meta_properties(const meta_properties& p) {
  std::string out = "#\n";
  out += "version=" + std::to_string(p.version) + "\n";
  if (p.broker_id) out += std::string(p.version == 0 ? "broker.id=" : "node.id=") + std::to_string(*p.broker_id) + "\n";
  if (p.cluster_id) out += "cluster.id=" + *p.cluster_id + "\n";
  if (p.directory_id) out += "directory.id=" + *p.directory_id + "\n";
  return out;
}

std::string new_directory_id() {
  for (;;) {
    auto id = coordination::random_topic_id();
    auto text = coordination::to_base64(id);
    if (!reserved_directory_id(id) && text.front() != '-') return text;
  }
}

result<std::optional<meta_properties>> read_meta_properties(const std::filesystem::path& dir) {
  const auto file = dir / meta_properties_file;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(file, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return refuse("cannot read " + file.string() + ": " + ec.message());
  if (!std::filesystem::exists(status)) return std::optional<meta_properties>{};
  std::ifstream in(file, std::ios::binary);
  if (!in) return refuse("cannot read " + file.string() + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return refuse("cannot read " + file.string() + ": " + std::strerror(errno));
  auto parsed = parse_meta_properties(text.str());
  if (!parsed) return refuse("cannot use " + file.string() + ": " + parsed.err().message);
  return std::optional<meta_properties>{std::move(*parsed)};
}

result<void> write_meta_properties(const std::filesystem::path& dir, const meta_properties& props) {
  auto r = storage::write_file_atomically(dir / meta_properties_file, format_meta_properties(props));
  if (!r) return refuse("cannot write " + file_of(dir) + ": " + r.err().message);
  return {};
}

result<meta_properties_ensemble> meta_properties_ensemble::load(const std::vector<std::filesystem::path>& log_dirs) {
  meta_properties_ensemble e;
  for (const auto& dir : log_dirs) {
    auto p = read_meta_properties(dir);
    if (!p) return p.err();
    e.dirs_.emplace_back(dir, std::move(*p));
  }
  return e;
}

result<void> meta_properties_ensemble::verify(int32_t broker_id) const {
  for (const auto& [dir, p] : dirs_) {
    if (p && p->version != 0)
      return refuse("Found unexpected version " + std::to_string(p->version) + " in " + file_of(dir) +
                    ". Sluice brokers, as Kafka's ZooKeeper-based brokers, only support version 0 (version 1 is "
                    "written by KRaft's kafka-storage.sh format; its partitions' topic ids live in a metadata "
                    "log Sluice cannot read)");
  }
  // The dirs among themselves (Kafka 3.x: BrokerMetadataCheckpoint.getBrokerMetadataAndOfflineDirs).
  std::optional<int32_t> first_broker;
  std::optional<std::string> first_cluster;
  bool consistent = true;
  for (const auto& [dir, p] : dirs_) {
    if (!p) continue;
    if (p->broker_id) {
      if (first_broker && *first_broker != *p->broker_id) consistent = false;
      if (!first_broker) first_broker = p->broker_id;
    }
    if (p->cluster_id) {
      if (first_cluster && *first_cluster != *p->cluster_id) consistent = false;
      if (!first_cluster) first_cluster = p->cluster_id;
    }
  }
  if (!consistent) {
    std::string found;
    for (const auto& [dir, p] : dirs_) found += "\n- " + dir.string() + " -> " + (p ? describe(*p) : "(no meta.properties)");
    return refuse("BrokerMetadata is not consistent across log.dirs. This could happen if multiple brokers shared a "
                  "log directory (log.dirs) or partial data was manually copied from another broker. Found:" + found);
  }
  for (const auto& [dir, p] : dirs_) {
    if (p && p->broker_id && *p->broker_id != broker_id)
      return refuse("Configured broker.id " + std::to_string(broker_id) + " doesn't match stored broker.id " +
                    std::to_string(*p->broker_id) + " in " + file_of(dir) +
                    ". If you moved your data, make sure your configured broker.id matches. If you intend to create "
                    "a new broker, give it empty log directories (log.dirs).");
  }
  std::map<std::string, std::filesystem::path> seen;
  for (const auto& [dir, p] : dirs_) {
    if (!p || !p->directory_id) continue;
    auto [it, fresh] = seen.emplace(*p->directory_id, dir);
    if (!fresh)
      return refuse("Duplicate directory.id " + *p->directory_id + " found. It was the ID of " + it->second.string() +
                    ", but also of " + dir.string() + " (a copied log directory?)");
  }
  return {};
}

std::optional<std::string> meta_properties_ensemble::cluster_id() const {
  for (const auto& [dir, p] : dirs_)
    if (p && p->cluster_id) return p->cluster_id;
  return std::nullopt;
}

std::filesystem::path meta_properties_ensemble::cluster_id_dir() const {
  for (const auto& [dir, p] : dirs_)
    if (p && p->cluster_id) return dir;
  return {};
}

result<void> meta_properties_ensemble::verify_cluster_id(const std::string& cluster_id, const std::string& source,
                                                         const std::string& hint) const {
  for (const auto& [dir, p] : dirs_) {
    if (p && p->cluster_id && *p->cluster_id != cluster_id)
      return refuse("The Cluster ID " + cluster_id + " (" + source + ") doesn't match stored clusterId " +
                    *p->cluster_id + " in " + file_of(dir) + ". " + hint);
  }
  return {};
}

result<std::vector<std::filesystem::path>> meta_properties_ensemble::complete(int32_t broker_id,
                                                                           const std::string& cluster_id) const {
  std::set<std::string> used;
  for (const auto& [dir, p] : dirs_)
    if (p && p->directory_id) used.insert(*p->directory_id);
  std::vector<std::filesystem::path> written;
  for (const auto& [dir, p] : dirs_) {
    meta_properties next = p.value_or(meta_properties{});
    next.broker_id = broker_id;
    next.cluster_id = cluster_id;
    if (!next.directory_id) {
      std::string id;
      do id = new_directory_id();
      while (used.contains(id));
      used.insert(id);
      next.directory_id = id;
    }
    if (p && *p == next) continue;
    if (auto r = write_meta_properties(dir, next); !r) return r.err();
    written.push_back(dir);
  }
  return written;
}

}  // namespace sluice::broker
