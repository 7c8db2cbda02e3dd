// CreatePartitions (key 37, KIP-195): raises the partition count of existing topics, optionally with a
// replica assignment per new partition; validate_only checks without changing anything.
#include <map>

#include "broker/handlers/cluster_wait.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::create_partitions_response;

// A topic named twice gets ONE result, INVALID_REQUEST, and is not changed (Kafka's KafkaApis and
// ControllerApis). TimeoutMs needs no wait here: the change is persisted and the logs are open before the
// answer, so every accepted topic is complete when the response leaves (Kafka 4.0 answers after the
// controller committed the records, too).
task<response> create_partitions(broker_services& svc, request_context& rc, protocol::create_partitions_request& req) {
  response resp;
  // Kafka's controller deadline is now + timeout_ms: with 0 (or less) it has passed when the request runs, nothing
  // changes and the whole request fails (CreatePartitionsRequest.getErrorResponse: every topic as sent).
  if (req.timeout_ms <= 0) {
    for (const auto& t : req.topics) {
      response::create_partitions_topic_result out;
      out.name = t.name;
      out.error_code = error_code::request_timed_out;
      out.error_message = std::nullopt;  // Kafka: the TimeoutException's message, null
      resp.results.push_back(std::move(out));
    }
    co_return resp;
  }
  std::map<std::string, int> seen;
  for (const auto& t : req.topics) ++seen[t.name];

  std::vector<std::pair<std::string, int32_t>> grown;  // cluster mode: waited for below
  for (const auto& t : req.topics) {
    int& count = seen[t.name];
    if (count == 0) continue;  // a duplicate already answered
    response::create_partitions_topic_result out;
    out.name = t.name;
    if (count > 1) {
      count = 0;
      out.error_code = error_code::invalid_request;
      out.error_message = "Duplicate topic name.";
      resp.results.push_back(std::move(out));
      continue;
    }
    if (!authorized(svc, rc, acl_operation::alter, resource_type::topic, t.name)) {
      out.error_code = error_code::topic_authorization_failed;  // Kafka: Alter on the topic
      out.error_message = "The topic authorization is failed.";
      resp.results.push_back(std::move(out));
      continue;
    }
    std::optional<std::vector<std::vector<int32_t>>> assignments;
    if (t.assignments) {
      assignments.emplace();
      for (const auto& a : *t.assignments) assignments->push_back(a.broker_ids);
    }
    auto err = svc.topics.add_partitions(t.name, t.count, assignments, req.validate_only);
    out.error_code = err.code;
    if (!err.ok()) out.error_message = std::move(err.message);
    else if (!req.validate_only && svc.topics.cluster_mode()) grown.emplace_back(t.name, t.count);
    resp.results.push_back(std::move(out));
  }
  // Cluster mode: answer once the new partitions have leaders here (see cluster_wait.h).
  auto wait_op = wait_for_leaders(svc, rc, std::move(grown), req.timeout_ms);
  co_await std::move(wait_op);  // not inside co_await: GCC 12
  co_return resp;
}

}  // namespace sluice::broker::handlers
