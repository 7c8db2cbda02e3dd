// Fault-injection driver for Apache Kafka's Java client (kafka-clients, pinned in pom.xml), used by
// tests/integration/http_faults_clients_test.py: it adds fault rules to the broker's HTTP side (POST /v1/faults,
// broker/http/README.md) with java.net.http, produces through KafkaProducer and reads back with KafkaConsumer.
//
//   java -cp 'libs/*:fault-classes' FaultClient BOOTSTRAP HTTP_BASE      (HTTP_BASE e.g. http://127.0.0.1:9644)
//
// A line protocol on stdin/stdout, so one JVM serves a whole test run (the test adds a fault, then asks for the
// send it is meant to hit). The first line out is {"info": "kafka-clients <version>"}; then each input line is one
// JSON command, answered by exactly one JSON line {"id": <the command's id>, "ok": true|false, "ms": <wall ms>, ...}:
//
//   {"op": "create", "id", "topics": [names], "partitions": N}     Admin.createTopics (replication factor 1)
//   {"op": "producer", "id", "name", "props": {...}}               a KafkaProducer<String, String> called name
//   {"op": "send", "id", "name", "topic", "partition", "values": [..], "timeout_ms"}
//        sends every value, then flush(); answers "offsets" (one per value, -1 for a failed one), "send_ms" (from
//        the first send() to the last acknowledgement, fractional), "error": null | [class, message], and
//        "metrics": the producer's cumulative record-send-total, record-retry-total, record-error-total
//   {"op": "fault", "id", "rule": {...}}                           POST HTTP_BASE/v1/faults -> "status", "body"
//   {"op": "read", "id", "topics": [names], "timeout_ms"}          a KafkaConsumer assigned every partition of the
//        topics, from the beginning up to the end offsets: "records": {topic: [[partition, offset, value], ...]},
//        "end": {topic: {partition: end offset}}
//   {"op": "close", "id"}                                          closes every producer, exits 0
//
// Every wait is bounded; an exception answers that command only ("ok": false, "exception": [class, message]).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.*;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.common.utils.internals.AppInfoParser;

public class FaultClient {
    static final ObjectMapper M = new ObjectMapper();
    static String bootstrap, httpBase;
    static final Map<String, KafkaProducer<String, String>> producers = new HashMap<>();
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    static Throwable root(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null)
            e = e.getCause();
        return e;
    }

    static ArrayNode err(Throwable e) {
        Throwable r = root(e);
        ArrayNode a = M.createArrayNode();
        a.add(r.getClass().getName());
        a.add(r.getMessage() == null ? "" : r.getMessage());
        return a;
    }

    static List<String> strings(JsonNode n) {
        List<String> l = new ArrayList<>();
        for (JsonNode v : n) l.add(v.asText());
        return l;
    }

    static double metric(KafkaProducer<String, String> p, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : p.metrics().entrySet())
            if (e.getKey().group().equals("producer-metrics") && e.getKey().name().equals(name))
                return ((Number) e.getValue().metricValue()).doubleValue();
        return -1;
    }

    static void create(JsonNode cmd, ObjectNode out) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "20000");
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String t : strings(cmd.get("topics"))) topics.add(new NewTopic(t, cmd.path("partitions").asInt(1), (short) 1));
            admin.createTopics(topics).all().get(20, TimeUnit.SECONDS);
        }
        out.put("ok", true);
    }

    static void producer(JsonNode cmd, ObjectNode out) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        cmd.get("props").properties().forEach(kv -> p.put(kv.getKey(), kv.getValue().asText()));
        KafkaProducer<String, String> old = producers.put(cmd.get("name").asText(), new KafkaProducer<>(p));
        if (old != null) old.close(Duration.ofSeconds(5));
        out.put("ok", true);
    }

    static void send(JsonNode cmd, ObjectNode out) {
        KafkaProducer<String, String> p = producers.get(cmd.get("name").asText());
        String topic = cmd.get("topic").asText();
        int partition = cmd.path("partition").asInt(0);
        long timeoutMs = cmd.path("timeout_ms").asLong(30000);
        List<String> values = strings(cmd.get("values"));
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        long t0 = System.nanoTime();
        for (String v : values) futures.add(p.send(new ProducerRecord<>(topic, partition, null, v)));
        p.flush();
        ArrayNode offsets = out.putArray("offsets");
        Throwable first = null;
        long deadline = t0 + timeoutMs * 1000000L;
        long last = t0;
        for (Future<RecordMetadata> f : futures) {
            try {
                offsets.add(f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS).offset());
                last = System.nanoTime();
            } catch (Exception e) {
                offsets.add(-1);
                if (first == null) first = e;
            }
        }
        out.put("send_ms", (last - t0) / 1e6);
        if (first == null) out.putNull("error");
        else out.set("error", err(first));
        ObjectNode m = out.putObject("metrics");
        for (String name : new String[] {"record-send-total", "record-retry-total", "record-error-total"})
            m.put(name, metric(p, name));
        out.put("ok", first == null);
    }

    static void fault(JsonNode cmd, ObjectNode out) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(httpBase + "/v1/faults"))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(M.writeValueAsString(cmd.get("rule"))))
            .build();
        HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        out.put("status", r.statusCode());
        try {
            out.set("body", M.readTree(r.body()));
        } catch (IOException e) {
            out.put("body", r.body());
        }
        out.put("ok", r.statusCode() == 201);
    }

    static void read(JsonNode cmd, ObjectNode out) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("request.timeout.ms", "10000");
        long deadline = System.nanoTime() + cmd.path("timeout_ms").asLong(30000) * 1000000L;
        ObjectNode records = out.putObject("records"), endOut = out.putObject("end");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String t : strings(cmd.get("topics"))) {
                for (PartitionInfo pi : c.partitionsFor(t, Duration.ofSeconds(10)))
                    tps.add(new TopicPartition(t, pi.partition()));
                records.putArray(t);
                endOut.putObject(t);
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(10));
            end.forEach((tp, o) -> ((ObjectNode) endOut.get(tp.topic())).put(String.valueOf(tp.partition()), o));
            boolean done = false;
            while (!done && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    ArrayNode one = ((ArrayNode) records.get(r.topic())).addArray();
                    one.add(r.partition());
                    one.add(r.offset());
                    one.add(r.value());
                }
                done = true;
                for (TopicPartition tp : tps) if (c.position(tp, Duration.ofSeconds(5)) < end.get(tp)) done = false;
            }
            out.put("ok", done);
            if (!done) out.put("error", "not at the end offsets within the timeout");
        }
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        httpBase = args[1];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        ObjectNode hello = M.createObjectNode();
        hello.put("info", "kafka-clients " + AppInfoParser.getVersion());
        stdout.println(M.writeValueAsString(hello));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode cmd = M.readTree(line);
            ObjectNode out = M.createObjectNode();
            out.set("id", cmd.get("id"));
            String op = cmd.path("op").asText();
            long t0 = System.nanoTime();
            try {
                switch (op) {
                    case "create": create(cmd, out); break;
                    case "producer": producer(cmd, out); break;
                    case "send": send(cmd, out); break;
                    case "fault": fault(cmd, out); break;
                    case "read": read(cmd, out); break;
                    case "close":
                        for (KafkaProducer<String, String> p : producers.values()) p.close(Duration.ofSeconds(5));
                        out.put("ok", true);
                        stdout.println(M.writeValueAsString(out));
                        System.exit(0);
                        return;
                    default: throw new IllegalArgumentException("unknown op " + op);
                }
            } catch (Throwable e) {  // one command's crash is that command's answer
                out.put("ok", false);
                out.set("exception", err(e));
            }
            out.put("ms", (System.nanoTime() - t0) / 1000000);
            stdout.println(M.writeValueAsString(out));
        }
    }
}
