// Client-matrix driver for Kafka Streams (kafka-streams, pinned in pom.xml): a stateful word count
// with a repartition topic (groupBy word) and a changelog topic (the count store), at_least_once,
// then the same application again with exactly_once_v2 (application.id GROUP-eos, output TOPIC-out-eos).
//
//   java -cp 'libs/*:classes' StreamsWordCount BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// TOPIC-in gets RECORDS lines of words chosen deterministically from the line number (so every run,
// against any broker, has the same input and the same final counts); the application (application.id
// = GROUP) counts words into TOPIC-out; the driver reads TOPIC-out until the last count of every word
// equals the count computed here (bounded: 120 s). Prints `STEP <step> PASS|FAIL|SKIP <detail>` and
// `OUTPUT <word>=<count>,...` (the final counts, sorted; `OUTPUT_EOS` for the exactly_once_v2 run),
// which run_matrix.py compares between brokers.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;

public class StreamsWordCount {
    static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                                   "india", "juliett", "kilo", "lima", "mike"};

    static void step(String name, String state, String detail) {
        System.out.println("STEP " + name + " " + state + " " + detail.replace('\n', ' '));
        System.out.flush();
    }

    static String why(Throwable e) {
        while (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    static String line(int i) {
        StringBuilder b = new StringBuilder();
        int n = 1 + i % 5;
        for (int j = 0; j < n; j++) {
            if (j > 0) b.append(' ');
            b.append(WORDS[(i * 7 + j * 3) % WORDS.length]);
        }
        return b.toString();
    }

    static String counts(Map<String, Long> got) {
        StringBuilder o = new StringBuilder();
        for (Map.Entry<String, Long> e : got.entrySet()) o.append(o.length() > 0 ? "," : "").append(e.getKey()).append('=').append(e.getValue());
        return o.toString();
    }

    // Runs the word count (application.id app, in -> out) with `guarantee` until the last count of every
    // word read from `out` equals `want` (bounded: 120 s); fills `got`; returns null or the failure.
    static String wordCount(String bootstrap, String app, String in, String out, String guarantee, String stateDir,
                            Map<String, Long> want, Map<String, Long> got) {
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        boolean eos = !StreamsConfig.AT_LEAST_ONCE.equals(guarantee);
        StreamsBuilder sb = new StreamsBuilder();
        sb.<String, String>stream(in)
          .flatMapValues(v -> Arrays.asList(v.split(" ")))
          .groupBy((k, w) -> w)
          .count(Materialized.as("word-counts"))
          .toStream()
          .mapValues(c -> Long.toString(c))
          .to(out);
        String failure = null;
        try (KafkaStreams streams = new KafkaStreams(sb.build(), sp)) {
            streams.cleanUp();
            streams.start();
            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("group.id", app + "-reader");
            cp.put("auto.offset.reset", "earliest");
            if (eos) cp.put("isolation.level", "read_committed");  // only what the transactions committed
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(out));
                long deadline = System.currentTimeMillis() + 120_000;
                while (!got.equals(want) && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500)))
                        got.put(r.key(), Long.parseLong(r.value()));
                    if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                        failure = "streams state " + streams.state();
                        break;
                    }
                }
            }
            if (failure == null && !got.equals(want))
                failure = "final counts after 120 s " + got + ", expected " + want + " (streams state " + streams.state() + ")";
            streams.close(Duration.ofSeconds(30));
        } catch (Exception e) {
            failure = why(e);
        }
        return failure;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], app = args[2];
        int records = Integer.parseInt(args[3]), partitions = Integer.parseInt(args[4]);
        String in = topic + "-in", out = topic + "-out";
        System.out.println("INFO kafka-streams " + org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        Map<String, Long> want = new TreeMap<>();
        for (int i = 0; i < records; i++)
            for (String w : line(i).split(" ")) want.merge(w, 1L, Long::sum);

        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            try {
                admin.createTopics(List.of(new NewTopic(in, partitions, (short) 1), new NewTopic(out, partitions, (short) 1)))
                     .all().get(30, TimeUnit.SECONDS);
                step("create", "PASS", "input and output topics, " + partitions + " partitions");
            } catch (Exception e) {
                step("create", "FAIL", why(e));
            }
            try {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("acks", "all");
                p.put("key.serializer", StringSerializer.class.getName());
                p.put("value.serializer", StringSerializer.class.getName());
                try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < records; i++)
                        fs.add(prod.send(new ProducerRecord<>(in, String.format("line%04d", i), line(i))));
                    prod.flush();
                    for (Future<RecordMetadata> f : fs) f.get(60, TimeUnit.SECONDS);
                }
                step("produce", "PASS", records + " lines into " + in);
            } catch (Exception e) {
                step("produce", "FAIL", why(e));
            }

            String stateDir = args.length > 6 ? args[6] : System.getProperty("java.io.tmpdir") + "/matrix-streams-" + app;
            Map<String, Long> got = new TreeMap<>();
            String failure = wordCount(bootstrap, app, in, out, StreamsConfig.AT_LEAST_ONCE, stateDir, want, got);
            step("wordcount", failure == null ? "PASS" : "FAIL",
                 failure == null ? want.size() + " words, " + want.values().stream().mapToLong(Long::longValue).sum() + " counted" : failure);
            System.out.println("OUTPUT " + counts(got));
            try {
                Set<String> names = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(30, TimeUnit.SECONDS);
                String rep = app + "-word-counts-repartition", chg = app + "-word-counts-changelog";
                if (!names.contains(rep) || !names.contains(chg))
                    throw new IllegalStateException("internal topics missing: want " + rep + " and " + chg + ", listed " + names);
                TopicDescription d = admin.describeTopics(List.of(chg)).allTopicNames().get(30, TimeUnit.SECONDS).get(chg);
                Config cfg = admin.describeConfigs(List.of(new org.apache.kafka.common.config.ConfigResource(
                        org.apache.kafka.common.config.ConfigResource.Type.TOPIC, chg))).all().get(30, TimeUnit.SECONDS).values().iterator().next();
                String policy = cfg.get("cleanup.policy") == null ? null : cfg.get("cleanup.policy").value();
                if (!"compact".equals(policy)) throw new IllegalStateException(chg + " cleanup.policy " + policy + ", expected compact");
                step("internal_topics", "PASS", "repartition + changelog (" + d.partitions().size() + " partitions, compact)");
            } catch (Exception e) {
                step("internal_topics", "FAIL", why(e));
            }
            // The same application with exactly_once_v2 (transactional producers, sendOffsetsToTransaction
            // with the group's metadata, read_committed): its own application.id and output topic.
            try {
                admin.createTopics(List.of(new NewTopic(out + "-eos", partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                Map<String, Long> gotEos = new TreeMap<>();
                String f = wordCount(bootstrap, app + "-eos", in, out + "-eos", StreamsConfig.EXACTLY_ONCE_V2, stateDir + "-eos", want, gotEos);
                step("wordcount_eos", f == null ? "PASS" : "FAIL", f == null ? "exactly_once_v2: " + want.size() + " words, "
                     + want.values().stream().mapToLong(Long::longValue).sum() + " counted (read_committed)" : "exactly_once_v2: " + f);
                System.out.println("OUTPUT_EOS " + counts(gotEos));
            } catch (Exception e) {
                step("wordcount_eos", "FAIL", why(e));
            }
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }
}
