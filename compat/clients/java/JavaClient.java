// Client-matrix driver for Apache Kafka's Java client (kafka-clients, pinned in pom.xml): the
// matrix scenario with Admin, KafkaProducer and KafkaConsumer.
//
//   java -cp 'libs/*:classes' JavaClient BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
//
// Prints `STEP <step> PASS|FAIL|SKIP <detail>` per step, `REC phase partition offset key value
// headers` (tab-separated) per consumed record and `INFO <client version>`; run_matrix.py checks the
// records (../README.md). Every wait is bounded; the process exits 0 unless it crashed.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.*;

public class JavaClient {
    static String bootstrap, topic, group;
    static int records, partitions, first;
    static final String CLIENT = "java";
    static long base;  // CreateTime of record i is base + i (ms)
    // what the two consume phases read: partition -> list of record indexes in offset order
    static final Map<Integer, List<Integer>> readIndexes = new TreeMap<>();

    static void step(String name, String state, String detail) {
        System.out.println("STEP " + name + " " + state + " " + detail.replace('\n', ' '));
        System.out.flush();
    }

    static String why(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null)
            e = e.getCause();
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    interface Step { String run() throws Exception; }

    static void runStep(String name, Step s) {
        try {
            String detail = s.run();
            step(name, "PASS", detail);
        } catch (Throwable e) {
            step(name, "FAIL", why(e));
        }
    }

    static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "matrix-java");
        return p;
    }

    static KafkaConsumer<String, String> consumer(String groupId, String assignor) {
        Properties p = common();
        p.put("group.id", groupId);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        if (assignor != null) p.put("partition.assignment.strategy", assignor);
        return new KafkaConsumer<>(p);
    }

    static String headers(ConsumerRecord<String, String> r) {
        StringBuilder b = new StringBuilder();
        for (Header h : r.headers()) {
            if (b.length() > 0) b.append(',');
            b.append(h.key()).append('=').append(new String(h.value(), StandardCharsets.UTF_8));
        }
        return b.toString();
    }

    // Reads exactly `want` records in the group, prints them, commits exactly those (sync), closes.
    static String consumePhase(int phase, int want) {
        int got = 0;
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaConsumer<String, String> c = consumer(group, null)) {
            c.subscribe(List.of(topic));
            while (got < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    if (got == want) break;
                    got++;
                    System.out.println("REC\t" + phase + "\t" + r.partition() + "\t" + r.offset() + "\t" + r.key()
                                       + "\t" + r.value() + "\t" + headers(r));
                    commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    try {
                        int idx = Integer.parseInt(r.key().substring(1));
                        readIndexes.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(idx);
                    } catch (RuntimeException e) { /* a bad key: the matrix reports it */ }
                }
            }
            c.commitSync(commit, Duration.ofSeconds(30));
        }
        if (got < want) throw new IllegalStateException("read " + got + " of " + want + " records in 60 s");
        return got + " records, committed " + commit.size() + " partitions";
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0]; topic = args[1]; group = args[2];
        records = Integer.parseInt(args[3]); partitions = Integer.parseInt(args[4]); first = Integer.parseInt(args[5]);
        System.out.println("INFO kafka-clients " + AppInfoParser());
        Properties ap = common();
        ap.put("request.timeout.ms", "15000");
        ap.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(ap)) {
            runStep("create", () -> {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                return "CreateTopics " + partitions + " partitions";
            });
            runStep("produce", () -> {
                Properties p = common();
                p.put("acks", "all");
                p.put("enable.idempotence", "true");
                p.put("linger.ms", "5");
                p.put("delivery.timeout.ms", "60000");
                p.put("key.serializer", StringSerializer.class.getName());
                p.put("value.serializer", StringSerializer.class.getName());
                base = System.currentTimeMillis() - 60_000;
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
                    for (int i = 0; i < records; i++) {
                        ProducerRecord<String, String> r = new ProducerRecord<>(topic, null, base + i,
                                String.format("k%04d", i), String.format("v%04d-%s", i, CLIENT));
                        r.headers().add("h-index", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                        r.headers().add("h-client", CLIENT.getBytes(StandardCharsets.UTF_8));
                        futures.add(prod.send(r));
                    }
                    prod.flush();
                    for (Future<RecordMetadata> f : futures) f.get(60, TimeUnit.SECONDS);
                }
                return records + " records, acks=all, enable.idempotence=true";
            });
            runStep("consume", () -> consumePhase(1, first));
            runStep("resume", () -> consumePhase(2, records - first));
            runStep("offsets_for_times", () -> {
                // Records were produced in index order with CreateTime base+i, so in each partition the
                // first offset with timestamp >= base+first is the number of indexes < first there.
                Map<TopicPartition, Long> query = new HashMap<>();
                Map<TopicPartition, Long> want = new HashMap<>();
                for (int p = 0; p < partitions; p++) {
                    TopicPartition tp = new TopicPartition(topic, p);
                    query.put(tp, base + first);
                    List<Integer> idx = readIndexes.getOrDefault(p, List.of());
                    long n = idx.stream().filter(i -> i < first).count();
                    want.put(tp, n == idx.size() ? null : n);
                }
                Map<TopicPartition, OffsetAndTimestamp> got;
                try (KafkaConsumer<String, String> c = consumer(group + "-times", null)) {
                    got = c.offsetsForTimes(query, Duration.ofSeconds(30));
                }
                StringBuilder d = new StringBuilder();
                for (int p = 0; p < partitions; p++) {
                    TopicPartition tp = new TopicPartition(topic, p);
                    OffsetAndTimestamp o = got.get(tp);
                    Long g = o == null ? null : o.offset();
                    if (!Objects.equals(g, want.get(tp)))
                        throw new IllegalStateException("partition " + p + ": offset " + g + " for timestamp base+"
                                                        + first + ", expected " + want.get(tp));
                    if (o != null && o.timestamp() < base + first)
                        throw new IllegalStateException("partition " + p + ": timestamp " + o.timestamp() + " < query");
                    d.append(p).append("->").append(g).append(' ');
                }
                return d.toString().trim();
            });
            runStep("rebalance", JavaClient::rebalance);
            runStep("describe", () -> {
                TopicDescription td = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
                if (td.partitions().size() != partitions)
                    throw new IllegalStateException(td.partitions().size() + " partitions described, expected " + partitions);
                for (TopicPartitionInfo pi : td.partitions())
                    if (pi.leader() == null) throw new IllegalStateException("partition " + pi.partition() + " has no leader");
                return partitions + " partitions, leaders " + td.partitions().get(0).leader().id();
            });
            runStep("delete_records", () -> {
                TopicPartition tp = new TopicPartition(topic, 0);
                long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(10))).lowWatermarks().get(tp)
                        .get(30, TimeUnit.SECONDS).lowWatermark();
                if (low != 10) throw new IllegalStateException("low watermark " + low + " after deleting before 10");
                long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS).offset();
                if (earliest != 10) throw new IllegalStateException("earliest offset " + earliest + " after DeleteRecords(10)");
                return "partition 0 low watermark 10, earliest 10";
            });
            runStep("transactions", () -> transactions(admin));
            runStep("delete", () -> {
                admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                long deadline = System.currentTimeMillis() + 30_000;
                while (admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) {
                    if (System.currentTimeMillis() > deadline) throw new IllegalStateException("topic still listed 30 s after delete");
                    Thread.sleep(200);
                }
                return "DeleteTopics, no longer listed";
            });
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }

    // The transactions step (../README.md): on TOPIC-txn, a transactional producer commits 30 records
    // and the group GROUP-txn's offset 7 for TOPIC partition 0 (sendOffsetsToTransaction), aborts 20
    // (flushed first), commits 10; a read_committed and a read_uncommitted consumer print what they
    // read as TXN lines, the group's committed offset is printed as TXNOFFSET; run_matrix.py checks them.
    static String transactions(Admin admin) throws Exception {
        String txTopic = topic + "-txn", txGroup = group + "-txn";
        admin.createTopics(List.of(new NewTopic(txTopic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        Properties p = common();
        p.put("transactional.id", group + "-txn-" + CLIENT);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("delivery.timeout.ms", "60000");
        p.put("max.block.ms", "30000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            prod.initTransactions();
            String[] tags = {"c", "a", "c2"};
            int[] counts = {30, 20, 10};
            for (int t = 0; t < 3; t++) {
                prod.beginTransaction();
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < counts[t]; i++)
                    fs.add(prod.send(new ProducerRecord<>(txTopic, i % partitions, "k" + i, CLIENT + "-" + tags[t] + "-" + i)));
                if (t == 0)
                    prod.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(7)),
                                                  new ConsumerGroupMetadata(txGroup));
                prod.flush();
                for (Future<RecordMetadata> f : fs) f.get(60, TimeUnit.SECONDS);
                if (t == 1) prod.abortTransaction();
                else prod.commitTransaction();
            }
        }
        int committed = readTxn(txTopic, "committed", 40), uncommitted = readTxn(txTopic, "uncommitted", 60);
        long off = -1;
        long deadline = System.currentTimeMillis() + 15_000;
        while (true) {  // the offset shows once the COMMIT marker is in __consumer_offsets
            OffsetAndMetadata o = admin.listConsumerGroupOffsets(Map.of(txGroup, new ListConsumerGroupOffsetsSpec()
                            .topicPartitions(List.of(new TopicPartition(topic, 0)))),
                    new ListConsumerGroupOffsetsOptions().requireStable(true))
                    .partitionsToOffsetAndMetadata(txGroup).get(30, TimeUnit.SECONDS).get(new TopicPartition(topic, 0));
            off = o == null ? -1 : o.offset();
            if (off == 7 || System.currentTimeMillis() > deadline) break;
            Thread.sleep(200);
        }
        System.out.println("TXNOFFSET " + off);
        return "3 transactions (commit 30 + sendOffsetsToTransaction, abort 20, commit 10); read_committed "
               + committed + ", read_uncommitted " + uncommitted + ", group offset " + off;
    }

    // Reads TOPIC-txn from the beginning of every partition (no group) until `want` records or 30 s,
    // then 1 s more (anything extra is a failure too); prints TXN lines.
    static int readTxn(String txTopic, String view, int want) {
        Properties p = common();
        p.put("isolation.level", "committed".equals(view) ? "read_committed" : "read_uncommitted");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        int got = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(txTopic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 30_000, grace = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, grace)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got++;
                    System.out.println("TXN\t" + view + "\t" + r.partition() + "\t" + r.offset() + "\t" + r.key() + "\t" + r.value());
                }
                if (got >= want && grace == Long.MAX_VALUE) grace = System.currentTimeMillis() + 1000;
            }
        }
        return got;
    }

    static String AppInfoParser() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }

    // Two members of a new group with the cooperative-sticky assignor: A alone gets every partition,
    // then B joins; cooperative rebalancing must move partitions to B without A giving up the ones it
    // keeps (A's revoked partitions are exactly those B gets; A never loses all of them).
    static String rebalance() throws Exception {
        String g = group + "-coop";
        String assignor = CooperativeStickyAssignor.class.getName();
        Set<Integer> revokedA = new TreeSet<>();
        Set<Integer> assignedA = new TreeSet<>();
        List<String> events = new ArrayList<>();
        try (KafkaConsumer<String, String> a = consumer(g, assignor); KafkaConsumer<String, String> b = consumer(g, assignor)) {
            a.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                    for (TopicPartition tp : ps) revokedA.add(tp.partition());
                    if (!ps.isEmpty()) events.add("A-" + ps.size());
                }
                public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                    for (TopicPartition tp : ps) assignedA.add(tp.partition());
                    if (!ps.isEmpty()) events.add("A+" + ps.size());
                }
            });
            long deadline = System.currentTimeMillis() + 60_000;
            while (a.assignment().size() < partitions) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("member A alone got " + a.assignment() + " in 60 s");
                a.poll(Duration.ofMillis(200));
            }
            b.subscribe(List.of(topic));
            deadline = System.currentTimeMillis() + 90_000;
            int stable = 0;
            while (stable < 5) {
                if (System.currentTimeMillis() > deadline)
                    throw new IllegalStateException("no stable split in 90 s: A " + a.assignment() + " B " + b.assignment());
                a.poll(Duration.ofMillis(100));
                b.poll(Duration.ofMillis(100));
                Set<TopicPartition> sa = a.assignment(), sb = b.assignment();
                Set<TopicPartition> all = new HashSet<>(sa);
                all.addAll(sb);
                boolean disjoint = Collections.disjoint(sa, sb);
                stable = (!sa.isEmpty() && !sb.isEmpty() && disjoint && all.size() == partitions) ? stable + 1 : 0;
            }
            Set<Integer> nowB = new TreeSet<>();
            for (TopicPartition tp : b.assignment()) nowB.add(tp.partition());
            if (!revokedA.equals(nowB))
                throw new IllegalStateException("A revoked " + revokedA + " but B owns " + nowB + " (not incremental; events " + events + ")");
            return "A " + a.assignment().size() + " + B " + nowB.size() + " partitions, A revoked only " + revokedA + " " + events;
        }
    }
}
