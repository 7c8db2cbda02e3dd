#pragma once
// topic_layout: what sluice_load learns of the cluster before loading it: the topic (created when missing),
// its id, and each partition's leader with the leader's address (Metadata), and how connections are spread
// over the leaders.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/load/load_options.h"
#include "protocol/uuid.h"

namespace sluice::bench {

struct topic_layout {
  std::string topic;
  protocol::uuid topic_id;          // zero when the broker's Metadata version has no topic ids (< v10)
  std::vector<int32_t> leaders;     // leader node id of partition i
  std::map<int32_t, broker_address> brokers;  // node id -> advertised address
  bool created = false;             // this run created the topic
};

/// Connects to the first reachable bootstrap broker, asks Metadata for `opts.topic` and, in produce mode when the
/// topic does not exist, creates it with CreateTopics (`opts.partitions`, `opts.replication_factor`; sent to the
/// controller Metadata names, as Kafka's AdminClient does, else the bootstrap broker). Waits until every partition
/// has a leader listed among the brokers. Bounded by `timeout_ms` overall.
/// Throws load_error: no bootstrap broker reachable, topic missing in fetch mode or creation refused (the Kafka
/// error name and message), no leader within the timeout.
topic_layout discover_topic(const load_options& opts, int timeout_ms);

/// One connection of a run: the broker it talks to and the partitions it sends to or fetches from.
struct connection_plan {
  int32_t node_id = -1;
  broker_address broker;
  std::vector<int32_t> partitions;
};

/// Spreads `connections` connections over the partitions `partitions` of `layout` by leader: every leader gets at
/// least one connection (so the result may hold more than `connections`), the others are dealt round robin over
/// the leaders in node id order, and a leader's partitions round robin over its connections. With
/// `share_partitions`, a connection left without a partition (more connections than partitions on that leader)
/// sends to one of its leader's partitions anyway (several producers may write to one partition); without it,
/// such connections are dropped (a fetch connection needs partitions of its own).
std::vector<connection_plan> plan_connections(const topic_layout& layout, const std::vector<int32_t>& partitions,
                                              int connections, bool share_partitions);

}  // namespace sluice::bench
