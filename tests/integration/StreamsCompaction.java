// Kafka Streams (kafka-streams 4.4.0, the client matrix's pinned jars) over a compacted changelog (issue #20):
// a word count whose store's changelog topic gets every update (cache off), segment.ms 1000 and
// min.cleanable.dirty.ratio 0.01 through Streams' topic.* configs, so the broker's cleaner compacts it while the
// application runs; then the application restarts with its local state wiped and must restore the counts from
// the compacted changelog and go on counting exactly.
//
//   java -cp 'libs/*:classes' StreamsCompaction BOOTSTRAP STATE_DIR
//
// Prints `STEP <name> PASS|FAIL <detail>` lines; exit 0 when every step passed.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.processor.StateRestoreListener;

public class StreamsCompaction {
    static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                                   "india", "juliett", "kilo", "lima", "mike"};
    static final String APP = "compaction-wordcount", IN = "sc-in", OUT = "sc-out";
    static final String CHANGELOG = APP + "-word-counts-changelog";
    static boolean failed = false;

    static void step(String name, boolean pass, String detail) {
        failed |= !pass;
        System.out.println("STEP " + name + " " + (pass ? "PASS" : "FAIL") + " " + detail.replace('\n', ' '));
        System.out.flush();
    }

    static String line(int i) {
        StringBuilder b = new StringBuilder();
        for (int j = 0; j < 1 + i % 4; j++) b.append(j > 0 ? " " : "").append(WORDS[(i * 5 + j * 3) % WORDS.length]);
        return b.toString();
    }

    static void produce(String bootstrap, int from, int to, Map<String, Long> want) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                prod.send(new ProducerRecord<>(IN, "line" + i, line(i)));
                for (String w : line(i).split(" ")) want.merge(w, 1L, Long::sum);
            }
            prod.flush();
        }
    }

    static KafkaStreams start(String bootstrap, String stateDir, AtomicLong restored) {
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");  // every update reaches the changelog
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        sp.put(StreamsConfig.topicPrefix(TopicConfig.SEGMENT_MS_CONFIG), "1000");
        sp.put(StreamsConfig.topicPrefix(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG), "0.01");
        sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        StreamsBuilder sb = new StreamsBuilder();
        sb.<String, String>stream(IN)
          .flatMapValues(v -> Arrays.asList(v.split(" ")))
          .selectKey((k, w) -> w)
          .groupByKey()
          .count(Materialized.as("word-counts"))
          .toStream()
          .mapValues(c -> Long.toString(c))
          .to(OUT);
        KafkaStreams streams = new KafkaStreams(sb.build(), sp);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}
            public void onBatchRestored(TopicPartition tp, String store, long end, long n) { restored.addAndGet(n); }
            public void onRestoreEnd(TopicPartition tp, String store, long total) {}
        });
        streams.cleanUp();  // no local state: whatever the store holds comes from the changelog
        streams.start();
        return streams;
    }

    // Reads OUT until the last count of every word equals `want` (bounded: 120 s); null or the failure.
    static String awaitCounts(String bootstrap, KafkaStreams streams, Map<String, Long> want, String group) {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("group.id", group);
        cp.put("auto.offset.reset", "earliest");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        Map<String, Long> got = new TreeMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(OUT));
            long deadline = System.currentTimeMillis() + 120_000;
            while (!got.equals(want) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) got.put(r.key(), Long.parseLong(r.value()));
                if (streams.state() == KafkaStreams.State.ERROR) return "streams state ERROR";
            }
        }
        return got.equals(want) ? null : "counts " + got + ", expected " + want;
    }

    // Records in the changelog from its start to its end offset.
    static long changelogRecords(String bootstrap) {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(CHANGELOG, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp), n = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) n += c.poll(Duration.ofMillis(300)).count();
            return n;
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], stateDir = args[1];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(IN, 1, (short) 1), new NewTopic(OUT, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Map<String, Long> want = new TreeMap<>();
        final int first = 5000;
        produce(bootstrap, 0, first, want);
        long updates = want.values().stream().mapToLong(Long::longValue).sum();
        AtomicLong restored = new AtomicLong();
        KafkaStreams streams = start(bootstrap, stateDir, restored);
        String f = awaitCounts(bootstrap, streams, want, "reader-1");
        step("count", f == null, f == null ? "13 words, " + updates + " store updates" : f);

        try (Admin admin = Admin.create(ap)) {
            Config cfg = admin.describeConfigs(List.of(new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, CHANGELOG))).all().get(30, TimeUnit.SECONDS)
                    .values().iterator().next();
            String policy = cfg.get(TopicConfig.CLEANUP_POLICY_CONFIG).value();
            step("changelog-config", policy.contains("compact"), CHANGELOG + " cleanup.policy=" + policy);
        }
        // segment.ms passes, one more line: the changelog's next append rolls, its old segment becomes cleanable.
        long before = changelogRecords(bootstrap);
        long compacted = before;
        long deadline = System.currentTimeMillis() + 90_000;
        int extra = first;
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(1200);
            produce(bootstrap, extra, extra + 1, want);
            extra++;
            compacted = changelogRecords(bootstrap);
            if (compacted <= 3L * WORDS.length) break;
        }
        f = awaitCounts(bootstrap, streams, want, "reader-2");
        step("changelog-compacted", compacted <= 3L * WORDS.length && f == null,
             CHANGELOG + ": " + before + " records before the rolls, " + compacted + " after" + (f == null ? "" : "; " + f));
        streams.close(Duration.ofSeconds(30));

        produce(bootstrap, extra, extra + 2000, want);
        restored.set(0);
        streams = start(bootstrap, stateDir, restored);
        f = awaitCounts(bootstrap, streams, want, "reader-3");
        step("restore", f == null && restored.get() > 0 && restored.get() <= compacted + 2L * WORDS.length,
             "local state wiped; restored " + restored.get() + " changelog records, then counted on: " +
             (f == null ? "final counts right" : f));
        streams.close(Duration.ofSeconds(30));
        System.exit(failed ? 1 : 0);
    }
}
