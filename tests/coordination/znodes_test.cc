// Kafka's znode JSON: round trips and malformed input (an error, never a crash).
#include "coordination/zk/znodes.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace sluice::coordination::zk {
namespace {

namespace json = boost::json;

TEST(znodes, broker_registration_has_kafkas_v5_fields) {
  broker_registration b{1, "127.0.0.1", 9092, "PLAINTEXT", {}, std::nullopt};
  auto text = broker_znode::encode(b, 1700000000123);
  auto o = json::parse(text).as_object();
  EXPECT_EQ(o.at("version").as_int64(), 5);
  EXPECT_EQ(o.at("host").as_string(), "127.0.0.1");
  EXPECT_EQ(o.at("port").as_int64(), 9092);
  EXPECT_EQ(o.at("jmx_port").as_int64(), -1);
  EXPECT_EQ(o.at("timestamp").as_string(), "1700000000123");
  EXPECT_EQ(o.at("endpoints").as_array().at(0).as_string(), "PLAINTEXT://127.0.0.1:9092");
  EXPECT_EQ(o.at("listener_security_protocol_map").as_object().at("PLAINTEXT").as_string(), "PLAINTEXT");
  EXPECT_TRUE(o.at("features").as_object().empty());
  EXPECT_FALSE(o.contains("rack"));
  EXPECT_EQ(broker_znode::path(1), "/brokers/ids/1");

  b.rack = "rack-a";
  auto back = broker_znode::decode(1, broker_znode::encode(b, 1));
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(back->id, 1);
  EXPECT_EQ(back->host, "127.0.0.1");
  EXPECT_EQ(back->port, 9092);
  EXPECT_EQ(back->listener_name, "PLAINTEXT");
  EXPECT_EQ(back->rack, "rack-a");
}

TEST(znodes, broker_registration_reads_ipv6_and_v1) {
  broker_registration b{2, "::1", 9093, "PLAINTEXT", {}, std::nullopt};
  auto back = broker_znode::decode(2, broker_znode::encode(b, 1));
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(back->host, "::1");
  EXPECT_EQ(back->port, 9093);
  auto v1 = broker_znode::decode(3, R"({"version":1,"host":"h","port":1234,"jmx_port":-1,"timestamp":"1"})");
  ASSERT_TRUE(v1.ok()) << v1.err().message;
  EXPECT_EQ(v1->host, "h");
  EXPECT_EQ(v1->port, 1234);
}

TEST(znodes, broker_registration_keeps_every_listener) {
  broker_registration b{4, "", 0, "INTERNAL", {}, std::nullopt};
  b.endpoints = {{"INTERNAL", "10.0.0.4", 9091, "PLAINTEXT"}, {"SECURE", "broker4.example", 9094, "SASL_SSL"}};
  auto o = json::parse(broker_znode::encode(b, 1)).as_object();
  EXPECT_EQ(o.at("endpoints").as_array().at(1).as_string(), "SECURE://broker4.example:9094");
  EXPECT_EQ(o.at("listener_security_protocol_map").as_object().at("SECURE").as_string(), "SASL_SSL");
  EXPECT_EQ(o.at("host").as_string(), "10.0.0.4");  // the PLAINTEXT endpoint, as Kafka fills host/port
  auto back = broker_znode::decode(4, broker_znode::encode(b, 1));
  ASSERT_TRUE(back.ok()) << back.err().message;
  ASSERT_EQ(back->endpoints.size(), 2u);
  EXPECT_EQ(back->listener_name, "INTERNAL");
  EXPECT_EQ(back->port, 9091);
  ASSERT_NE(back->endpoint_of("SECURE"), nullptr);
  EXPECT_EQ(back->endpoint_of("SECURE")->security_protocol, "SASL_SSL");
  EXPECT_EQ(back->endpoint_of("SECURE")->port, 9094);
  EXPECT_EQ(back->endpoint_of("OTHER"), nullptr);

  b.endpoints = {{"SSL", "h", 9093, "SSL"}};  // no PLAINTEXT endpoint: Kafka writes host null, port -1
  o = json::parse(broker_znode::encode(b, 1)).as_object();
  EXPECT_TRUE(o.at("host").is_null());
  EXPECT_EQ(o.at("port").as_int64(), -1);
}

TEST(znodes, controller_and_epoch) {
  auto o = json::parse(controller_znode::encode(3, 42)).as_object();
  EXPECT_EQ(o.at("version").as_int64(), 2);
  EXPECT_EQ(o.at("brokerid").as_int64(), 3);
  EXPECT_EQ(o.at("timestamp").as_string(), "42");
  EXPECT_EQ(o.at("kraftControllerEpoch").as_int64(), -1);
  EXPECT_EQ(*controller_znode::decode(controller_znode::encode(3, 42)), 3);
  EXPECT_EQ(controller_epoch_znode::encode(7), "7");
  EXPECT_EQ(*controller_epoch_znode::decode("7"), 7);
  EXPECT_FALSE(controller_epoch_znode::decode("7x").ok());
  EXPECT_FALSE(controller_epoch_znode::decode("").ok());
  EXPECT_FALSE(controller_znode::decode("{\"version\":2}").ok());
}

TEST(znodes, topic_assignment_round_trip) {
  topic_assignment t{"orders", random_topic_id(), {{1, 2, 3}, {2, 3, 1}}, {}, {}, {}};
  auto text = topic_znode::encode(t);
  auto o = json::parse(text).as_object();
  EXPECT_EQ(o.at("version").as_int64(), 3);
  EXPECT_EQ(o.at("topic_id").as_string(), to_base64(t.id));
  EXPECT_TRUE(o.at("adding_replicas").as_object().empty());
  EXPECT_TRUE(o.at("removing_replicas").as_object().empty());
  EXPECT_EQ(o.at("partitions").as_object().at("1").as_array().at(0).as_int64(), 2);
  auto back = topic_znode::decode("orders", text);
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(back->name, "orders");
  EXPECT_EQ(back->id, t.id);
  EXPECT_EQ(back->replicas, t.replicas);
  EXPECT_EQ(topic_znode::path("orders"), "/brokers/topics/orders");
}

TEST(znodes, partition_state_round_trip) {
  partition_state s{2, 5, {2, 3}, 4, -1};
  auto o = json::parse(partition_state_znode::encode(s)).as_object();
  EXPECT_EQ(o.at("version").as_int64(), 1);
  EXPECT_EQ(o.at("leader").as_int64(), 2);
  EXPECT_EQ(o.at("leader_epoch").as_int64(), 5);
  EXPECT_EQ(o.at("controller_epoch").as_int64(), 4);
  EXPECT_EQ(o.at("isr").as_array().size(), 2u);
  auto back = partition_state_znode::decode(partition_state_znode::encode(s), 9);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->leader, 2);
  EXPECT_EQ(back->leader_epoch, 5);
  EXPECT_EQ(back->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(back->controller_epoch, 4);
  EXPECT_EQ(back->version, 9);
  EXPECT_EQ(partition_state_znode::path("t", 3), "/brokers/topics/t/partitions/3/state");
}

TEST(znodes, configs_cluster_id_producer_ids_shutdown) {
  std::map<std::string, std::string> c{{"retention.ms", "1000"}, {"cleanup.policy", "compact"}};
  auto o = json::parse(topic_config_znode::encode(c)).as_object();
  EXPECT_EQ(o.at("version").as_int64(), 1);
  EXPECT_EQ(*topic_config_znode::decode(topic_config_znode::encode(c)), c);
  EXPECT_TRUE(topic_config_znode::decode("")->empty());

  auto id = json::parse(cluster_id_znode::encode("abc")).as_object();
  EXPECT_EQ(id.at("version").as_string(), "1");
  EXPECT_EQ(*cluster_id_znode::decode(cluster_id_znode::encode("abc")), "abc");

  producer_id_block b{3, 1000, 1999};
  auto p = json::parse(producer_id_block_znode::encode(b)).as_object();
  EXPECT_EQ(p.at("block_start").as_string(), "1000");
  EXPECT_EQ(p.at("block_end").as_string(), "1999");
  auto back = producer_id_block_znode::decode(producer_id_block_znode::encode(b));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->broker_id, 3);
  EXPECT_EQ(back->first, 1000);
  EXPECT_EQ(back->last, 1999);

  controlled_shutdown_znode::value v{4, 5, 0};
  auto sv = controlled_shutdown_znode::decode(controlled_shutdown_znode::encode(v));
  ASSERT_TRUE(sv.ok());
  EXPECT_EQ(sv->broker, 4);
  EXPECT_EQ(sv->remaining_leaders, 0);
  EXPECT_EQ(controlled_shutdown_znode::decode(controlled_shutdown_znode::encode({4, 5, -1}))->remaining_leaders, -1);
}

TEST(znodes, malformed_input_is_an_error) {
  const std::vector<std::string> garbage = {"", "{", "[]", "null", "42", "\"x\"", "{\"a\":}", std::string("\0\1\2", 3),
                                            "{\"version\":\"x\"}", std::string(100000, '[')};
  for (const auto& g : garbage) {
    EXPECT_FALSE(broker_znode::decode(1, g).ok()) << g.substr(0, 20);
    EXPECT_FALSE(controller_znode::decode(g).ok());
    EXPECT_FALSE(topic_znode::decode("t", g).ok());
    EXPECT_FALSE(partition_state_znode::decode(g, 0).ok());
    EXPECT_FALSE(cluster_id_znode::decode(g).ok());
    EXPECT_FALSE(producer_id_block_znode::decode(g).ok());
    EXPECT_FALSE(controlled_shutdown_znode::decode(g).ok());
  }
  EXPECT_FALSE(topic_config_znode::decode("{").ok());
  EXPECT_FALSE(topic_config_znode::decode("[]").ok());
  EXPECT_EQ(broker_znode::decode(1, "{").err().code, zk_errc::malformed);
  // Wrong types and shapes.
  EXPECT_FALSE(topic_znode::decode("t", R"({"partitions":{"1":[1]}})").ok());           // not 0..n-1
  EXPECT_FALSE(topic_znode::decode("t", R"({"partitions":{"0":[1],"0x":[2]}})").ok());
  EXPECT_FALSE(topic_znode::decode("t", R"({"partitions":{"0":["1"]}})").ok());
  EXPECT_FALSE(topic_znode::decode("t", R"({"partitions":{"0":[1]},"topic_id":"short"})").ok());
  EXPECT_FALSE(topic_znode::decode("t", R"({"partitions":[]})").ok());
  EXPECT_FALSE(partition_state_znode::decode(R"({"leader":1,"leader_epoch":0,"controller_epoch":1})", 0).ok());
  EXPECT_FALSE(partition_state_znode::decode(R"({"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1.5]})", 0).ok());
  EXPECT_FALSE(partition_state_znode::decode(R"({"leader":99999999999,"leader_epoch":0,"controller_epoch":1,"isr":[]})", 0).ok());
  EXPECT_FALSE(broker_znode::decode(1, R"({"version":5,"endpoints":["nonsense"]})").ok());
  EXPECT_FALSE(broker_znode::decode(1, R"({"version":5,"endpoints":["PLAINTEXT://h:99999"]})").ok());
  EXPECT_FALSE(topic_config_znode::decode(R"({"version":1,"config":{"a":1}})").ok());
  EXPECT_FALSE(producer_id_block_znode::decode(R"({"broker":1,"block_start":"10","block_end":"5"})").ok());
  EXPECT_FALSE(producer_id_block_znode::decode(R"({"broker":1,"block_start":"1x","block_end":"5"})").ok());
}

TEST(znodes, preferred_replica_election_is_kafkas_json) {
  EXPECT_EQ(preferred_replica_election_znode::path(), "/admin/preferred_replica_election");
  const std::string text = preferred_replica_election_znode::encode({{"t", 1}, {"a", 0}, {"t", 0}});
  EXPECT_EQ(text, R"({"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"t","partition":0},)"
                  R"({"topic":"t","partition":1}]})");
  auto back = preferred_replica_election_znode::decode(text);
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(*back, (preferred_replica_election_znode::partitions{{"a", 0}, {"t", 0}, {"t", 1}}));
  // As kafka-preferred-replica-election.sh writes it (spaces, a duplicate entry).
  auto kafka = preferred_replica_election_znode::decode(
      R"({"version": 1, "partitions": [{"topic": "x", "partition": 3}, {"partition": 3, "topic": "x"}]})");
  ASSERT_TRUE(kafka.ok()) << kafka.err().message;
  EXPECT_EQ(*kafka, (preferred_replica_election_znode::partitions{{"x", 3}}));
  for (const char* bad : {"", "{", "[]", R"({"version":1})", R"({"partitions":{}})", R"({"partitions":[{"topic":"x"}]})",
                          R"({"partitions":[{"topic":"x","partition":-1}]})", R"({"partitions":[{"topic":"","partition":0}]})",
                          R"({"partitions":[{"topic":1,"partition":0}]})", R"({"partitions":[7]})"})
    EXPECT_EQ(preferred_replica_election_znode::decode(bad).err().code, zk_errc::malformed) << bad;
}

}  // namespace
}  // namespace sluice::coordination::zk
