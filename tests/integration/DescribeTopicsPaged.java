// Driver of tests/integration/describe_topic_partitions_test.py (issue #21, KIP-966): the Java admin client 4.4's
// describeTopics, which pages through DescribeTopicPartitions when the broker serves it.
//
// Usage: DescribeTopicsPaged <bootstrap> <prefix>
// Creates <prefix>-a (5 partitions) and <prefix>-b (3 partitions), then describes both with
// partitionSizeLimitPerResponse 2 (several pages) and with the default, and an unknown topic. Prints one line per
// topic: "TOPIC <name> partitions=<indexes> leaders=<leader ids>" and "UNKNOWN <exception class>"; exit 0.
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;

public class DescribeTopicsPaged {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    String a = args[1] + "-a", b = args[1] + "-b";
    try (Admin admin = Admin.create(p)) {
      admin.createTopics(List.of(new NewTopic(a, 5, (short) 1), new NewTopic(b, 3, (short) 1))).all().get();
      for (int limit : new int[] {2, 2000}) {
        Map<String, TopicDescription> d = admin.describeTopics(List.of(b, a),
            new DescribeTopicsOptions().partitionSizeLimitPerResponse(limit)).allTopicNames().get();
        for (String name : List.of(a, b)) {
          TopicDescription t = d.get(name);
          System.out.println("TOPIC " + name + " limit=" + limit + " partitions="
              + t.partitions().stream().map(x -> Integer.toString(x.partition())).collect(Collectors.joining(","))
              + " leaders=" + t.partitions().stream().map(x -> x.leader() == null ? "none" : Integer.toString(x.leader().id()))
                  .collect(Collectors.joining(",")));
        }
      }
      try {
        admin.describeTopics(List.of(args[1] + "-missing")).allTopicNames().get();
        System.out.println("UNKNOWN none");
      } catch (ExecutionException e) {
        System.out.println("UNKNOWN " + e.getCause().getClass().getSimpleName());
      }
    }
  }
}
