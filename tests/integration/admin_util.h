// Admin helpers over librdkafka 2.0.2's C API for the storage and admin tests: CreateTopics with configs,
// DescribeConfigs, AlterConfigs, DeleteRecords, CreatePartitions. Every wait is bounded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rdkafka_util.h"

namespace sluice::itest {

// CreateTopics (replication factor 1) with topic configs; returns the topic's error (message in *msg).
inline rd_kafka_resp_err_t create_topic_with_configs(rd_kafka_t* rk, const std::string& name, int partitions,
                                                     const std::vector<std::pair<std::string, std::string>>& configs,
                                                     std::string* msg = nullptr) {
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(name.c_str(), partitions, 1, err, sizeof err);
  if (!nt) throw std::runtime_error(std::string("NewTopic_new: ") + err);
  for (const auto& [k, v] : configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q.get());
  rd_kafka_NewTopic_destroy(nt);
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_CREATETOPICS_RESULT, std::chrono::seconds(20));
  if (!ev) throw std::runtime_error("CreateTopics: no result");
  std::string m;
  rd_kafka_resp_err_t e;
  if (rd_kafka_event_error(ev.get())) {
    m = rd_kafka_event_error_string(ev.get());
    e = rd_kafka_event_error(ev.get());
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** trs =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev.get()), &n);
    if (n != 1) throw std::runtime_error("CreateTopics: expected one result");
    const char* s = rd_kafka_topic_result_error_string(trs[0]);
    m = s ? s : "";
    e = rd_kafka_topic_result_error(trs[0]);
  }
  if (msg) *msg = m;
  return e;
}

struct config_synonym {
  std::string name;
  std::optional<std::string> value;
  rd_kafka_ConfigSource_t source;
};

struct config_entry {
  std::optional<std::string> value;
  rd_kafka_ConfigSource_t source = RD_KAFKA_CONFIG_SOURCE_UNKNOWN_CONFIG;
  bool is_default = false, read_only = false, sensitive = false;
  std::vector<config_synonym> synonyms;
};

struct describe_result {
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  // request-level or resource-level error
  std::string msg;
  std::map<std::string, config_entry> entries;
};

inline describe_result describe_topic_configs(rd_kafka_t* rk, const std::string& topic) {
  describe_result out;
  rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_DescribeConfigs(rk, &res, 1, nullptr, q.get());
  rd_kafka_ConfigResource_destroy(res);
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, std::chrono::seconds(20));
  if (!ev) throw std::runtime_error("DescribeConfigs: no result");
  if (rd_kafka_event_error(ev.get())) {
    out.err = rd_kafka_event_error(ev.get());
    out.msg = rd_kafka_event_error_string(ev.get());
    return out;
  }
  size_t n = 0;
  const rd_kafka_ConfigResource_t** rs =
      rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev.get()), &n);
  if (n != 1) throw std::runtime_error("DescribeConfigs: expected one resource");
  out.err = rd_kafka_ConfigResource_error(rs[0]);
  if (const char* s = rd_kafka_ConfigResource_error_string(rs[0])) out.msg = s;
  size_t cnt = 0;
  const rd_kafka_ConfigEntry_t** es = rd_kafka_ConfigResource_configs(rs[0], &cnt);
  for (size_t i = 0; i < cnt; ++i) {
    config_entry e;
    if (const char* v = rd_kafka_ConfigEntry_value(es[i])) e.value = v;
    e.source = rd_kafka_ConfigEntry_source(es[i]);
    e.is_default = rd_kafka_ConfigEntry_is_default(es[i]);
    e.read_only = rd_kafka_ConfigEntry_is_read_only(es[i]);
    e.sensitive = rd_kafka_ConfigEntry_is_sensitive(es[i]);
    size_t sc = 0;
    const rd_kafka_ConfigEntry_t** syns = rd_kafka_ConfigEntry_synonyms(es[i], &sc);
    for (size_t j = 0; j < sc; ++j) {
      config_synonym s{rd_kafka_ConfigEntry_name(syns[j]), std::nullopt, rd_kafka_ConfigEntry_source(syns[j])};
      if (const char* v = rd_kafka_ConfigEntry_value(syns[j])) s.value = v;
      e.synonyms.push_back(std::move(s));
    }
    out.entries[rd_kafka_ConfigEntry_name(es[i])] = std::move(e);
  }
  return out;
}

// AlterConfigs (the non-incremental API: the given set REPLACES every override of the topic).
inline std::pair<rd_kafka_resp_err_t, std::string> alter_topic_configs(
    rd_kafka_t* rk, const std::string& topic, const std::vector<std::pair<std::string, std::string>>& configs,
    bool validate_only = false) {
  rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  for (const auto& [k, v] : configs) rd_kafka_ConfigResource_set_config(res, k.c_str(), v.c_str());
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
  char err[256];
  if (validate_only) rd_kafka_AdminOptions_set_validate_only(opts, 1, err, sizeof err);
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_AlterConfigs(rk, &res, 1, opts, q.get());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_ConfigResource_destroy(res);
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, std::chrono::seconds(20));
  if (!ev) throw std::runtime_error("AlterConfigs: no result");
  if (rd_kafka_event_error(ev.get())) return {rd_kafka_event_error(ev.get()), rd_kafka_event_error_string(ev.get())};
  size_t n = 0;
  const rd_kafka_ConfigResource_t** rs =
      rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev.get()), &n);
  if (n != 1) throw std::runtime_error("AlterConfigs: expected one resource");
  const char* s = rd_kafka_ConfigResource_error_string(rs[0]);
  return {rd_kafka_ConfigResource_error(rs[0]), s ? s : ""};
}

struct delete_records_outcome {
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  // request level
  std::map<int32_t, std::pair<rd_kafka_resp_err_t, int64_t>> partitions;  // partition -> (error, low watermark)
};

// DeleteRecords: offsets per partition of one topic (-1 = the high watermark).
inline delete_records_outcome delete_records(rd_kafka_t* rk, const std::string& topic,
                                             const std::map<int32_t, int64_t>& before) {
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(static_cast<int>(before.size()));
  for (const auto& [p, o] : before) rd_kafka_topic_partition_list_add(l, topic.c_str(), p)->offset = o;
  rd_kafka_DeleteRecords_t* dr = rd_kafka_DeleteRecords_new(l);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETERECORDS);
  char err[256];
  rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, err, sizeof err);
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_DeleteRecords(rk, &dr, 1, opts, q.get());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_DeleteRecords_destroy(dr);
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_DELETERECORDS_RESULT, std::chrono::seconds(20));
  if (!ev) throw std::runtime_error("DeleteRecords: no result");
  delete_records_outcome out;
  out.err = rd_kafka_event_error(ev.get());
  const rd_kafka_topic_partition_list_t* offs =
      rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev.get()));
  if (offs)
    for (int i = 0; i < offs->cnt; ++i)
      out.partitions[offs->elems[i].partition] = {offs->elems[i].err, offs->elems[i].offset};
  return out;
}

// One topic of a CreatePartitions request: the new total count and, optionally, the replicas of each new
// partition in order.
struct new_partitions {
  std::string topic;
  int total = 0;
  std::vector<std::vector<int32_t>> assignments;
};

// CreatePartitions (rd_kafka_CreatePartitions); one result per topic in the answer's order. A request-level
// error comes back as one result with an empty name.
inline std::vector<topic_result> create_partitions(rd_kafka_t* rk, const std::vector<new_partitions>& topics,
                                                   bool validate_only = false, int operation_timeout_ms = 10000) {
  char err[512];
  std::vector<rd_kafka_NewPartitions_t*> nps;
  for (const auto& t : topics) {
    rd_kafka_NewPartitions_t* np = rd_kafka_NewPartitions_new(t.topic.c_str(), static_cast<size_t>(t.total), err, sizeof err);
    if (!np) throw std::runtime_error(std::string("NewPartitions_new: ") + err);
    for (size_t i = 0; i < t.assignments.size(); ++i) {
      auto ids = t.assignments[i];
      if (rd_kafka_NewPartitions_set_replica_assignment(np, static_cast<int32_t>(i), ids.data(), ids.size(), err,
                                                        sizeof err))
        throw std::runtime_error(std::string("NewPartitions_set_replica_assignment: ") + err);
    }
    nps.push_back(np);
  }
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, operation_timeout_ms, err, sizeof err);
  if (validate_only) rd_kafka_AdminOptions_set_validate_only(opts, 1, err, sizeof err);
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_CreatePartitions(rk, nps.data(), nps.size(), opts, q.get());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewPartitions_destroy_array(nps.data(), nps.size());
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, std::chrono::seconds(20));
  if (!ev) throw std::runtime_error("CreatePartitions: no result");
  std::vector<topic_result> out;
  if (rd_kafka_event_error(ev.get())) {
    out.push_back({"", rd_kafka_event_error(ev.get()), rd_kafka_event_error_string(ev.get())});
    return out;
  }
  size_t n = 0;
  const rd_kafka_topic_result_t** trs =
      rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev.get()), &n);
  for (size_t i = 0; i < n; ++i) {
    const char* s = rd_kafka_topic_result_error_string(trs[i]);
    out.push_back({rd_kafka_topic_result_name(trs[i]), rd_kafka_topic_result_error(trs[i]), s ? s : ""});
  }
  return out;
}

}  // namespace sluice::itest
