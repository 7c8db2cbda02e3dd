// DescribeLogDirs (key 35): per log dir, the partitions it holds and their sizes (KIP-113); v4 adds the
// file system's total and usable bytes (KIP-827).
#include <sys/statvfs.h>

#include <map>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_log_dirs_response;

task<response> describe_log_dirs(broker_services& svc, request_context& rc, protocol::describe_log_dirs_request& req) {
  response resp;
  resp.error_code = error_code::none;
  if (!cluster_authorized(svc, rc, acl_operation::describe)) {
    resp.error_code = error_code::cluster_authorization_failed;  // Kafka: Describe on the cluster (v3+ carries it)
    co_return resp;
  }
  std::map<std::filesystem::path, response::describe_log_dirs_result> by_dir;
  for (const auto& dir : svc.topics.log_dirs()) {
    response::describe_log_dirs_result r;
    r.error_code = error_code::none;
    std::error_code ec;
    r.log_dir = std::filesystem::absolute(dir, ec).lexically_normal().string();
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) == 0) {
      r.total_bytes = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
      r.usable_bytes = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    }
    by_dir.emplace(std::filesystem::absolute(dir, ec).lexically_normal(), std::move(r));
  }
  auto add = [&](const topic& t, int32_t index) {
    if (index < 0 || index >= static_cast<int32_t>(t.partitions.size())) return;
    const auto& p = t.partitions[static_cast<size_t>(index)];
    if (!p) return;  // cluster mode: no replica on this broker
    std::error_code ec;
    auto it = by_dir.find(std::filesystem::absolute(p->dir().parent_path(), ec).lexically_normal());
    if (it == by_dir.end()) return;
    auto& topics = it->second.topics;
    if (topics.empty() || topics.back().name != t.name) {
      response::describe_log_dirs_topic dt;
      dt.name = t.name;
      topics.push_back(std::move(dt));
    }
    response::describe_log_dirs_partition dp;
    dp.partition_index = index;
    dp.partition_size = p->size_bytes();
    dp.offset_lag = 0;
    dp.is_future_key = false;
    topics.back().partitions.push_back(dp);
  };
  if (!req.topics.has_value()) {
    for (const auto& t : svc.topics.all())
      for (int32_t i = 0; i < static_cast<int32_t>(t->partitions.size()); ++i) add(*t, i);
  } else {
    for (const auto& wanted : *req.topics)
      if (auto t = svc.topics.find(wanted.topic))
        for (int32_t i : wanted.partitions) add(*t, i);
  }
  for (auto& [dir, r] : by_dir) resp.results.push_back(std::move(r));
  co_return resp;
}

}  // namespace sluice::broker::handlers
