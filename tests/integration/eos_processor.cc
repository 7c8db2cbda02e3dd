// A consume-transform-produce processor with exactly-once semantics (KIP-98, KIP-447), as a separate process so
// that tests can kill -9 it: reads `input` in the consumer group `group` (read_committed), writes each record's
// value prefixed with "out-" to `output` (same partition), and commits its input offsets in the same transaction
// (send_offsets_to_transaction). An abortable error aborts and rewinds to the committed offsets; a fatal one
// (fenced) exits 3. Exits 0 once it has been idle (no input) for `idle_ms` after consuming something.
//
// usage: eos_processor <bootstrap> <input> <output> <group> <transactional.id> <idle_ms> [records per txn]
// Prints "committed N" after each commit (N: records processed in committed transactions by this process).
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

rd_kafka_t* make(rd_kafka_type_t type, const std::vector<std::pair<std::string, std::string>>& kv) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : kv) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "conf %s: %s\n", k.c_str(), err);
      std::exit(2);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) {
    std::fprintf(stderr, "rd_kafka_new: %s\n", err);
    std::exit(2);
  }
  return rk;
}

/// Rewinds the consumer to its committed offsets (after an abort: the aborted batch is read again).
void rewind(rd_kafka_t* consumer) {
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(consumer, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR || !assigned) return;
  if (rd_kafka_committed(consumer, assigned, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < assigned->cnt; ++i) {
      auto& tp = assigned->elems[i];
      if (tp.offset < 0) tp.offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_error_t* e = rd_kafka_seek_partitions(consumer, assigned, 10000);
    if (e) rd_kafka_error_destroy(e);
  }
  rd_kafka_topic_partition_list_destroy(assigned);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s bootstrap input output group transactional.id idle_ms [per_txn]\n", argv[0]);
    return 2;
  }
  const std::string bootstrap = argv[1], input = argv[2], output = argv[3], group = argv[4], txn_id = argv[5];
  const auto idle = std::chrono::milliseconds(std::atoi(argv[6]));
  const int per_txn = argc > 7 ? std::atoi(argv[7]) : 500;

  rd_kafka_t* producer = make(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap},
                                                  {"transactional.id", txn_id},
                                                  {"transaction.timeout.ms", "10000"},
                                                  {"linger.ms", "5"},
                                                  {"log_level", "4"}});
  rd_kafka_t* consumer = make(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                                  {"group.id", group},
                                                  {"enable.auto.commit", "false"},
                                                  {"auto.offset.reset", "earliest"},
                                                  {"isolation.level", "read_committed"},
                                                  {"fetch.wait.max.ms", "100"},
                                                  {"session.timeout.ms", "6000"},
                                                  {"log_level", "4"}});
  if (rd_kafka_error_t* e = rd_kafka_init_transactions(producer, 60000)) {
    std::fprintf(stderr, "init_transactions: %s\n", rd_kafka_error_string(e));
    return 3;
  }
  rd_kafka_poll_set_consumer(consumer);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, input.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(consumer, topics);
  rd_kafka_topic_partition_list_destroy(topics);

  long long committed = 0;
  bool consumed_any = false;
  auto last_input = clock_type::now();
  const auto give_up = clock_type::now() + std::chrono::minutes(10);  // bounded whatever happens
  while (clock_type::now() < give_up) {
    std::vector<rd_kafka_message_t*> batch;
    const auto window = clock_type::now() + std::chrono::milliseconds(200);
    while (static_cast<int>(batch.size()) < per_txn && clock_type::now() < window) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 50);
      if (!m) continue;
      if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
          std::fprintf(stderr, "consume: %s\n", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        continue;
      }
      batch.push_back(m);
    }
    if (batch.empty()) {
      if (consumed_any && clock_type::now() - last_input > idle) break;
      continue;
    }
    consumed_any = true;
    last_input = clock_type::now();
    bool ok = true;
    if (rd_kafka_error_t* e = rd_kafka_begin_transaction(producer)) {
      std::fprintf(stderr, "begin_transaction: %s\n", rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      return 3;
    }
    for (auto* m : batch) {
      std::string value = "out-" + std::string(static_cast<const char*>(m->payload), m->len);
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
      for (int attempt = 0; attempt < 1000; ++attempt) {
        err = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(output.c_str()), RD_KAFKA_V_PARTITION(m->partition),
                                RD_KAFKA_V_VALUE(value.data(), value.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
        rd_kafka_poll(producer, 10);
      }
      if (err) {
        std::fprintf(stderr, "produce: %s\n", rd_kafka_err2str(err));
        ok = false;
        break;
      }
    }
    rd_kafka_topic_partition_list_t* positions = nullptr;
    rd_kafka_assignment(consumer, &positions);
    if (positions) rd_kafka_position(consumer, positions);
    rd_kafka_consumer_group_metadata_t* meta = rd_kafka_consumer_group_metadata(consumer);
    rd_kafka_error_t* e = nullptr;
    if (ok && positions) e = rd_kafka_send_offsets_to_transaction(producer, positions, meta, 30000);
    if (!e && ok) e = rd_kafka_commit_transaction(producer, 60000);
    rd_kafka_consumer_group_metadata_destroy(meta);
    if (positions) rd_kafka_topic_partition_list_destroy(positions);
    const size_t n = batch.size();
    for (auto* m : batch) rd_kafka_message_destroy(m);
    if (!e && ok) {
      committed += static_cast<long long>(n);
      std::printf("committed %lld\n", committed);
      std::fflush(stdout);
      continue;
    }
    if (e && rd_kafka_error_is_fatal(e)) {
      std::fprintf(stderr, "fatal: %s\n", rd_kafka_error_string(e));
      return 3;
    }
    std::fprintf(stderr, "aborting: %s\n", e ? rd_kafka_error_string(e) : "produce failed");
    if (e) rd_kafka_error_destroy(e);
    if (rd_kafka_error_t* a = rd_kafka_abort_transaction(producer, 60000)) {
      std::fprintf(stderr, "abort_transaction: %s\n", rd_kafka_error_string(a));
      rd_kafka_error_destroy(a);
      return 3;
    }
    rewind(consumer);
  }
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  rd_kafka_flush(producer, 10000);
  rd_kafka_destroy(producer);
  return 0;
}
