// Security driver for Apache Kafka's Java client (kafka-clients, pinned in pom.xml), used by
// tests/integration/security/security_test.py: TLS, mTLS, SASL PLAIN / SCRAM / OAUTHBEARER with real clients.
//
//   java -cp 'libs/*:security-classes' SecurityClient SPEC
//
// SPEC is a text file of cases, each a header line then `key=value` client properties (split at the first '='),
// ended by a blank line:
//
//   CASE <name> roundtrip <topic> <records> <timeout s>   produce <records> values "<name>-<i>" (acks=all) to
//                                                        partition 0, read partition 0 back by assignment
//   CASE <name> connect - 0 <timeout s>                  Admin.describeCluster(): the nodes, or the exception
//   CASE <name> reauth <topic> <interval ms> <timeout s>  one record every interval through one producer
//
// Each case prints one JSON line: {"name", "ok", "produced", "consumed": [...], "error_type", "error",
// "error_chain": [class names], "ms"}. Every wait is bounded; the process exits 0 unless it crashed.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.common.utils.internals.AppInfoParser;

public class SecurityClient {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String list(List<String> l) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < l.size(); i++) b.append(i == 0 ? "" : ",").append(q(l.get(i)));
        return b.append(']').toString();
    }

    static class Case {
        String name, kind, topic;
        int records, timeoutS;
        Properties props = new Properties();
    }

    static class Result {
        boolean ok;
        int produced = 0;
        List<String> consumed = new ArrayList<>();
        Throwable error;
        String extra = "";
    }

    static Throwable root(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null)
            e = e.getCause();
        return e;
    }

    static List<String> chain(Throwable e) {
        List<String> out = new ArrayList<>();
        for (Throwable t = e; t != null && out.size() < 8; t = t.getCause()) out.add(t.getClass().getName());
        return out;
    }

    static Properties with(Properties base, String... kv) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i + 1 < kv.length; i += 2) p.putIfAbsent(kv[i], kv[i + 1]);
        return p;
    }

    static List<String> consume(Case c, int want, long deadline) {
        List<String> got = new ArrayList<>();
        Properties p = with(c.props, "key.deserializer", StringDeserializer.class.getName(),
                "value.deserializer", StringDeserializer.class.getName(), "enable.auto.commit", "false",
                "auto.offset.reset", "earliest", "client.id", "sec-java-consumer");
        try (KafkaConsumer<String, String> con = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(c.topic, 0);
            con.assign(List.of(tp));
            con.seekToBeginning(List.of(tp));
            while (got.size() < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : con.poll(Duration.ofMillis(300))) got.add(r.value());
            }
        }
        return got;
    }

    static KafkaProducer<String, String> producer(Case c, int timeoutMs) {
        Properties p = with(c.props, "key.serializer", StringSerializer.class.getName(),
                "value.serializer", StringSerializer.class.getName(), "acks", "all", "linger.ms", "5",
                "client.id", "sec-java-producer", "max.block.ms", Integer.toString(timeoutMs),
                "delivery.timeout.ms", Integer.toString(Math.max(timeoutMs, 5000)),
                "request.timeout.ms", Integer.toString(Math.min(timeoutMs, 4000)));
        return new KafkaProducer<>(p);
    }

    static Result roundtrip(Case c) throws Exception {
        Result r = new Result();
        long deadline = System.currentTimeMillis() + c.timeoutS * 1000L;
        List<String> values = new ArrayList<>();
        for (int i = 0; i < c.records; i++) values.add(c.name + "-" + i);
        try (KafkaProducer<String, String> prod = producer(c, c.timeoutS * 1000 / 2)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (String v : values) fs.add(prod.send(new ProducerRecord<>(c.topic, 0, null, v)));
            prod.flush();
            for (Future<RecordMetadata> f : fs) {
                f.get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
                r.produced++;
            }
        }
        r.consumed = consume(c, values.size(), deadline);
        r.ok = r.consumed.equals(values);
        return r;
    }

    static Result reauth(Case c) throws Exception {
        // records = interval in ms; the producer stays open for timeoutS seconds
        Result r = new Result();
        List<String> values = new ArrayList<>();
        long start = System.currentTimeMillis();
        try (KafkaProducer<String, String> prod = producer(c, 10000)) {
            for (int i = 0; System.currentTimeMillis() - start < c.timeoutS * 1000L; i++) {
                String v = c.name + "-" + i;
                values.add(v);
                prod.send(new ProducerRecord<>(c.topic, 0, null, v)).get(10, TimeUnit.SECONDS);
                r.produced++;
                Thread.sleep(c.records);
            }
        }
        r.consumed = consume(c, values.size(), System.currentTimeMillis() + 15000);
        r.ok = r.consumed.equals(values);
        r.extra = ",\"seconds\":" + (System.currentTimeMillis() - start) / 1000.0;
        return r;
    }

    static Result connect(Case c) throws Exception {
        Result r = new Result();
        Properties p = with(c.props, "client.id", "sec-java-admin",
                "request.timeout.ms", Integer.toString(Math.min(c.timeoutS * 1000, 5000)),
                "default.api.timeout.ms", Integer.toString(c.timeoutS * 1000),
                "reconnect.backoff.max.ms", "1000");
        try (Admin admin = Admin.create(p)) {
            Collection<Node> nodes = admin.describeCluster().nodes().get(c.timeoutS, TimeUnit.SECONDS);
            List<String> ids = new ArrayList<>();
            for (Node n : nodes) ids.add(n.id() + "@" + n.host() + ":" + n.port());
            r.consumed = ids;
            r.ok = !nodes.isEmpty();
        }
        return r;
    }

    public static void main(String[] args) throws Exception {
        List<Case> cases = new ArrayList<>();
        Case cur = null;
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            if (line.startsWith("CASE ")) {
                String[] f = line.split(" ");
                cur = new Case();
                cur.name = f[1]; cur.kind = f[2]; cur.topic = f[3];
                cur.records = Integer.parseInt(f[4]); cur.timeoutS = Integer.parseInt(f[5]);
                cases.add(cur);
            } else if (line.isEmpty()) {
                cur = null;
            } else if (cur != null) {
                int eq = line.indexOf('=');
                cur.props.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        System.out.println("{\"info\":" + q("kafka-clients " + AppInfoParser.getVersion()) + "}");
        for (Case c : cases) {
            long t0 = System.currentTimeMillis();
            Result r;
            try {
                switch (c.kind) {
                    case "roundtrip": r = roundtrip(c); break;
                    case "connect": r = connect(c); break;
                    case "reauth": r = reauth(c); break;
                    default: throw new IllegalArgumentException("unknown case kind " + c.kind);
                }
            } catch (Throwable e) {
                r = new Result();
                r.error = root(e);
            }
            StringBuilder b = new StringBuilder("{\"name\":").append(q(c.name)).append(",\"ok\":").append(r.ok)
                    .append(",\"produced\":").append(r.produced).append(",\"consumed\":").append(list(r.consumed));
            if (r.error != null)
                b.append(",\"error_type\":").append(q(r.error.getClass().getName()))
                 .append(",\"error\":").append(q(String.valueOf(r.error.getMessage())))
                 .append(",\"error_chain\":").append(list(chain(r.error)));
            b.append(r.extra).append(",\"ms\":").append(System.currentTimeMillis() - t0).append('}');
            System.out.println(b);
            System.out.flush();
        }
        System.out.println("{\"done\":true}");
        System.exit(0);  // no lingering client threads
    }
}
