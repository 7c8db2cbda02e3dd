// AlterReplicaLogDirs (key 34; KIP-113): moves replicas of this broker between its log dirs (log.dirs), as
// kafka-reassign-partitions.sh does for a plan with "log_dirs". Needs ALTER on the cluster (every partition:
// CLUSTER_AUTHORIZATION_FAILED). Per partition, in Kafka's order (ReplicaManager.alterReplicaLogDirs):
//  - INVALID_TOPIC_EXCEPTION when the partition's future directory name would pass 255 bytes;
//  - LOG_DIR_NOT_FOUND unless the path is exactly the absolute path of one of log.dirs;
//  - the destination is remembered for a replica created here later (Kafka's preferred log dir), then
//    UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition, REPLICA_NOT_AVAILABLE when this broker holds no
//    replica of it;
//  - NONE once the replica is in that dir: Sluice copies the log on the partition's strand before answering
//    (storage::log_manager::move), where Kafka answers at once and copies in the background (DescribeLogDirs shows
//    its "future" replica meanwhile); appends to the partition wait for the copy. A failed copy: KAFKA_STORAGE_ERROR.
// A partition named under several paths goes to the last one (Kafka keys the request by partition). Results are
// grouped by topic in order of first appearance (Kafka: hash order).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "broker/call_on.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::alter_replica_log_dirs_response;

task<response> alter_replica_log_dirs(broker_services& svc, request_context& rc,
                                      protocol::alter_replica_log_dirs_request& req) {
  response resp;
  // Kafka's partitionDirs: partition -> path, the last path naming a partition winning; answered per topic.
  std::vector<std::pair<std::string, int32_t>> order;
  std::map<std::pair<std::string, int32_t>, std::string> dest;
  for (const auto& d : req.dirs)
    for (const auto& t : d.topics)
      for (int32_t p : t.partitions) {
        auto [it, fresh] = dest.insert_or_assign({t.name, p}, d.path);
        if (fresh) order.emplace_back(t.name, p);
      }
  const bool allowed = cluster_authorized(svc, rc, acl_operation::alter);
  auto& logs = svc.topics.logs();
  std::map<std::string, size_t> topic_at;
  for (const auto& [name, index] : order) {
    error_code code = error_code::none;
    const std::string& path = dest[{name, index}];
    const size_t dir_bytes = name.size() + 1 + std::to_string(index).size();
    if (!allowed) {
      code = error_code::cluster_authorization_failed;
    } else if (dir_bytes + storage::log_manager::future_suffix_bytes > 255) {
      code = error_code::invalid_topic_exception;  // "The topic name is too long." (KAFKA-4893)
    } else if (auto d = logs.find_log_dir(path); !d) {
      code = error_code::log_dir_not_found;
    } else {
      logs.set_preferred_dir(name, index, *d);
      auto t = svc.topics.find(name);
      auto p = partition_of(t, index);
      if (!p || p->closed()) {
        // Kafka keeps REPLICA_NOT_AVAILABLE here where it would say NOT_LEADER_OR_FOLLOWER (no replica here).
        const bool exists = missing_partition_error(t, index) == error_code::not_leader_or_follower;
        code = exists ? error_code::replica_not_available : error_code::unknown_topic_or_partition;
      } else {
        // GCC 12 destroys temporaries of a co_await full-expression twice: build the operation first.
        auto move_op = call_on(p->strand(), [&logs, p, name = name, index, to = *d, &path]() -> error_code {
          if (p->closed()) return error_code::replica_not_available;
          const auto before = p->dir();
          auto moved = logs.move(name, index, to);  // already there: the same log, nothing copied
          if (!moved) {
            sluice::log::error("AlterReplicaLogDirs {}-{}: {}", name, index, moved.err().message);
            return error_code::kafka_storage_error;
          }
          p->replace_log(*moved);
          if (p->dir() != before) sluice::log::info("moved {}-{} to log dir {}", name, index, path);
          return error_code::none;
        });
        code = co_await std::move(move_op);
      }
    }
    auto [at, fresh] = topic_at.try_emplace(name, resp.results.size());
    if (fresh) {
      response::alter_replica_log_dir_topic_result r;
      r.topic_name = name;
      resp.results.push_back(std::move(r));
    }
    response::alter_replica_log_dir_partition_result pr;
    pr.partition_index = index;
    pr.error_code = code;
    resp.results[at->second].partitions.push_back(pr);
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
