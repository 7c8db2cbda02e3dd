// Replica placement by the controller: AlterPartitionReassignments (key 45, KIP-455, KIP-860),
// ListPartitionReassignments (key 46, KIP-455) and ElectLeaders (key 43, KIP-183, KIP-460).
//
// The controller decides (coordination/cluster_view.h alter_reassignments / elect_leaders): in cluster mode the
// ZooKeeper-elected controller, so a broker that is not the controller answers NOT_CONTROLLER and the client
// asks the controller Metadata names (Kafka's ZooKeeper mode); the embedded store answers as a cluster of one.
// The list is answered by any broker from its cluster snapshot.
#include <map>
#include <set>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;

namespace {

error_code code_of(coordination::admin_outcome o) {
  using coordination::admin_outcome;
  switch (o) {
    case admin_outcome::ok: return error_code::none;
    case admin_outcome::unknown_partition: return error_code::unknown_topic_or_partition;
    case admin_outcome::invalid_assignment: return error_code::invalid_replica_assignment;
    case admin_outcome::invalid_replication_factor: return error_code::invalid_replication_factor;
    case admin_outcome::no_reassignment: return error_code::no_reassignment_in_progress;
    case admin_outcome::preferred_not_available: return error_code::preferred_leader_not_available;
    case admin_outcome::election_not_needed: return error_code::election_not_needed;
    case admin_outcome::no_eligible_leader: return error_code::eligible_leaders_not_available;
  }
  return error_code::unknown_server_error;
}

/// A failed controller call as Kafka answers the whole request: NOT_CONTROLLER when this broker is not the
/// controller, else the coordination error as UNKNOWN_SERVER_ERROR.
std::pair<error_code, std::string> whole_request_error(const error& e) {
  if (e.code == coordination::view_errc::not_controller) return {error_code::not_controller, e.message};
  return {error_code::unknown_server_error, e.message};
}

}  // namespace

task<protocol::alter_partition_reassignments_response> alter_partition_reassignments(
    broker_services& svc, request_context& rc, protocol::alter_partition_reassignments_request& req) {
  protocol::alter_partition_reassignments_response resp;
  resp.allow_replication_factor_change = req.allow_replication_factor_change;
  // Kafka: ALTER on the cluster, else the whole request fails.
  if (!cluster_authorized(svc, rc, acl_operation::alter)) {
    resp.error_code = error_code::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    co_return resp;
  }
  std::vector<coordination::reassignment_request> requests;
  for (const auto& t : req.topics)
    for (const auto& p : t.partitions) requests.push_back({t.name, p.partition_index, p.replicas});
  auto outcomes = svc.cluster.alter_reassignments(requests, req.allow_replication_factor_change);
  if (!outcomes) {
    auto [code, message] = whole_request_error(outcomes.err());
    resp.error_code = code;
    resp.error_message = std::move(message);
    co_return resp;
  }
  resp.error_message = std::nullopt;
  // One response entry per requested topic, partitions in request order.
  size_t i = 0;
  for (const auto& t : req.topics) {
    protocol::alter_partition_reassignments_response::reassignable_topic_response out;
    out.name = t.name;
    for (size_t k = 0; k < t.partitions.size() && i < outcomes->size(); ++k, ++i) {
      const auto& o = (*outcomes)[i];
      protocol::alter_partition_reassignments_response::reassignable_partition_response pr;
      pr.partition_index = o.partition;
      pr.error_code = code_of(o.outcome);
      pr.error_message = o.outcome != coordination::admin_outcome::ok && !o.message.empty()
                             ? std::optional<std::string>(o.message) : std::nullopt;  // Kafka: null when none
      out.partitions.push_back(std::move(pr));
    }
    resp.responses.push_back(std::move(out));
  }
  co_return resp;
}

task<protocol::list_partition_reassignments_response> list_partition_reassignments(
    broker_services& svc, request_context& rc, protocol::list_partition_reassignments_request& req) {
  protocol::list_partition_reassignments_response resp;
  if (!cluster_authorized(svc, rc, acl_operation::describe)) {
    resp.error_code = error_code::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    co_return resp;
  }
  auto snap = svc.cluster.snapshot();
  if (!snap) co_return resp;
  auto add = [&](const coordination::topic_assignment& a, const std::vector<int32_t>& partitions) {
    protocol::list_partition_reassignments_response::ongoing_topic_reassignment out;
    out.name = a.name;
    for (int32_t p : partitions) {
      if (!a.reassigning(p)) continue;
      protocol::list_partition_reassignments_response::ongoing_partition_reassignment pr;
      pr.partition_index = p;
      pr.replicas = a.replicas[static_cast<size_t>(p)];
      if (auto it = a.adding_replicas.find(p); it != a.adding_replicas.end()) pr.adding_replicas = it->second;
      if (auto it = a.removing_replicas.find(p); it != a.removing_replicas.end()) pr.removing_replicas = it->second;
      out.partitions.push_back(std::move(pr));
    }
    if (!out.partitions.empty()) resp.topics.push_back(std::move(out));
  };
  if (!req.topics) {
    for (const auto& [name, a] : snap->topics) {
      std::vector<int32_t> all;
      for (int32_t p = 0; p < a.partition_count(); ++p) all.push_back(p);
      add(a, all);
    }
    co_return resp;
  }
  // Named partitions: unknown ones and those not moving are left out (Kafka answers only ongoing reassignments).
  std::map<std::string, std::set<int32_t>> asked;
  for (const auto& t : *req.topics)
    for (int32_t p : t.partition_indexes) asked[t.name].insert(p);
  for (const auto& [name, ps] : asked) {
    auto it = snap->topics.find(name);
    if (it == snap->topics.end()) continue;
    std::vector<int32_t> partitions;
    for (int32_t p : ps)
      if (p >= 0 && p < it->second.partition_count()) partitions.push_back(p);
    add(it->second, partitions);
  }
  co_return resp;
}

task<protocol::elect_leaders_response> elect_leaders(broker_services& svc, request_context& rc,
                                                     protocol::elect_leaders_request& req) {
  using response = protocol::elect_leaders_response;
  response resp;
  // v0 has no ElectionType: preferred (KIP-183). 0 preferred, 1 unclean (KIP-460); other values INVALID_REQUEST.
  const int8_t type = rc.header.api_version >= 1 ? req.election_type : 0;
  auto fail_all = [&](error_code code, const std::string& message) {
    resp.error_code = code;
    if (!req.topic_partitions_) return;
    for (const auto& t : *req.topic_partitions_) {
      response::replica_election_result out;
      out.topic = t.topic;
      for (int32_t p : t.partitions) {
        response::partition_result pr;
        pr.partition_id = p;
        pr.error_code = code;
        pr.error_message = message;
        out.partition_result_.push_back(std::move(pr));
      }
      resp.replica_election_results.push_back(std::move(out));
    }
  };
  if (!cluster_authorized(svc, rc, acl_operation::alter)) {
    fail_all(error_code::cluster_authorization_failed, "Cluster authorization failed.");
    co_return resp;
  }
  if (type != 0 && type != 1) {
    fail_all(error_code::invalid_request, "Unknown election type " + std::to_string(type));
    co_return resp;
  }
  std::optional<std::vector<std::pair<std::string, int32_t>>> partitions;
  if (req.topic_partitions_) {
    partitions.emplace();
    std::set<std::pair<std::string, int32_t>> seen;  // elected once, answered per mention
    for (const auto& t : *req.topic_partitions_)
      for (int32_t p : t.partitions)
        if (seen.insert({t.topic, p}).second) partitions->emplace_back(t.topic, p);
  }
  auto outcomes = svc.cluster.elect_leaders(type == 1, partitions);
  if (!outcomes) {
    auto [code, message] = whole_request_error(outcomes.err());
    fail_all(code, message);
    if (rc.header.api_version < 1) resp.error_code = error_code::none;
    co_return resp;
  }
  auto to_result = [](const coordination::partition_outcome& o) {
    response::partition_result pr;
    pr.partition_id = o.partition;
    pr.error_code = code_of(o.outcome);
    pr.error_message = o.outcome != coordination::admin_outcome::ok ? std::optional<std::string>(o.message) : std::nullopt;
    return pr;
  };
  if (req.topic_partitions_) {
    // Named partitions: one entry per requested topic, a result per requested partition in request order
    // (a partition named twice is answered twice, as Kafka does).
    std::map<std::pair<std::string, int32_t>, const coordination::partition_outcome*> by_partition;
    for (const auto& o : *outcomes) by_partition.emplace(std::pair{o.topic, o.partition}, &o);
    for (const auto& t : *req.topic_partitions_) {
      response::replica_election_result out;
      out.topic = t.topic;
      for (int32_t p : t.partitions)
        if (auto it = by_partition.find({t.topic, p}); it != by_partition.end())
          out.partition_result_.push_back(to_result(*it->second));
      resp.replica_election_results.push_back(std::move(out));
    }
    co_return resp;
  }
  // Every partition (null): every topic is listed, with results only for the partitions an election was
  // attempted on (ELECTION_NOT_NEEDED is left out, KIP-460).
  std::map<std::string, size_t> index;  // topic -> its entry
  auto entry = [&](const std::string& topic) -> response::replica_election_result& {
    auto [it, added] = index.emplace(topic, resp.replica_election_results.size());
    if (added) {
      response::replica_election_result out;
      out.topic = topic;
      resp.replica_election_results.push_back(std::move(out));
    }
    return resp.replica_election_results[it->second];
  };
  if (auto snap = svc.cluster.snapshot())
    for (const auto& [name, t] : snap->topics)
      if (!snap->deleting_topics.contains(name)) entry(name);
  for (const auto& o : *outcomes) entry(o.topic).partition_result_.push_back(to_result(o));
  co_return resp;
}

}  // namespace sluice::broker::handlers
