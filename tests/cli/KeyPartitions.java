// The Java client's default partitioner, observed: a KafkaProducer<String, String> (kafka-clients 4.4.0, default
// partitioner, no partitioner.class) sends one record per stdin line "key" (value = key) to TOPIC, and prints
// "key<TAB>partition" from each RecordMetadata, in input order. Used by tests/cli/cli_partitioner_test.py.
//
//   java -cp 'libs/*:classes' KeyPartitions BOOTSTRAP TOPIC < keys
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class KeyPartitions {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    List<String> keys = new ArrayList<>();
    for (String line; (line = in.readLine()) != null; ) keys.add(line);
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
      for (String k : keys) sent.add(p.send(new ProducerRecord<>(args[1], k, k)));
      p.flush();
      PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
      for (int i = 0; i < keys.size(); ++i)
        out.println(keys.get(i) + "\t" + sent.get(i).get(30, TimeUnit.SECONDS).partition());
      out.flush();
    }
  }
}
