#pragma once
// Creating a coordinator's internal topic on first need (__consumer_offsets, __transaction_state), as Kafka's
// AutoTopicCreationManager does when FindCoordinator asks for a coordinator whose topic does not exist yet.
#include <cstdint>
#include <map>
#include <string>

#include "broker/error_map.h"

namespace sluice::broker {
class topic_registry;
}

namespace sluice::broker::coordinator {

/// What to create. `replication_factor` applies in cluster mode only (a single node makes one replica whatever it
/// says: the embedded mode has one broker, Kafka would refuse forever); `replication_factor_key` and `what` name
/// the config key and the topic in the error Kafka gives while too few brokers are registered.
struct internal_topic_spec {
  std::string name;
  int32_t partitions = 1;
  int16_t replication_factor = 1;
  std::string replication_factor_key;     // "offsets.topic.replication.factor"
  std::string what;                       // "offsets topic", "transactions state topic"
  std::map<std::string, std::string> configs;            // always (cleanup.policy=compact, ...)
  std::map<std::string, std::string> cluster_configs;    // cluster mode only (min.insync.replicas)
};

/// Sets the topic's segment size from offsets.topic.segment.bytes / transaction.state.log.segment.bytes (Kafka
/// creates its internal topics with segment.bytes from them, 100 MiB by default, so that compaction gets inactive
/// segments to clean). A value under segment.bytes' 1 MiB minimum goes to internal.segment.bytes (Kafka 4.x's
/// escape hatch for small segments, for tests).
void set_segment_bytes(internal_topic_spec& spec, int64_t bytes);

/// Creates the topic when missing. Cluster mode, as Kafka: COORDINATOR_NOT_AVAILABLE while fewer brokers than
/// `replication_factor` are registered (so a cluster starting up does not get the topic with fewer replicas for
/// good), and while the created topic has not reached this broker's registry yet. Errors: those, or the
/// CreateTopics error (TOPIC_ALREADY_EXISTS counts as success). Thread-safe (topic_registry serializes creation).
kafka_error ensure_internal_topic(topic_registry& topics, const internal_topic_spec& spec);

}  // namespace sluice::broker::coordinator
