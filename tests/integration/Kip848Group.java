// KIP-848 consumer group driver for kip848_group_test.py (issue #21): three Java 4.4 consumers with
// group.protocol=consumer share a 12-partition topic while a producer keeps writing; one leaves; the others must keep
// their partitions (no revocation) and keep consuming while they take over its share; after everyone stops, a new
// consumer resumes from the committed offsets. Prints one line per observation; exits 1 when a bound is hit.
//
// Usage: Kip848Group BOOTSTRAP TOPIC GROUP ASSIGNOR   (ASSIGNOR: uniform, range, or "" for the broker's default)
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class Kip848Group {
  static final int PARTITIONS = 12;

  /** One consumer on its own thread: what it owns, and when it consumed or lost partitions. */
  static final class Member implements Runnable {
    final String name;
    final Properties props;
    final String topic;
    final Set<TopicPartition> owned = ConcurrentHashMap.newKeySet();
    final List<long[]> consumed = Collections.synchronizedList(new ArrayList<>());  // {ms, count}
    final List<Long> revokedAt = Collections.synchronizedList(new ArrayList<>());
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicInteger commitFailures = new AtomicInteger();
    final CountDownLatch done = new CountDownLatch(1);
    volatile Throwable failure;

    Member(String name, Properties props, String topic) {
      this.name = name;
      this.props = props;
      this.topic = topic;
    }

    public void run() {
      long deadline = System.currentTimeMillis() + 180_000;  // bound: never more than 3 minutes
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
        c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
          public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            if (!parts.isEmpty()) revokedAt.add(System.currentTimeMillis());
            owned.removeAll(parts);
          }
          public void onPartitionsAssigned(Collection<TopicPartition> parts) { owned.addAll(parts); }
          public void onPartitionsLost(Collection<TopicPartition> parts) { owned.removeAll(parts); }
        });
        while (!stop.get() && System.currentTimeMillis() < deadline) {
          ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
          if (!recs.isEmpty()) {
            consumed.add(new long[] {System.currentTimeMillis(), recs.count()});
            try {
              c.commitSync();
            } catch (CommitFailedException e) {
              // A commit that raced the member's epoch bump (an application retries with the next poll's commit).
              commitFailures.incrementAndGet();
            }
          }
        }
        c.commitSync();
      } catch (Throwable t) {
        failure = t;
      } finally {
        owned.clear();
        done.countDown();
      }
    }

    long consumedBetween(long from, long to) {
      long n = 0;
      synchronized (consumed) {
        for (long[] e : consumed) if (e[0] >= from && e[0] <= to) n += e[1];
      }
      return n;
    }

    long revokedBetween(long from, long to) {
      synchronized (revokedAt) {
        return revokedAt.stream().filter(t -> t >= from && t <= to).count();
      }
    }
  }

  static Properties consumerProps(String bootstrap, String group, String clientId, String assignor) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("group.protocol", "consumer");
    if (!assignor.isEmpty()) p.put("group.remote.assignor", assignor);
    p.put("client.id", clientId);
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    return p;
  }

  static boolean waitFor(java.util.function.BooleanSupplier cond, long ms) throws InterruptedException {
    long end = System.currentTimeMillis() + ms;
    while (System.currentTimeMillis() < end) {
      if (cond.getAsBoolean()) return true;
      Thread.sleep(50);
    }
    return cond.getAsBoolean();
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], topic = args[1], group = args[2], assignor = args.length > 3 ? args[3] : "";
    Properties ap = new Properties();
    ap.put("bootstrap.servers", bootstrap);
    int exit = 0;
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);

      // A producer writing one record to every partition every 20 ms, until told to stop (bounded: 3 minutes).
      AtomicBoolean stopProducing = new AtomicBoolean();
      Properties pp = new Properties();
      pp.put("bootstrap.servers", bootstrap);
      pp.put("key.serializer", StringSerializer.class.getName());
      pp.put("value.serializer", StringSerializer.class.getName());
      pp.put("linger.ms", "5");
      Thread producer = new Thread(() -> {
        long end = System.currentTimeMillis() + 180_000;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
          long i = 0;
          while (!stopProducing.get() && System.currentTimeMillis() < end) {
            for (int part = 0; part < PARTITIONS; ++part) p.send(new ProducerRecord<>(topic, part, null, "v" + i++));
            Thread.sleep(20);
          }
          p.flush();
        } catch (Exception e) {
          System.out.println("PRODUCER_FAILED " + e);
        }
      });
      producer.start();

      List<Member> members = new ArrayList<>();
      for (int i = 0; i < 3; ++i) {
        Member m = new Member("m" + i, consumerProps(bootstrap, group, "kip848-m" + i, assignor), topic);
        members.add(m);
        new Thread(m, "member-" + i).start();
      }
      boolean spread = waitFor(() -> members.stream().allMatch(m -> m.owned.size() == 4), 90_000);
      System.out.println("ASSIGNED " + members.get(0).owned.size() + " " + members.get(1).owned.size() + " "
          + members.get(2).owned.size());
      if (!spread) exit = 1;

      // The third member leaves while the producer keeps writing.
      long leave = System.currentTimeMillis();
      Member leaving = members.get(2);
      leaving.stop.set(true);
      leaving.done.await(60, TimeUnit.SECONDS);
      boolean moved = waitFor(() -> members.get(0).owned.size() + members.get(1).owned.size() == PARTITIONS
          && members.get(0).owned.size() == 6, 90_000);
      long settled = System.currentTimeMillis();
      System.out.println("AFTER_LEAVE " + members.get(0).owned.size() + " " + members.get(1).owned.size());
      if (!moved) exit = 1;
      System.out.println("LEAVE_WINDOW_MS " + (settled - leave));
      for (int i = 0; i < 2; ++i) {
        Member m = members.get(i);
        System.out.println("DURING_LEAVE " + m.name + " consumed=" + m.consumedBetween(leave, settled) + " revocations="
            + m.revokedBetween(leave, settled));
      }

      // Stop producing, let the two drain, then stop them (each commits as it goes and once more on the way out).
      stopProducing.set(true);
      producer.join(60_000);
      Thread.sleep(2000);
      for (int i = 0; i < 2; ++i) members.get(i).stop.set(true);
      for (Member m : members) {
        m.done.await(60, TimeUnit.SECONDS);
        System.out.println("COMMIT_FAILURES " + m.name + " " + m.commitFailures.get());
        if (m.failure != null) {
          System.out.println("MEMBER_FAILED " + m.name + " " + m.failure);
          exit = 1;
        }
      }

      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      long committedTotal = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int part = 0; part < PARTITIONS; ++part) latest.put(new TopicPartition(topic, part), OffsetSpec.latest());
      long endTotal = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
          .mapToLong(ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
      System.out.println("COMMITTED partitions=" + committed.size() + " at_end=" + (committedTotal == endTotal));

      // A new member resumes where the group committed.
      try (KafkaConsumer<String, String> c =
               new KafkaConsumer<>(consumerProps(bootstrap, group, "kip848-resume", assignor))) {
        c.subscribe(List.of(topic));
        long end = System.currentTimeMillis() + 60_000;
        while (c.assignment().size() < PARTITIONS && System.currentTimeMillis() < end) c.poll(Duration.ofMillis(100));
        int same = 0;
        for (TopicPartition tp : c.assignment()) {
          OffsetAndMetadata om = committed.get(tp);
          if (om != null && c.position(tp, Duration.ofSeconds(10)) == om.offset()) ++same;
        }
        System.out.println("RESUME assigned=" + c.assignment().size() + " at_committed=" + same);

        ConsumerGroupDescription d =
            admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        System.out.println("DESCRIBE type=" + d.type() + " state=" + d.groupState() + " members=" + d.members().size()
            + " assignor=" + d.partitionAssignor());
      }
    }
    System.out.println("EXIT " + exit);
    System.exit(exit);
  }
}
