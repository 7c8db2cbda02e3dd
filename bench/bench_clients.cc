// sluice_bench's librdkafka clients (bench.h): the target (a broker, or librdkafka's in-process mock
// cluster) with its topic creation, the producer with its delivery-report counting, and the legacy
// tail consumer.
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"

namespace sluice::bench {
namespace {

void dr_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<dr_state*>(opaque);
  if (m->err) {
    if (st->failed.fetch_add(1) == 0) st->first_error = rd_kafka_err2str(m->err);
  } else {
    st->ok.fetch_add(1);
    if (m->_private != nullptr)
      st->ack_lat.push_back(now_ns() - static_cast<int64_t>(reinterpret_cast<intptr_t>(m->_private)));
  }
  st->last_dr = steady::now();
}

}  // namespace

void conf_set(rd_kafka_conf_t* conf, const std::string& k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
    throw std::runtime_error("config " + k + "=" + v + ": " + err);
}

target::target(const options& o) {
  if (!o.mock) {
    bootstrap = o.bootstrap;
    return;
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  conf_set(conf, "log_level", "3");
  char err[512];
  mock_owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (mock_owner == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  mcluster = rd_kafka_mock_cluster_new(mock_owner, o.mock_brokers);
  if (mcluster == nullptr) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
  bootstrap = rd_kafka_mock_cluster_bootstraps(mcluster);
}

target::~target() {
  if (mcluster != nullptr) rd_kafka_mock_cluster_destroy(mcluster);
  if (mock_owner != nullptr) rd_kafka_destroy(mock_owner);
}

void target::create_topic(const options& o, const std::string& topic) {
  if (mcluster != nullptr) {
    auto e = rd_kafka_mock_topic_create(mcluster, topic.c_str(), o.partitions,
                                        o.replication_factor);
    if (e) throw std::runtime_error("mock topic create: " + std::string(rd_kafka_err2str(e)));
    return;
  }
  rd_kafka_conf_t* conf = base_conf(o);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), o.partitions, o.replication_factor,
                                                  err, sizeof err);
  if (nt == nullptr) throw std::runtime_error(std::string("NewTopic: ") + err);
  for (auto& [k, v] : o.topic_configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(ao, 10000, err, sizeof err);
  rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, static_cast<int>(o.timeout * 1000));
  std::string problem;
  if (ev == nullptr) problem = "CreateTopics timed out";
  else if (rd_kafka_event_error(ev)) problem = rd_kafka_event_error_string(ev);
  else {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    if (n == 1 && rd_kafka_topic_result_error(res[0]) &&
        rd_kafka_topic_result_error(res[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
      problem = rd_kafka_err2str(rd_kafka_topic_result_error(res[0]));
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(ao);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
  if (!problem.empty()) throw std::runtime_error("CreateTopics " + topic + ": " + problem);
}

rd_kafka_conf_t* target::base_conf(const options& o) const {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  conf_set(conf, "bootstrap.servers", bootstrap);
  conf_set(conf, "log_level", "3");
  for (auto& [k, v] : o.extra) conf_set(conf, k, v);
  return conf;
}

rd_kafka_t* make_producer(const options& o, const target& t, dr_state* st) {
  rd_kafka_conf_t* conf = t.base_conf(o);
  conf_set(conf, "acks", o.acks);
  conf_set(conf, "compression.type", o.compression);
  if (!o.linger_ms.empty()) conf_set(conf, "linger.ms", o.linger_ms);
  // Let the producer queue hold the whole run so produce() rarely sees QUEUE_FULL (as
  // rdkafka_performance does); the broker, not the local queue, is what is measured.
  conf_set(conf, "queue.buffering.max.messages", "1000000");
  conf_set(conf, "queue.buffering.max.kbytes", "1048576");
  for (auto& [k, v] : o.extra) conf_set(conf, k, v);  // -X wins
  rd_kafka_conf_set_opaque(conf, st);
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  return rk;
}

tail_consumer::tail_consumer(const options& o, const target& t, const std::string& topic,
                             const std::vector<int64_t>& start) {
  rd_kafka_conf_t* conf = t.base_conf(o);
  conf_set(conf, "enable.partition.eof", "true");
  conf_set(conf, "fetch.wait.max.ms", "100");
  for (auto& [k, v] : o.extra) conf_set(conf, k, v);
  char err[512];
  rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  rd_kafka_topic_conf_t* tc = rd_kafka_topic_conf_new();
  rd_kafka_topic_conf_set(tc, "auto.offset.reset", "earliest", err, sizeof err);
  rkt = rd_kafka_topic_new(rk, topic.c_str(), tc);
  q = rd_kafka_queue_new(rk);
  partitions = static_cast<int>(start.size());
  for (int p = 0; p < partitions; ++p)
    if (rd_kafka_consume_start_queue(rkt, p, start[p], q) != 0)
      throw std::runtime_error("consume_start: " +
                               std::string(rd_kafka_err2str(rd_kafka_last_error())));
}

tail_consumer::~tail_consumer() {
  for (int p = 0; p < partitions; ++p) rd_kafka_consume_stop(rkt, p);
  rd_kafka_queue_destroy(q);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
}

}  // namespace sluice::bench
