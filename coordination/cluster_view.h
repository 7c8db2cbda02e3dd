#pragma once
// What the broker follows about the cluster: live brokers, topics, and each partition's leader and ISR.
// Two implementations: the embedded single node (this broker leads every partition) and ZooKeeper
// (DESIGN.md §5), where a ZooKeeper-elected controller writes the partition states and every broker
// follows them through watches.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "coordination/cluster_store.h"

namespace sluice::coordination {

/// A live broker as registered in /brokers/ids/<id> (Kafka's znode: host, port, endpoints, rack).
/// One listener of a broker as clients reach it: Kafka's "endpoints" entry NAME://host:port and its protocol.
struct listener_endpoint {
  std::string listener_name;
  std::string host;
  int32_t port = 0;
  std::string security_protocol = "PLAINTEXT";
};

struct broker_registration {
  int32_t id = -1;
  /// The first endpoint: the inter-broker listener (a broker registers it first; replication and transaction
  /// markers connect to it).
  std::string host;
  int32_t port = 0;
  std::string listener_name = "PLAINTEXT";
  /// Every advertised listener, the inter-broker one first. Empty in a registration read from an old znode
  /// with host/port only (then host/port/listener_name is the one endpoint).
  std::vector<listener_endpoint> endpoints;
  /// The endpoint of `listener`, or null when the broker has no such listener.
  const listener_endpoint* endpoint_of(const std::string& listener) const {
    for (const auto& e : endpoints)
      if (e.listener_name == listener) return &e;
    return nullptr;
  }
  std::optional<std::string> rack;
  /// Kafka's broker epoch: the czxid of the registration znode; changes when the broker re-registers
  /// (restart or new session). -1 when unknown (the embedded store, or the argument of start()).
  int64_t epoch = -1;
};

/// Leader and ISR of one partition: Kafka's /brokers/topics/<t>/partitions/<p>/state
/// {"controller_epoch":..,"leader":..,"version":1,"leader_epoch":..,"isr":[..]}.
struct partition_state {
  int32_t leader = -1;  // -1: no leader (offline partition)
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr;
  int32_t controller_epoch = 0;
  /// The znode's version (ZooKeeper Stat.version) this state was read at; conditional updates check it.
  /// -1 when the state has not been written yet.
  int32_t version = -1;
};

/// The cluster at one moment. Immutable once published.
struct cluster_snapshot {
  std::string cluster_id;
  int32_t controller_id = -1;
  /// False after this broker lost its coordination session, until it has registered again: the broker
  /// must not act as leader or coordinator meanwhile (it answers NOT_LEADER_OR_FOLLOWER).
  bool registered = true;
  std::map<int32_t, broker_registration> brokers;                   // live brokers by id
  std::map<std::string, topic_assignment, std::less<>> topics;      // assignment and config overrides
  std::map<std::string, std::vector<partition_state>, std::less<>> states;  // states[topic][partition]
  /// Topics marked for deletion (/admin/delete_topics/<t>) that the controller has not removed yet.
  std::set<std::string, std::less<>> deleting_topics;
  uint64_t sequence = 0;  // grows with every publication

  /// The state of one partition, or nullptr when unknown.
  const partition_state* state(std::string_view topic, int32_t partition) const {
    auto it = states.find(topic);
    if (it == states.end() || partition < 0 || partition >= static_cast<int32_t>(it->second.size())) return nullptr;
    return &it->second[static_cast<size_t>(partition)];
  }
};

/// Error codes of cluster_view operations, carried in sluice::error::code as std::error_code of the
/// "cluster_view" category (broker/error_map: UNKNOWN_SERVER_ERROR; callers handle them in context).
/// not_a_replica and not_supported come only from request_leader_move.
/// not_controller: a controller request (reassignment, election) reached a broker that is not the controller.
enum class view_errc : int { version_conflict = 1, not_registered, timeout, unavailable, not_a_replica, not_supported,
                             not_controller };

}  // namespace sluice::coordination

template <>
struct std::is_error_code_enum<sluice::coordination::view_errc> : std::true_type {};

namespace sluice::coordination {

/// The std::error_category of view_errc ("cluster_view"); defined in coordination/errc.cc.
const std::error_category& view_category() noexcept;
inline std::error_code make_error_code(view_errc e) noexcept { return {static_cast<int>(e), view_category()}; }

/// One partition of an AlterPartitionReassignments request (KIP-455): move it to `target`, or cancel the
/// ongoing reassignment (nullopt).
struct reassignment_request {
  std::string topic;
  int32_t partition = 0;
  std::optional<std::vector<int32_t>> target;
};

/// What the controller decided for one partition of a reassignment or leader election; the broker answers it
/// with Kafka's error code (broker/handlers: NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
/// INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS, PREFERRED_LEADER_NOT_AVAILABLE,
/// ELECTION_NOT_NEEDED, ELIGIBLE_LEADERS_NOT_AVAILABLE).
enum class admin_outcome : int8_t {
  ok,
  unknown_partition,
  invalid_assignment,
  invalid_replication_factor,
  no_reassignment,
  preferred_not_available,
  election_not_needed,
  no_eligible_leader,
};

struct partition_outcome {
  std::string topic;
  int32_t partition = 0;
  admin_outcome outcome = admin_outcome::ok;
  std::string message;  // empty for ok
};

/// Thread-safety: every method may be called from any thread. Subscribers are called on a coordination
/// thread, one call at a time, in publication order; they must not block (post work to a strand).
class cluster_view {
 public:
  virtual ~cluster_view() = default;

  /// Registers `self` (ZooKeeper: the ephemeral /brokers/ids/<id>; also takes part in controller
  /// election) and returns once the first snapshot is published. Errors: unavailable (no session within
  /// the connection timeout), a registration conflict (another live broker has the id).
  virtual result<void> start(const broker_registration& self) = 0;

  /// The newest snapshot (never null after start()).
  virtual std::shared_ptr<const cluster_snapshot> snapshot() const = 0;

  /// Adds a subscriber called after every publication.
  virtual void subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) = 0;

  /// A partition leader records an ISR change (Kafka's conditional update of the state znode): writes
  /// `next` only if the stored version still equals `next.version`; returns the state as stored, with its
  /// new version. Errors: version_conflict (the controller or another write got there first; re-read the
  /// snapshot), not_registered, unavailable.
  virtual result<partition_state> update_isr(const std::string& topic, int32_t partition,
                                             const partition_state& next) = 0;

  /// Controlled shutdown: asks the controller to move every leadership away from this broker and to
  /// drop it from ISRs, and waits up to `timeout_ms` for that to be done. Embedded: returns at once.
  virtual result<void> controlled_shutdown(int64_t timeout_ms) = 0;

  /// Asks the controller to make `broker` the leader of `topic`-`partition` (a test control, issue #18), the
  /// way Kafka's ZooKeeper-era tools move a leader: the partition's assignment is reordered so that `broker`
  /// is its first (preferred) replica, the replica set unchanged (/brokers/topics/<t>, conditional on its
  /// version), then a preferred replica election names the partition (/admin/preferred_replica_election,
  /// kafka-preferred-replica-election.sh's znode). The controller makes the preferred replica leader when it
  /// is alive and in the ISR (epoch + 1), else leaves the partition as it is. Returns once both are written,
  /// before the election: the new leader shows in a later snapshot. Caller's thread (ZooKeeper round trips).
  /// Errors: errc::unknown_topic (no such topic or partition, or the topic is being deleted), not_a_replica
  /// (`broker` is not in the partition's assignment), not_supported (the embedded store: its one broker
  /// leads everything), not_registered, unavailable.
  virtual result<void> request_leader_move(const std::string& topic, int32_t partition, int32_t broker) = 0;

  /// AlterPartitionReassignments (KIP-455), decided by the controller at once: each partition's reassignment is
  /// started (or cancelled) and its outcome returned; the move itself completes later, once every target replica
  /// is in the ISR (ListPartitionReassignments shows it meanwhile through the snapshot's adding/removing
  /// replicas). `allow_rf_change` false refuses a target of another size (KIP-860). Errors: not_controller (this
  /// broker is not the controller: Kafka's NOT_CONTROLLER, the client asks the controller), not_registered,
  /// unavailable; the embedded store answers as a single-broker cluster.
  virtual result<std::vector<partition_outcome>> alter_reassignments(const std::vector<reassignment_request>& requests,
                                                                     bool allow_rf_change) {
    (void)requests, (void)allow_rf_change;
    return error{view_errc::not_supported, "reassignments are not supported here"};
  }

  /// ElectLeaders (KIP-183, KIP-460), by the controller at once: the preferred replica (`unclean` false) or, for a
  /// partition without a live leader, any live replica (`unclean` true) is made leader. `partitions` nullopt: every
  /// partition, and only those where an election was needed are returned (Kafka). Errors as alter_reassignments.
  virtual result<std::vector<partition_outcome>> elect_leaders(
      bool unclean, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) {
    (void)unclean, (void)partitions;
    return error{view_errc::not_supported, "leader elections are not supported here"};
  }

  /// Deregisters and stops following (closes the session). Idempotent.
  virtual void stop() = 0;
};

}  // namespace sluice::coordination
