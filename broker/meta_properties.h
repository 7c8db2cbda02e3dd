#pragma once
// meta.properties: the file in every log dir that says which broker and which cluster the dir belongs to,
// so that a broker never serves another broker's or another cluster's partitions (Kafka's
// MetaProperties / MetaPropertiesEnsemble; BrokerMetadataCheckpoint and KafkaServer's start-up checks
// in ZooKeeper mode, which throw InconsistentBrokerIdException / InconsistentClusterIdException).
//
// Text (Java properties, a leading '#' comment line), as Kafka's ZooKeeper-mode brokers write it:
//   #
//   version=0
//   broker.id=1
//   cluster.id=zldxMjl0ByQMJOu_X510Wg
//   directory.id=7sV0m0lvTuaWnE5qk3m6Bw
// `version=1` files (KRaft, `node.id=` instead of `broker.id=`) are parsed but refused at start.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace sluice::broker {

inline constexpr const char* meta_properties_file = "meta.properties";

/// One log dir's meta.properties. In version 0 every field may be missing (older Kafka wrote only
/// broker.id); version 1 requires node.id and cluster.id.
struct meta_properties {
  int version = 0;                          // 0 (ZooKeeper-mode brokers, `broker.id`) or 1 (KRaft, `node.id`)
  std::optional<int32_t> broker_id;         // `broker.id` (v0) or `node.id` (v1)
  std::optional<std::string> cluster_id;    // `cluster.id`
  std::optional<std::string> directory_id;  // `directory.id`: a Kafka Uuid, 22 characters of URL-safe base64
  bool operator==(const meta_properties&) const = default;
};

/// Parses the file's text. Unknown keys are ignored, as Kafka does. Errors (code 1, message = the reason):
/// a version other than 0 and 1, an id that is not a 32-bit integer, v1 without node.id or cluster.id, a
/// directory.id that is not a 16-byte Uuid in base64 or is one of Kafka's reserved ids, and a text that holds
/// none of the keys `version`, `broker.id`, `node.id`, `cluster.id`, `directory.id` (not a meta.properties).
result<meta_properties> parse_meta_properties(const std::string& text);

/// The text written to disk: a '#' line, then `version`, the id (`broker.id` in v0, `node.id` in v1),
/// `cluster.id` and `directory.id`, each only when present.
std::string format_meta_properties(const meta_properties& props);

/// A new random directory id (Kafka's DirectoryId rules: not reserved, not starting with '-').
std::string new_directory_id();

/// `<dir>/meta.properties`: nullopt when the file does not exist; an error (naming the file) when it
/// cannot be read or parsed. Changes nothing on disk.
result<std::optional<meta_properties>> read_meta_properties(const std::filesystem::path& dir);

/// Replaces `<dir>/meta.properties` atomically (meta.properties.tmp, fsync, rename, fsync of the dir).
result<void> write_meta_properties(const std::filesystem::path& dir, const meta_properties& props);

/// The meta.properties of every log dir, read at start before anything else touches the dirs.
///
/// Start-up order (broker::start): load() and verify(broker.id) right after the log dirs are locked; then
/// the cluster id is learnt (ZooKeeper's /cluster/id, or the embedded store's), verify_cluster_id(); then
/// complete() writes the files that are missing or incomplete; only then are partitions opened. Each step
/// that fails stops the broker without changing any file in the log dirs.
class meta_properties_ensemble {
 public:
  /// Reads `<dir>/meta.properties` of each dir. Errors: a file that cannot be read or parsed (the message
  /// names the file and the reason).
  static result<meta_properties_ensemble> load(const std::vector<std::filesystem::path>& log_dirs);

  /// Checks that need no cluster id (Kafka's MetaPropertiesEnsemble.verify with REQUIRE_V0 and the 3.x
  /// ZooKeeper-mode messages), in this order: every file is version 0; the dirs agree with each other
  /// (broker id and cluster id where present: "BrokerMetadata is not consistent across log.dirs", listing
  /// each dir); the stored broker id equals `broker_id` ("Configured broker.id B doesn't match stored
  /// broker.id S in <file>"); no directory.id appears twice.
  result<void> verify(int32_t broker_id) const;

  /// The cluster id stored in any dir, if one is.
  std::optional<std::string> cluster_id() const;
  /// The first dir holding a cluster id (for messages); empty when none does.
  std::filesystem::path cluster_id_dir() const;

  /// Every stored cluster id equals `cluster_id` (of `source`, e.g. "ZooKeeper at 127.0.0.1:2181"), else
  /// "The Cluster ID C doesn't match stored clusterId S in <file>" with `hint` appended.
  result<void> verify_cluster_id(const std::string& cluster_id, const std::string& source,
                                 const std::string& hint) const;

  /// Writes meta.properties where it is missing (a new dir, or a dir of an older Sluice: adopted, as Kafka
  /// does) or lacks broker.id, cluster.id or directory.id; files already complete are left as they are.
  /// Call only after verify() and verify_cluster_id() passed. Returns the dirs written.
  result<std::vector<std::filesystem::path>> complete(int32_t broker_id, const std::string& cluster_id) const;

  const std::vector<std::pair<std::filesystem::path, std::optional<meta_properties>>>& dirs() const { return dirs_; }

 private:
  std::vector<std::pair<std::filesystem::path, std::optional<meta_properties>>> dirs_;
};

}  // namespace sluice::broker
