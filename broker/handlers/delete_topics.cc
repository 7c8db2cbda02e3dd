// DeleteTopics (key 20): by name (v0-5) or by name or topic id (v6, KIP-516).
#include <map>
#include <set>

#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/topic_registry.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::delete_topics_response;

task<response> delete_topics(broker_services& svc, request_context& rc, protocol::delete_topics_request& req) {
  const int16_t version = rc.header.api_version;
  struct wanted {
    std::optional<std::string> name;
    protocol::uuid id;
  };
  std::vector<wanted> targets;
  if (version >= 6) {
    for (const auto& t : req.topics) targets.push_back({t.name, t.topic_id});
  } else {
    for (const auto& n : req.topic_names) targets.push_back({n, {}});
  }

  response resp;
  // Kafka's controller deadline is now + timeout_ms: with 0 (or less) it has passed when the request runs, nothing
  // is deleted and the whole request fails (DeleteTopicsRequest.getErrorResponse: every entry as sent, no
  // message). Deletion being disabled is checked before (ControllerApis.deleteTopics throws first).
  if (req.timeout_ms <= 0 && svc.config.delete_topic_enable) {
    for (const auto& w : targets) {
      response::deletable_topic_result out;
      out.name = w.name;
      out.topic_id = w.id;
      out.error_code = error_code::request_timed_out;
      out.error_message = std::nullopt;
      resp.responses.push_back(std::move(out));
    }
    co_return resp;
  }

  // Kafka's ControllerApis.deleteTopics checks the request first: a name or id given twice gets one
  // INVALID_REQUEST entry and is not deleted; a v6 entry must name exactly one of name and id.
  std::map<std::string, int> name_count;
  std::map<protocol::uuid, int> id_count;
  // Only an entry that names one of the two counts towards that kind's duplicates: one naming both (refused
  // below) counts towards neither.
  for (const auto& w : targets) {
    if (w.name && w.id.is_zero()) ++name_count[*w.name];
    if (!w.name && !w.id.is_zero()) ++id_count[w.id];
  }
  std::set<std::string> names_answered;
  std::set<protocol::uuid> ids_answered;

  for (auto& w : targets) {
    response::deletable_topic_result out;
    out.name = w.name;
    out.topic_id = w.id;
    auto refuse = [&](std::string message) {
      out.error_code = error_code::invalid_request;
      out.error_message = std::move(message);
      resp.responses.push_back(std::move(out));
    };
    if (version >= 6 && !w.name && w.id.is_zero()) {
      refuse("Neither topic name nor id were specified.");
      continue;
    }
    if (version >= 6 && w.name && !w.id.is_zero()) {
      refuse("You may not specify both topic name and topic id.");
      continue;
    }
    if (w.name && name_count[*w.name] > 1) {
      if (names_answered.insert(*w.name).second) refuse("Duplicate topic name.");
      continue;
    }
    if (!w.name && id_count[w.id] > 1) {
      if (ids_answered.insert(w.id).second) refuse("Duplicate topic id.");
      continue;
    }
    // A non-null name is a name, "" and other names Kafka's Topic.validate rejects included: Kafka's
    // controller looks them up like any name and answers UNKNOWN_TOPIC_OR_PARTITION with the error's default
    // message (ControllerApis.deleteTopics, ReplicationControlManager.findTopicIds). A null name (v6+) means
    // the topic id.
    const bool by_name = w.name.has_value();
    std::shared_ptr<const topic> t = by_name ? svc.topics.find(*w.name) : svc.topics.find(from_wire(w.id));
    if (!authorized(svc, rc, acl_operation::remove, resource_type::topic, t ? t->name : w.name.value_or(""))) {
      // Kafka: Delete on the topic (checked before existence, so an unauthorized client learns nothing).
      out.error_code = error_code::topic_authorization_failed;
      out.error_message = "Authorization failed.";
    } else if (!svc.config.delete_topic_enable) {
      out.error_code = error_code::topic_deletion_disabled;
    } else if (!t) {
      out.error_code = by_name ? error_code::unknown_topic_or_partition : error_code::unknown_topic_id;
      out.error_message = by_name ? "This server does not host this topic-partition." : "This server does not host this topic ID.";
    } else {
      out.name = t->name;
      out.topic_id = to_wire(t->id);
      auto remove_op = svc.topics.remove(t->name);  // no temporaries inside co_await (GCC 12)
      auto err = co_await std::move(remove_op);
      out.error_code = err.code;
      if (!err.ok()) out.error_message = err.message;
    }
    resp.responses.push_back(std::move(out));
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
