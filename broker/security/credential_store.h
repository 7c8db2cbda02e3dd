#pragma once
// SCRAM credentials of users (KIP-554): kept where Kafka keeps them, as the "SCRAM-SHA-256"/"SCRAM-SHA-512" keys of
// the users' entity configs (ZooKeeper /config/users/<user>; the embedded store on a single node).
#include <map>
#include <optional>
#include <string>

#include "base/result.h"
#include "broker/security/scram.h"
#include "coordination/cluster_store.h"

namespace sluice::broker::security {

/// Thread-safe (the cluster store is). Every lookup reads the store, so credentials altered through any broker of
/// a cluster apply to the next authentication everywhere.
class credential_store {
 public:
  explicit credential_store(coordination::cluster_store& store) : store_(store) {}

  /// The credential of `user` for `m`; nullopt when there is none (or the store cannot be read: logged).
  std::optional<scram_credential> find(const std::string& user, scram_mechanism m) const;
  /// user -> mechanism -> iterations, for DescribeUserScramCredentials.
  result<std::map<std::string, std::map<scram_mechanism, int32_t>>> describe() const;
  /// Sets or (credential nullopt) removes one user's credential for `m`, keeping the user's other keys.
  result<void> alter(const std::string& user, scram_mechanism m, const std::optional<scram_credential>& credential);

 private:
  coordination::cluster_store& store_;
};

}  // namespace sluice::broker::security
