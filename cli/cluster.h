#pragma once
// cluster: the CLI's view of a Kafka cluster. It starts from the --brokers list (the first address that
// answers is the bootstrap connection), learns brokers, controller and partition leaders from Metadata, and
// keeps one connection per broker id, opened on first use. Commands route their requests through it: leaders
// for Produce/Fetch/ListOffsets, the group coordinator (FindCoordinator) for group APIs, the controller (or the
// bootstrap broker when Metadata names none) for admin APIs, as the Java AdminClient does.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/connection.h"
#include "protocol/messages/metadata.h"

namespace sluice::cli {

struct partition_info {
  int32_t partition = 0;
  int32_t leader = -1;
  int32_t leader_epoch = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  std::vector<int32_t> offline;
  protocol::error_code error = protocol::error_code::none;
};

struct topic_info {
  std::string name;
  protocol::uuid topic_id;
  bool internal = false;
  protocol::error_code error = protocol::error_code::none;
  std::vector<partition_info> partitions;  // by partition index
};

struct broker_info {
  int32_t id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

struct cluster_metadata {
  std::optional<std::string> cluster_id;
  int32_t controller_id = -1;
  std::vector<broker_info> brokers;  // by id
  std::vector<topic_info> topics;    // in the broker's order
  const topic_info* find(const std::string& name) const;
};

class cluster {
 public:
  cluster(std::vector<endpoint> bootstrap, std::chrono::milliseconds timeout, std::string client_id,
          std::shared_ptr<const client_security> security = nullptr);
  /// How connections are made (TLS, SASL): for connections of their own, such as the heartbeat thread's.
  const std::shared_ptr<const client_security>& security() const { return security_; }

  /// The first bootstrap broker that accepts (exit 3 naming every address tried when none does).
  connection& bootstrap();
  /// The connection to broker `id` (from the last metadata), opened on first use.
  connection& node(int32_t id);
  /// The controller named by Metadata, else the bootstrap broker.
  connection& controller();
  /// The coordinator of `group` (FindCoordinator, key type 0), retried while it is loading or not yet
  /// available (bounded by the timeout).
  connection& coordinator(const std::string& group);

  /// Metadata for `topics` (nullopt: every topic). `auto_create` is the request's allow_auto_topic_creation.
  const cluster_metadata& refresh(std::optional<std::vector<std::string>> topics, bool auto_create = false);
  const cluster_metadata& metadata() const { return metadata_; }
  /// Metadata of one topic; UNKNOWN_TOPIC_OR_PARTITION (exit 1) when it does not exist. Retries while leaders are
  /// being elected (LEADER_NOT_AVAILABLE) within the timeout.
  /// `auto_create` asks the broker to create a missing topic (allow_auto_topic_creation), as producers do.
  const topic_info& topic(const std::string& name, bool auto_create = false);

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::vector<endpoint> bootstrap_list_;
  std::chrono::milliseconds timeout_;
  std::string client_id_;
  std::shared_ptr<const client_security> security_;
  asio::io_context io_;
  std::unique_ptr<connection> bootstrap_;
  std::map<int32_t, std::unique_ptr<connection>> nodes_;
  cluster_metadata metadata_;
};

}  // namespace sluice::cli
