// Driver of tests/integration/fetch_sessions_test.py (issue #21, KIP-227): the Java client 4.4 consumer fetching many
// partitions at once, which keeps an incremental fetch session with the broker.
//
// Usage: IncrementalFetch <bootstrap> <topic> <partitions> <records> <idle-ms>
// Creates <topic> with <partitions> partitions, writes <records> records round-robin over them (value = index),
// then one consumer assigned to every partition reads from the beginning until it has every record, polls one more
// second, prints "READ_DONE" and keeps polling for <idle-ms> with nothing new. Prints "RESULT received=N distinct=N missing=N" and exits 0 when every
// record came exactly once.
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class IncrementalFetch {
  /** Polls until `seen` holds `want` records or `ms` pass; marks each value in `seen`; returns records polled. */
  static long poll(KafkaConsumer<String, String> consumer, BitSet seen, int want, long ms) {
    long received = 0, end = System.currentTimeMillis() + ms;
    while (seen.cardinality() < want && System.currentTimeMillis() < end) {
      for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
        received++;
        seen.set(Integer.parseInt(r.value()));
      }
    }
    return received;
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    int records = Integer.parseInt(args[3]);
    long idleMs = Long.parseLong(args[4]);

    Properties ap = new Properties();
    ap.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) throw e;
    }

    Properties pp = new Properties();
    pp.put("bootstrap.servers", bootstrap);
    pp.put("key.serializer", StringSerializer.class.getName());
    pp.put("value.serializer", StringSerializer.class.getName());
    pp.put("linger.ms", "5");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      for (int i = 0; i < records; i++) producer.send(new ProducerRecord<>(topic, i % partitions, null, Integer.toString(i)));
      producer.flush();
    }

    Properties cp = new Properties();
    cp.put("bootstrap.servers", bootstrap);
    cp.put("key.deserializer", StringDeserializer.class.getName());
    cp.put("value.deserializer", StringDeserializer.class.getName());
    cp.put("enable.auto.commit", "false");
    cp.put("max.poll.records", "5000");
    cp.put("fetch.max.wait.ms", "100");
    BitSet seen = new BitSet(records);
    long received = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
      List<TopicPartition> all = new ArrayList<>();
      for (int p = 0; p < partitions; p++) all.add(new TopicPartition(topic, p));
      consumer.assign(all);
      consumer.seekToBeginning(all);
      received += poll(consumer, seen, records, 180_000);
      // A second of polls sends the moved positions (the first incremental fetch names every partition read);
      // then the driver takes the broker's figures, and what follows is the steady idle state.
      received += poll(consumer, seen, Integer.MAX_VALUE, 1000);
      System.out.println("READ_DONE");
      System.out.flush();
      received += poll(consumer, seen, Integer.MAX_VALUE, idleMs);
    }
    int distinct = seen.cardinality();
    System.out.println("RESULT received=" + received + " distinct=" + distinct + " missing=" + (records - distinct));
    System.exit(received == records && distinct == records ? 0 : 1);
  }
}
