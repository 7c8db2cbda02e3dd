// Small RAII + helper layer over librdkafka's C API for the integration tests.
// Every wait is bounded by an explicit deadline.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sluice::itest {

using clock_type = std::chrono::steady_clock;

struct rk_deleter {
  void operator()(rd_kafka_t* rk) const {
    if (rk) rd_kafka_destroy(rk);
  }
};
using rk_ptr = std::unique_ptr<rd_kafka_t, rk_deleter>;

struct queue_deleter {
  void operator()(rd_kafka_queue_t* q) const {
    if (q) rd_kafka_queue_destroy(q);
  }
};
using queue_ptr = std::unique_ptr<rd_kafka_queue_t, queue_deleter>;

struct event_deleter {
  void operator()(rd_kafka_event_t* e) const {
    if (e) rd_kafka_event_destroy(e);
  }
};
using event_ptr = std::unique_ptr<rd_kafka_event_t, event_deleter>;

struct metadata_deleter {
  void operator()(const rd_kafka_metadata_t* m) const {
    if (m) rd_kafka_metadata_destroy(m);
  }
};
using metadata_ptr = std::unique_ptr<const rd_kafka_metadata_t, metadata_deleter>;

// A header as consumed/produced; value nullopt = null header value.
struct header {
  std::string name;
  std::optional<std::string> value;
  bool operator==(const header&) const = default;
};

// One record as we expect or observed it.
struct record {
  int32_t partition = -1;
  int64_t offset = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<header> headers;
  int64_t timestamp = -1;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  // delivery report / consume error
};

inline rd_kafka_conf_t* make_conf(const std::string& bootstrap,
                                  const std::vector<std::pair<std::string, std::string>>& extra) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error("conf " + k + "=" + v + ": " + err);
    }
  };
  set("bootstrap.servers", bootstrap);
  set("client.id", "sluice-itest");
  // Keep failures fast and visible: no endless reconnect loops in tests.
  set("reconnect.backoff.ms", "50");
  set("reconnect.backoff.max.ms", "500");
  set("log_level", "4");  // warnings and worse on stderr of the test
  for (const auto& [k, v] : extra) set(k, v);
  return conf;
}

inline rk_ptr make_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  }
  return rk_ptr(rk);
}

// Polls `q` until an event of `type` arrives or the deadline passes (nullptr then).
inline event_ptr wait_event(rd_kafka_queue_t* q, rd_kafka_event_type_t type,
                            std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  while (clock_type::now() < deadline) {
    event_ptr ev(rd_kafka_queue_poll(q, 200));
    if (ev && rd_kafka_event_type(ev.get()) == type) return ev;
  }
  return nullptr;
}

struct topic_result {
  std::string name;
  rd_kafka_resp_err_t err;
  std::string msg;
};

// Admin CreateTopics with replication factor 1; returns one result per topic (throws on timeout).
inline std::vector<topic_result> create_topics(rd_kafka_t* rk,
                                               const std::vector<std::pair<std::string, int>>& topics,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  std::vector<rd_kafka_NewTopic_t*> nts;
  char err[512];
  for (const auto& [name, parts] : topics) {
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(name.c_str(), parts, 1, err, sizeof err);
    if (!nt) throw std::runtime_error("NewTopic_new " + name + ": " + err);
    nts.push_back(nt);
  }
  queue_ptr q(rd_kafka_queue_new(rk));
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(opts, static_cast<int>(timeout.count()), err, sizeof err);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, err, sizeof err);
  rd_kafka_CreateTopics(rk, nts.data(), nts.size(), opts, q.get());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy_array(nts.data(), nts.size());

  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_CREATETOPICS_RESULT, timeout + std::chrono::seconds(5));
  if (!ev) throw std::runtime_error("CreateTopics: no result event");
  std::vector<topic_result> out;
  if (rd_kafka_event_error(ev.get())) {
    // Whole-request failure: report it for every topic.
    for (const auto& [name, parts] : topics)
      out.push_back({name, rd_kafka_event_error(ev.get()), rd_kafka_event_error_string(ev.get())});
    return out;
  }
  const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev.get());
  size_t n = 0;
  const rd_kafka_topic_result_t** trs = rd_kafka_CreateTopics_result_topics(res, &n);
  for (size_t i = 0; i < n; ++i) {
    const char* m = rd_kafka_topic_result_error_string(trs[i]);
    out.push_back({rd_kafka_topic_result_name(trs[i]), rd_kafka_topic_result_error(trs[i]), m ? m : ""});
  }
  return out;
}

inline std::vector<topic_result> delete_topics(rd_kafka_t* rk, const std::vector<std::string>& names,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  std::vector<rd_kafka_DeleteTopic_t*> dts;
  for (const auto& n : names) dts.push_back(rd_kafka_DeleteTopic_new(n.c_str()));
  queue_ptr q(rd_kafka_queue_new(rk));
  char err[512];
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
  rd_kafka_AdminOptions_set_request_timeout(opts, static_cast<int>(timeout.count()), err, sizeof err);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, err, sizeof err);
  rd_kafka_DeleteTopics(rk, dts.data(), dts.size(), opts, q.get());
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_DeleteTopic_destroy_array(dts.data(), dts.size());
  event_ptr ev = wait_event(q.get(), RD_KAFKA_EVENT_DELETETOPICS_RESULT, timeout + std::chrono::seconds(5));
  if (!ev) throw std::runtime_error("DeleteTopics: no result event");
  std::vector<topic_result> out;
  if (rd_kafka_event_error(ev.get())) {
    for (const auto& n : names)
      out.push_back({n, rd_kafka_event_error(ev.get()), rd_kafka_event_error_string(ev.get())});
    return out;
  }
  const rd_kafka_DeleteTopics_result_t* res = rd_kafka_event_DeleteTopics_result(ev.get());
  size_t n = 0;
  const rd_kafka_topic_result_t** trs = rd_kafka_DeleteTopics_result_topics(res, &n);
  for (size_t i = 0; i < n; ++i) {
    const char* m = rd_kafka_topic_result_error_string(trs[i]);
    out.push_back({rd_kafka_topic_result_name(trs[i]), rd_kafka_topic_result_error(trs[i]), m ? m : ""});
  }
  return out;
}

// Metadata for all topics (topic == "") or one topic.
inline metadata_ptr fetch_metadata(rd_kafka_t* rk, const std::string& topic = "",
                                   int timeout_ms = 10000, rd_kafka_resp_err_t* err_out = nullptr) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err;
  if (topic.empty()) {
    err = rd_kafka_metadata(rk, 1, nullptr, &md, timeout_ms);
  } else {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
  }
  if (err_out) *err_out = err;
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return nullptr;
  return metadata_ptr(md);
}

inline const rd_kafka_metadata_topic_t* find_topic(const rd_kafka_metadata_t* md, const std::string& name) {
  for (int i = 0; i < md->topic_cnt; ++i)
    if (name == md->topics[i].topic) return &md->topics[i];
  return nullptr;
}

inline std::vector<header> read_headers(const rd_kafka_message_t* m) {
  std::vector<header> out;
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR || !hdrs) return out;
  const char* name;
  const void* val;
  size_t size;
  for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
    header h{name, std::nullopt};
    if (val) h.value = std::string(static_cast<const char*>(val), size);
    out.push_back(std::move(h));
  }
  return out;
}

inline record to_record(const rd_kafka_message_t* m) {
  record r;
  r.partition = m->partition;
  r.offset = m->offset;
  r.err = m->err;
  if (m->key) r.key = std::string(static_cast<const char*>(m->key), m->key_len);
  if (m->payload) r.value = std::string(static_cast<const char*>(m->payload), m->len);
  r.headers = read_headers(m);
  rd_kafka_timestamp_type_t tstype;
  r.timestamp = rd_kafka_message_timestamp(m, &tstype);
  return r;
}

// Result of consuming partitions by assignment.
struct consumed {
  std::map<int32_t, std::vector<record>> by_partition;
  std::vector<std::string> errors;  // any error other than partition EOF
  size_t total() const {
    size_t n = 0;
    for (const auto& [p, v] : by_partition) n += v.size();
    return n;
  }
};

// Reads partitions [0, partitions) of `topic` from `start_offset` (default: beginning) with the
// simple (legacy) consumer: no consumer group at all (librdkafka 2.0.2 refuses rd_kafka_assign
// without group.id, and a group.id would send FindCoordinator). Reads until every partition reported
// EOF after at least `expected` records in total (or until `timeout`). EOFs are not errors;
// everything else is recorded in `errors`.
inline consumed consume_all(const std::string& bootstrap, const std::string& topic, int partitions,
                            size_t expected, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                            int64_t start_offset = RD_KAFKA_OFFSET_BEGINNING,
                            std::vector<std::pair<std::string, std::string>> extra_conf = {}) {
  std::vector<std::pair<std::string, std::string>> conf_kv{
      {"enable.partition.eof", "true"}, {"fetch.wait.max.ms", "100"}, {"check.crcs", "true"}};
  conf_kv.insert(conf_kv.end(), extra_conf.begin(), extra_conf.end());
  rd_kafka_conf_t* conf = make_conf(bootstrap, conf_kv);
  rk_ptr rk = make_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_conf_t* tconf = rd_kafka_topic_conf_new();
  char errstr[256];
  rd_kafka_topic_conf_set(tconf, "auto.offset.reset", "error", errstr, sizeof errstr);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), tconf);
  queue_ptr q(rd_kafka_queue_new(rk.get()));
  consumed out;
  for (int p = 0; p < partitions; ++p) {
    if (rd_kafka_consume_start_queue(rkt, p, start_offset, q.get()) == -1)
      out.errors.push_back("consume_start p" + std::to_string(p) + ": " + rd_kafka_err2str(rd_kafka_last_error()));
  }
  std::map<int32_t, int64_t> eof_at;  // partition -> offset at last EOF
  auto deadline = clock_type::now() + timeout;
  while (out.errors.empty() && clock_type::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consume_queue(q.get(), 200);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      eof_at[m->partition] = m->offset;
    } else if (m->err) {
      out.errors.push_back("partition " + std::to_string(m->partition) + " offset " +
                           std::to_string(m->offset) + ": " + rd_kafka_err2name(m->err) + " " +
                           rd_kafka_message_errstr(m));
    } else {
      out.by_partition[m->partition].push_back(to_record(m));
      eof_at.erase(m->partition);
    }
    rd_kafka_message_destroy(m);
    if (static_cast<int>(eof_at.size()) == partitions && out.total() >= expected) break;
  }
  for (int p = 0; p < partitions; ++p) rd_kafka_consume_stop(rkt, p);
  q.reset();
  rd_kafka_topic_destroy(rkt);
  return out;
}

inline std::string err_name(rd_kafka_resp_err_t e) { return rd_kafka_err2name(e); }

// A producer that records every delivery report by the index given at produce time.
// Delivery reports are served on the calling thread (poll/flush), so no locking is needed.
class producer {
 public:
  producer(const std::string& bootstrap, std::vector<std::pair<std::string, std::string>> extra) {
    rd_kafka_conf_t* conf = make_conf(bootstrap, extra);
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_dr_msg_cb(conf, &producer::on_delivery);
    rk_ = make_client(RD_KAFKA_PRODUCER, conf);
  }

  rd_kafka_t* rk() const { return rk_.get(); }

  // Enqueues one record; retries (bounded) while the local queue is full.
  rd_kafka_resp_err_t produce(const std::string& topic, int32_t partition, size_t index,
                              const std::optional<std::string>& key, const std::optional<std::string>& value,
                              const std::vector<header>& headers, int64_t timestamp_ms = 0) {
    if (reports_.size() <= index) reports_.resize(index + 1);
    reports_[index].err = RD_KAFKA_RESP_ERR__IN_PROGRESS;
    ++outstanding_;
    for (int attempt = 0; attempt < 1000; ++attempt) {
      rd_kafka_headers_t* hdrs = rd_kafka_headers_new(headers.size());
      for (const auto& h : headers)
        rd_kafka_header_add(hdrs, h.name.data(), static_cast<ssize_t>(h.name.size()),
                            h.value ? h.value->data() : nullptr,
                            h.value ? static_cast<ssize_t>(h.value->size()) : 0);
      const char* kptr = key ? key->data() : nullptr;
      size_t klen = key ? key->size() : 0;
      char* vptr = value ? const_cast<char*>(value->data()) : nullptr;
      size_t vlen = value ? value->size() : 0;
      rd_kafka_resp_err_t err = rd_kafka_producev(
          rk_.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(kptr, klen), RD_KAFKA_V_VALUE(vptr, vlen),
          RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_TIMESTAMP(timestamp_ms),
          RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(index + 1))), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return err;
      rd_kafka_headers_destroy(hdrs);  // not taken over on failure
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        --outstanding_;
        reports_[index].err = err;
        return err;
      }
      rd_kafka_poll(rk_.get(), 10);
    }
    --outstanding_;
    reports_[index].err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
    return RD_KAFKA_RESP_ERR__QUEUE_FULL;
  }

  void poll(int ms) { rd_kafka_poll(rk_.get(), ms); }

  // Waits (bounded) until every produced record has a delivery report. True if none outstanding.
  bool flush(std::chrono::milliseconds timeout) {
    rd_kafka_flush(rk_.get(), static_cast<int>(timeout.count()));
    return outstanding_ == 0;
  }

  size_t outstanding() const { return outstanding_; }
  size_t acked() const { return acked_; }
  const std::vector<record>& reports() const { return reports_; }

 private:
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<producer*>(opaque);
    size_t index = reinterpret_cast<uintptr_t>(m->_private) - 1;
    if (index >= self->reports_.size()) return;
    record& r = self->reports_[index];
    r.partition = m->partition;
    r.offset = m->offset;
    r.err = m->err;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) ++self->acked_;
    --self->outstanding_;
  }

  rk_ptr rk_;
  std::vector<record> reports_;
  size_t outstanding_ = 0;
  size_t acked_ = 0;
};

}  // namespace sluice::itest
