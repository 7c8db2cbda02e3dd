/* The client-matrix scenario on librdkafka's C API (see compat/clients/README.md).
 *
 *   rdkafka_client BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
 *
 * 1. CreateTopics TOPIC with PARTITIONS partitions (admin API).
 * 2. Produce RECORDS records, acks=all: key "k%04d", value "v%04d-rdkafka", headers
 *    h-index=<i>, h-client=rdkafka; every delivery report must succeed.
 * 3. Phase 1: a KafkaConsumer in GROUP subscribes, reads FIRST records, commits exactly what it
 *    processed (offset + 1 per partition, synchronous), closes.
 * 4. Phase 2: a new consumer in GROUP resumes and reads until RECORDS records were seen in total
 *    (or 30 s pass without a new record).
 *
 * Every consumed record is printed as
 *   REC <phase> <partition> <offset> <key> <value> <h1=v1,h2=v2,...>   (tab-separated)
 * and the matrix script checks them. Errors: "ERROR <text>" and exit status 1.
 */
#include <librdkafka/rdkafka.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *bootstrap, *topic, *group;
static int records, partitions, first;

static void fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        printf("ERROR ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
        fflush(stdout);
        exit(1);
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static rd_kafka_conf_t *base_conf(void) {
        char err[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err,
                              sizeof err) != RD_KAFKA_CONF_OK)
                fail("conf: %s", err);
        rd_kafka_conf_set(conf, "log_level", "4", err, sizeof err);
        return conf;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v) {
        char err[512];
        if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK)
                fail("conf %s=%s: %s", k, v, err);
}

static void create_topic(void) {
        char err[512];
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(), err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        rd_kafka_NewTopic_t *nt =
            rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
        if (!ev)
                fail("CreateTopics: no result within 20 s");
        if (rd_kafka_event_error(ev))
                fail("CreateTopics: %s", rd_kafka_event_error_string(ev));
        size_t n;
        const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
            rd_kafka_event_CreateTopics_result(ev), &n);
        if (n != 1 || rd_kafka_topic_result_error(res[0]))
                fail("CreateTopics %s: %s", topic,
                     n ? rd_kafka_err2str(rd_kafka_topic_result_error(res[0]))
                       : "no result");
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
}

static int dr_ok, dr_failed;
static char dr_error[512];

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        if (m->err) {
                if (!dr_failed++)
                        snprintf(dr_error, sizeof dr_error, "%s",
                                 rd_kafka_err2str(m->err));
        } else
                dr_ok++;
}

static void produce(void) {
        char err[512];
        rd_kafka_conf_t *conf = base_conf();
        set(conf, "acks", "all");
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        for (int i = 0; i < records; i++) {
                char key[32], value[64], idx[32];
                snprintf(key, sizeof key, "k%04d", i);
                snprintf(value, sizeof value, "v%04d-rdkafka", i);
                snprintf(idx, sizeof idx, "%d", i);
                rd_kafka_resp_err_t e = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, strlen(key)),
                    RD_KAFKA_V_VALUE(value, strlen(value)),
                    RD_KAFKA_V_HEADER("h-index", idx, -1),
                    RD_KAFKA_V_HEADER("h-client", "rdkafka", -1),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e)
                        fail("producev: %s", rd_kafka_err2str(e));
                rd_kafka_poll(rk, 0);
        }
        if (rd_kafka_flush(rk, 30000))
                fail("flush: %d records not delivered within 30 s",
                     rd_kafka_outq_len(rk));
        if (dr_failed)
                fail("%d delivery reports failed, first: %s", dr_failed,
                     dr_error);
        if (dr_ok != records)
                fail("%d of %d records delivered", dr_ok, records);
        rd_kafka_destroy(rk);
}

static void print_record(int phase, const rd_kafka_message_t *m) {
        rd_kafka_headers_t *hdrs = NULL;
        char hbuf[1024] = "";
        size_t hl = 0;
        if (!rd_kafka_message_headers(m, &hdrs)) {
                const char *name;
                const void *val;
                size_t sz;
                for (size_t i = 0;
                     !rd_kafka_header_get_all(hdrs, i, &name, &val, &sz); i++)
                        hl += (size_t)snprintf(hbuf + hl, sizeof hbuf - hl,
                                               "%s%s=%.*s", i ? "," : "", name,
                                               val ? (int)sz : 0,
                                               val ? (const char *)val : "");
        }
        printf("REC\t%d\t%d\t%lld\t%.*s\t%.*s\t%s\n", phase, m->partition,
               (long long)m->offset, (int)m->key_len, (const char *)m->key,
               (int)m->len, (const char *)m->payload, hbuf);
}

/* Reads up to `want` records in the group, prints them, commits what it read. Returns the count. */
static int consume_phase(int phase, int want) {
        char err[512];
        rd_kafka_conf_t *conf = base_conf();
        set(conf, "group.id", group);
        set(conf, "auto.offset.reset", "earliest");
        set(conf, "enable.auto.commit", "false");
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new consumer: %s", err);
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
        if (e)
                fail("subscribe: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(sub);

        int64_t *next = calloc((size_t)partitions, sizeof *next);
        for (int p = 0; p < partitions; p++)
                next[p] = -1;
        int got       = 0;
        double last   = now_s();
        while (got < want && now_s() - last < 30.0) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m)
                        continue;
                if (m->err) {
                        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                fail("phase %d consume: %s", phase,
                                     rd_kafka_message_errstr(m));
                } else {
                        print_record(phase, m);
                        if (m->partition >= 0 && m->partition < partitions)
                                next[m->partition] = m->offset + 1;
                        got++;
                        last = now_s();
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_topic_partition_list_t *offs =
            rd_kafka_topic_partition_list_new(partitions);
        for (int p = 0; p < partitions; p++)
                if (next[p] >= 0)
                        rd_kafka_topic_partition_list_add(offs, topic, p)->offset =
                            next[p];
        if (offs->cnt > 0) {
                e = rd_kafka_commit(rk, offs, 0 /* sync */);
                if (e)
                        fail("phase %d commit: %s", phase, rd_kafka_err2str(e));
                for (int i = 0; i < offs->cnt; i++)
                        if (offs->elems[i].err)
                                fail("phase %d commit partition %d: %s", phase,
                                     offs->elems[i].partition,
                                     rd_kafka_err2str(offs->elems[i].err));
        }
        rd_kafka_topic_partition_list_destroy(offs);
        free(next);
        e = rd_kafka_consumer_close(rk);
        if (e)
                fail("phase %d close: %s", phase, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return got;
}

int main(int argc, char **argv) {
        if (argc != 7) {
                fprintf(stderr,
                        "usage: %s BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS "
                        "FIRST\n",
                        argv[0]);
                return 2;
        }
        bootstrap  = argv[1];
        topic      = argv[2];
        group      = argv[3];
        records    = atoi(argv[4]);
        partitions = atoi(argv[5]);
        first      = atoi(argv[6]);
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("INFO librdkafka %s\n", rd_kafka_version_str());
        create_topic();
        produce();
        printf("PRODUCED %d\n", records);
        int a = consume_phase(1, first);
        int b = consume_phase(2, records - a);
        printf("CONSUMED %d %d\n", a, b);
        return 0;
}
