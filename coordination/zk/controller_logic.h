#pragma once
// The controller's decisions as pure functions of the cluster it sees: which partition state to write
// when a topic appears, a broker leaves or joins, a broker asks for a controlled shutdown, or the preferred
// replica may lead again. zk_controller applies them to ZooKeeper (conditional writes, fenced by the
// controller epoch). Kafka's rules (kafka.controller.Election, PartitionStateMachine, ReplicaStateMachine):
// every leader or ISR change the controller makes bumps the leader epoch.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordination/cluster_view.h"

namespace sluice::coordination::zk {

struct cluster_liveness {
  std::set<int32_t> live;           // registered brokers
  std::set<int32_t> shutting_down;  // live brokers in controlled shutdown: never elected, leave ISRs
  bool eligible(int32_t b) const { return live.contains(b) && !shutting_down.contains(b); }
};

/// The state to create for a partition that has none (new topic, added partition): leader = first eligible
/// replica in assignment order, isr = the eligible replicas in assignment order, leader_epoch 0. nullopt
/// when no replica is eligible (Kafka leaves the partition without state until one is).
std::optional<partition_state> initial_state(const std::vector<int32_t>& replicas, const cluster_liveness& live,
                                             int32_t controller_epoch);

/// The state to write for an existing partition given who is live, or nullopt when nothing changes:
/// - leader dead, or -1: new leader = first replica in assignment order that is eligible and in the ISR,
///   isr = the old ISR without ineligible brokers; if none and `unclean`: the first eligible replica,
///   isr = [it]; else leader -1 and the ISR keeps its last member (Kafka never empties the ISR, so the last
///   in-sync replica is elected when it comes back).
/// - leader shutting down: moved to the first eligible ISR member in assignment order (kept if none).
/// - otherwise dead brokers leave the ISR, and shutting-down followers too while another member remains.
/// Every change bumps leader_epoch; `version` is carried over for the conditional write.
std::optional<partition_state> next_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                          const cluster_liveness& live, bool unclean, int32_t controller_epoch);

/// Preferred replica election for one partition: when the first replica is eligible, in the ISR and not the
/// leader, it becomes leader (epoch + 1). nullopt otherwise.
std::optional<partition_state> preferred_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                               const cluster_liveness& live, int32_t controller_epoch);

/// A partition's replica sets during a reassignment (KIP-455).
struct replica_plan {
  std::vector<int32_t> replicas;  // target, then the original replicas not in it
  std::vector<int32_t> adding;    // target replicas not among the original ones
  std::vector<int32_t> removing;  // original replicas not in the target
};

/// The plan to move a partition whose original replicas are `original` (topic_assignment::original_replicas: where
/// it was before any ongoing reassignment, which a new one replaces, as Kafka measures it) to `target`.
replica_plan plan_reassignment(const std::vector<int32_t>& original, const std::vector<int32_t>& target);

/// The state to write once a partition's replica set became `replicas` (a reassignment started, completed or was
/// cancelled): the ISR keeps only members of `replicas`; a leader outside them, dead or shutting down is
/// replaced by the first eligible ISR member in `replicas` order (-1 when none). The leader epoch is bumped
/// even when leader and ISR stay, as Kafka does, so the leader learns its new followers.
partition_state state_for_replicas(const std::vector<int32_t>& replicas, const partition_state& current,
                                   const cluster_liveness& live, int32_t controller_epoch);

/// Unclean election asked for by ElectLeaders (KIP-460) for a partition whose leader is not live: the first
/// eligible ISR member in assignment order, else the first eligible replica (isr = [it]). nullopt when no
/// replica is eligible. The caller checks first that the leader is gone (else ELECTION_NOT_NEEDED).
std::optional<partition_state> unclean_state(const std::vector<int32_t>& replicas, const partition_state& current,
                                             const cluster_liveness& live, int32_t controller_epoch);

/// Kafka's auto leader rebalance check: the preferred brokers whose imbalance ratio (partitions they should
/// lead but do not / partitions they should lead) exceeds `percentage` / 100. Partitions whose state is
/// unknown are ignored.
std::set<int32_t> imbalanced_brokers(const std::map<std::string, std::vector<std::vector<int32_t>>, std::less<>>& assignments,
                                     const std::map<std::string, std::vector<partition_state>, std::less<>>& states,
                                     int32_t percentage);

}  // namespace sluice::coordination::zk
