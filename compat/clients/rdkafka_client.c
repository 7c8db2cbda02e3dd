/* The client-matrix scenario on librdkafka's C API (see compat/clients/README.md).
 *
 *   rdkafka_client BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
 *
 * 1. CreateTopics TOPIC with PARTITIONS partitions (admin API).
 * 2. Produce RECORDS records, acks=all, idempotent: key "k%04d", value "v%04d-rdkafka", headers
 *    h-index=<i>, h-client=rdkafka; every delivery report must succeed.
 * 3. Phase 1: a KafkaConsumer in GROUP subscribes, reads FIRST records, commits exactly what it
 *    processed (offset + 1 per partition, synchronous), closes.
 * 4. Phase 2: a new consumer in GROUP resumes and reads until RECORDS records were seen in total
 *    (or 30 s pass without a new record).
 * 5. Then one `STEP <name> PASS|FAIL <detail>` line each: offsets_for_times (records carry CreateTime
 *    base+i), rebalance (cooperative-sticky, two members, incremental assign/unassign), describe
 *    (Metadata), delete_records (before offset 10 on partition 0), transactions (TXN / TXNOFFSET
 *    lines, see transactions()), delete (DeleteTopics).
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
static int64_t base_ts; /* CreateTime of record i is base_ts + i (ms) */
/* per partition: how many consumed records have index < first, and how many in all */
static int below_first[64], in_partition[64];

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

/* CreateTopics `name` with PARTITIONS partitions; returns NULL or the error (static storage). */
static const char *create_topic_named(const char *name) {
        static char why_create[600];
        char err[512];
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(), err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        rd_kafka_NewTopic_t *nt =
            rd_kafka_NewTopic_new(name, partitions, 1, err, sizeof err);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
        const char *r = NULL;
        if (!ev)
                r = "CreateTopics: no result within 20 s";
        else if (rd_kafka_event_error(ev)) {
                snprintf(why_create, sizeof why_create, "CreateTopics: %s", rd_kafka_event_error_string(ev));
                r = why_create;
        } else {
                size_t n;
                const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
                    rd_kafka_event_CreateTopics_result(ev), &n);
                if (n != 1 || rd_kafka_topic_result_error(res[0])) {
                        snprintf(why_create, sizeof why_create, "CreateTopics %s: %s", name,
                                 n ? rd_kafka_err2str(rd_kafka_topic_result_error(res[0])) : "no result");
                        r = why_create;
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return r;
}

static void create_topic(void) {
        const char *e = create_topic_named(topic);
        if (e)
                fail("%s", e);
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
        set(conf, "enable.idempotence", "true");
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
                    RD_KAFKA_V_TIMESTAMP(base_ts + i),
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
        if (m->partition >= 0 && m->partition < 64 && m->key_len == 5) {
                in_partition[m->partition]++;
                if (atoi((const char *)m->key + 1) < first)
                        below_first[m->partition]++;
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

/* ---- the steps after the resume: STEP <name> PASS|FAIL|SKIP <detail> ---- */

static char why[512];

static int step_fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        return 0;
}

static void step(const char *name, int (*fn)(void)) {
        why[0] = 0;
        int ok = fn();
        printf("STEP %s %s %s\n", name, ok ? "PASS" : "FAIL", why);
}

static rd_kafka_t *plain_consumer(const char *g) {
        char err[512];
        rd_kafka_conf_t *conf = base_conf();
        set(conf, "group.id", g);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        return rk;
}

static int offsets_for_times(void) {
        char g[300];
        snprintf(g, sizeof g, "%s-times", group);
        rd_kafka_t *rk = plain_consumer(g);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(partitions);
        for (int p = 0; p < partitions; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset = base_ts + first;
        rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, 30000);
        int ok = 1;
        size_t len = 0;
        if (e)
                ok = step_fail("offsets_for_times: %s", rd_kafka_err2str(e));
        for (int i = 0; ok && i < l->cnt; i++) {
                int p = l->elems[i].partition;
                int64_t o = l->elems[i].offset, want = below_first[p];
                if (l->elems[i].err)
                        ok = step_fail("partition %d: %s", p, rd_kafka_err2str(l->elems[i].err));
                else if (o != want && !(want == in_partition[p] && (o == -1 || o == want)))
                        ok = step_fail("partition %d: offset %lld for timestamp base+%d, expected %lld", p,
                                       (long long)o, first, (long long)want);
                else
                        len += (size_t)snprintf(why + len, sizeof why - len, "%d->%lld ", p, (long long)o);
        }
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
        return ok;
}

static int revoked_a[64], n_revoked_a;

static void coop_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t *parts, void *opaque) {
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
                if (e)
                        rd_kafka_error_destroy(e);
        } else {
                if (opaque)
                        for (int i = 0; i < parts->cnt && n_revoked_a < 64; i++)
                                revoked_a[n_revoked_a++] = parts->elems[i].partition;
                rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
                if (e)
                        rd_kafka_error_destroy(e);
        }
}

static rd_kafka_t *coop_member(const char *g, void *opaque) {
        char err[512];
        rd_kafka_conf_t *conf = base_conf();
        set(conf, "group.id", g);
        set(conf, "partition.assignment.strategy", "cooperative-sticky");
        set(conf, "enable.auto.commit", "false");
        rd_kafka_conf_set_rebalance_cb(conf, coop_rebalance_cb);
        rd_kafka_conf_set_opaque(conf, opaque);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        return rk;
}

/* bitmask of the partitions a member owns now */
static unsigned owned(rd_kafka_t *rk) {
        rd_kafka_topic_partition_list_t *l = NULL;
        unsigned m = 0;
        if (!rd_kafka_assignment(rk, &l) && l) {
                for (int i = 0; i < l->cnt; i++)
                        m |= 1u << l->elems[i].partition;
                rd_kafka_topic_partition_list_destroy(l);
        }
        return m;
}

static void poll_once(rd_kafka_t *rk, int ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, ms);
        if (m)
                rd_kafka_message_destroy(m);
}

static int rebalance(void) {
        char g[300];
        snprintf(g, sizeof g, "%s-coop", group);
        unsigned all = (1u << partitions) - 1;
        rd_kafka_t *a = coop_member(g, (void *)1), *b = NULL;
        int ok = 1;
        double deadline = now_s() + 60;
        while (owned(a) != all) {
                if (now_s() > deadline) {
                        ok = step_fail("member A alone owns mask %x after 60 s", owned(a));
                        break;
                }
                poll_once(a, 200);
        }
        unsigned sa = 0, sb = 0;
        if (ok) {
                b        = coop_member(g, NULL);
                deadline = now_s() + 90;
                for (int stable = 0; stable < 5;) {
                        if (now_s() > deadline) {
                                ok = step_fail("no stable split in 90 s: A mask %x, B mask %x", owned(a), owned(b));
                                break;
                        }
                        poll_once(a, 100);
                        poll_once(b, 100);
                        sa = owned(a), sb = owned(b);
                        stable = (sa && sb && !(sa & sb) && (sa | sb) == all) ? stable + 1 : 0;
                }
        }
        if (ok) {
                unsigned rev = 0;
                for (int i = 0; i < n_revoked_a; i++)
                        rev |= 1u << revoked_a[i];
                if (rev != sb || n_revoked_a != __builtin_popcount(sb))
                        ok = step_fail("A revoked mask %x (%d partitions) but B owns mask %x (not incremental)", rev,
                                       n_revoked_a, sb);
                else
                        snprintf(why, sizeof why, "A mask %x + B mask %x, A revoked only B's share", sa, sb);
        }
        n_revoked_a = 0;
        rd_kafka_consumer_close(a);
        rd_kafka_destroy(a);
        if (b) {
                rd_kafka_consumer_close(b);
                rd_kafka_destroy(b);
        }
        return ok;
}

static int describe(void) {
        rd_kafka_t *rk = plain_consumer("matrix-describe");
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        int ok = 1;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 30000);
        if (e)
                ok = step_fail("Metadata: %s", rd_kafka_err2str(e));
        else if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt != partitions)
                ok = step_fail("Metadata: %d topics, error %s, %d partitions", md->topic_cnt,
                               md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "-",
                               md->topic_cnt ? md->topics[0].partition_cnt : 0);
        else {
                for (int i = 0; i < partitions; i++)
                        if (md->topics[0].partitions[i].leader < 0)
                                ok = step_fail("partition %d has no leader", md->topics[0].partitions[i].id);
                if (ok)
                        snprintf(why, sizeof why, "Metadata: %d partitions with leaders", partitions);
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(t);
        rd_kafka_destroy(rk);
        return ok;
}

static int delete_records(void) {
        rd_kafka_t *rk = plain_consumer("matrix-delete-records");
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, 0)->offset = 10;
        rd_kafka_DeleteRecords_t *dr = rd_kafka_DeleteRecords_new(l);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteRecords(rk, &dr, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        int ok = 1;
        if (!ev)
                ok = step_fail("DeleteRecords: no result within 30 s");
        else if (rd_kafka_event_error(ev))
                ok = step_fail("DeleteRecords: %s", rd_kafka_event_error_string(ev));
        else {
                const rd_kafka_topic_partition_list_t *r =
                    rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
                if (!r || r->cnt != 1 || r->elems[0].err || r->elems[0].offset != 10)
                        ok = step_fail("DeleteRecords: low watermark %lld, %s", r && r->cnt ? (long long)r->elems[0].offset : -1LL,
                                       r && r->cnt ? rd_kafka_err2str(r->elems[0].err) : "no result");
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        int64_t lo = -1, hi = -1;
        if (ok) {
                rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 30000);
                if (e || lo != 10)
                        ok = step_fail("earliest offset %lld after DeleteRecords(10) (%s)", (long long)lo, rd_kafka_err2str(e));
                else
                        snprintf(why, sizeof why, "partition 0 low watermark 10, earliest 10");
        }
        rd_kafka_DeleteRecords_destroy(dr);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return ok;
}

static int delete_topic(void) {
        rd_kafka_t *rk = plain_consumer("matrix-delete");
        rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        int ok = 1;
        if (!ev)
                ok = step_fail("DeleteTopics: no result within 30 s");
        else if (rd_kafka_event_error(ev))
                ok = step_fail("DeleteTopics: %s", rd_kafka_event_error_string(ev));
        else {
                size_t n;
                const rd_kafka_topic_result_t **res =
                    rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
                if (n != 1 || rd_kafka_topic_result_error(res[0]))
                        ok = step_fail("DeleteTopics: %s", n ? rd_kafka_err2str(rd_kafka_topic_result_error(res[0])) : "no result");
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        double deadline = now_s() + 30;
        while (ok) {
                const struct rd_kafka_metadata *md = NULL;
                int listed = 0;
                if (!rd_kafka_metadata(rk, 1, NULL, &md, 10000)) {
                        for (int i = 0; i < md->topic_cnt; i++)
                                listed |= !strcmp(md->topics[i].topic, topic);
                        rd_kafka_metadata_destroy(md);
                        if (!listed) {
                                snprintf(why, sizeof why, "DeleteTopics, no longer listed");
                                break;
                        }
                }
                if (now_s() > deadline)
                        ok = step_fail("topic still listed 30 s after delete");
                struct timespec ts = {0, 200000000};
                nanosleep(&ts, NULL);
        }
        rd_kafka_DeleteTopic_destroy(dt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return ok;
}

/* ---- transactions (../README.md): on TOPIC-txn, commit 30 records + the group GROUP-txn's offset 7
 * for TOPIC partition 0 (send_offsets_to_transaction), abort 20 (flushed first: librdkafka purges
 * unsent records on abort), commit 10; record i of transaction t: key "k<i>", value
 * "rdkafka-<c|a|c2>-<i>", partition i % 3. A read_committed and a read_uncommitted consumer print
 * TXN lines, the group's committed offset a TXNOFFSET line; the matrix script checks them. ---- */

static int txn_error(const char *what, rd_kafka_error_t *e) {
        int r = step_fail("%s: %s", what, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return r;
}

/* Reads TOPIC-txn from the beginning (no group) until `want` records or 30 s, then 1 s more;
 * returns how many were read. */
static int txn_read(const char *txtopic, const char *view, int want) {
        char err[512], g[300];
        rd_kafka_conf_t *conf = base_conf();
        snprintf(g, sizeof g, "%s-txn-%s", group, view);
        set(conf, "group.id", g);
        set(conf, "enable.auto.commit", "false");
        set(conf, "isolation.level", strcmp(view, "committed") ? "read_uncommitted" : "read_committed");
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(partitions);
        for (int p = 0; p < partitions; p++)
                rd_kafka_topic_partition_list_add(l, txtopic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        int got = 0;
        double deadline = now_s() + 30;
        while (now_s() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m)
                        continue;
                if (!m->err) {
                        printf("TXN\t%s\t%d\t%lld\t%.*s\t%.*s\n", view, m->partition, (long long)m->offset,
                               (int)m->key_len, (const char *)m->key, (int)m->len, (const char *)m->payload);
                        if (++got == want && now_s() + 1 < deadline)
                                deadline = now_s() + 1;
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return got;
}

static int transactions(void) {
        char txtopic[300], txgroup[300], txid[300], err[512];
        snprintf(txtopic, sizeof txtopic, "%s-txn", topic);
        snprintf(txgroup, sizeof txgroup, "%s-txn", group);
        snprintf(txid, sizeof txid, "%s-txn-rdkafka", group);
        const char *ce = create_topic_named(txtopic);
        if (ce)
                return step_fail("%s", ce);
        rd_kafka_conf_t *conf = base_conf();
        set(conf, "transactional.id", txid);
        set(conf, "acks", "all");
        dr_ok = dr_failed = 0;
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!rk)
                fail("rd_kafka_new: %s", err);
        rd_kafka_error_t *e;
        int ok = 1;
        static const char *tags[] = {"c", "a", "c2"};
        static const int counts[] = {30, 20, 10};
        if ((e = rd_kafka_init_transactions(rk, 30000)))
                ok = txn_error("init_transactions", e);
        for (int t = 0; ok && t < 3; t++) {
                if ((e = rd_kafka_begin_transaction(rk))) {
                        ok = txn_error("begin_transaction", e);
                        break;
                }
                for (int i = 0; ok && i < counts[t]; i++) {
                        char key[32], value[64];
                        snprintf(key, sizeof key, "k%d", i);
                        snprintf(value, sizeof value, "rdkafka-%s-%d", tags[t], i);
                        rd_kafka_resp_err_t pe = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC(txtopic), RD_KAFKA_V_PARTITION(i % partitions),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
                            RD_KAFKA_V_VALUE(value, strlen(value)), RD_KAFKA_V_END);
                        if (pe)
                                ok = step_fail("transaction %d: produce: %s", t + 1, rd_kafka_err2str(pe));
                }
                if (!ok)
                        break;
                rd_kafka_flush(rk, 60000); /* sent and acknowledged before the commit or abort */
                if (dr_failed || rd_kafka_outq_len(rk) > 0) {
                        ok = step_fail("transaction %d: %d delivery failures (%s), %d unsent", t + 1, dr_failed,
                                       dr_error, rd_kafka_outq_len(rk));
                        break;
                }
                if (t == 0) {
                        rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(1);
                        rd_kafka_topic_partition_list_add(offs, topic, 0)->offset = 7;
                        rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata_new(txgroup);
                        e = rd_kafka_send_offsets_to_transaction(rk, offs, md, 30000);
                        rd_kafka_consumer_group_metadata_destroy(md);
                        rd_kafka_topic_partition_list_destroy(offs);
                        if (e) {
                                ok = txn_error("transaction 1: send_offsets_to_transaction", e);
                                break;
                        }
                }
                e = t == 1 ? rd_kafka_abort_transaction(rk, 30000) : rd_kafka_commit_transaction(rk, 30000);
                if (e)
                        ok = txn_error(t == 1 ? "abort_transaction" : "commit_transaction", e);
        }
        rd_kafka_destroy(rk);
        if (!ok)
                return 0;
        int rc = txn_read(txtopic, "committed", 40);
        int ru = txn_read(txtopic, "uncommitted", 60);
        rd_kafka_t *gc = plain_consumer(txgroup);
        int64_t off = -1;
        double deadline = now_s() + 15; /* the offset shows once the COMMIT marker is in __consumer_offsets */
        for (;;) {
                rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(l, topic, 0);
                rd_kafka_resp_err_t ce2 = rd_kafka_committed(gc, l, 10000);
                off = ce2 ? -1 : l->elems[0].offset;
                if (!ce2 && l->elems[0].err)
                        off = -1;
                rd_kafka_topic_partition_list_destroy(l);
                if (off == 7 || now_s() > deadline)
                        break;
                struct timespec ts = {0, 200000000};
                nanosleep(&ts, NULL);
        }
        rd_kafka_destroy(gc);
        printf("TXNOFFSET %lld\n", (long long)off);
        snprintf(why, sizeof why,
                 "3 transactions (commit 30 + send_offsets_to_transaction, abort 20, commit 10); read_committed %d, "
                 "read_uncommitted %d, group offset %lld", rc, ru, (long long)off);
        return 1;
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
        if (partitions > 31)
                fail("at most 31 partitions");
        {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                base_ts = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - 60000;
        }
        printf("INFO librdkafka %s\n", rd_kafka_version_str());
        create_topic();
        produce();
        printf("PRODUCED %d\n", records);
        int a = consume_phase(1, first);
        int b = consume_phase(2, records - a);
        printf("CONSUMED %d %d\n", a, b);
        step("offsets_for_times", offsets_for_times);
        step("rebalance", rebalance);
        step("describe", describe);
        step("delete_records", delete_records);
        step("transactions", transactions);
        step("delete", delete_topic);
        return 0;
}
