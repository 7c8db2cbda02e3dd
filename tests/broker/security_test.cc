// Security building blocks (issue #17): SCRAM against RFC 7677's example, the SASL servers' exchanges and failure
// texts, the JAAS parser, ssl.principal.mapping.rules, ACL filters and the authorizer's rules, and the quota rate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "broker/quota_manager.h"
#include "broker/security/acl.h"
#include "broker/security/authorizer.h"
#include "broker/security/sasl_server.h"
#include "broker/security/scram.h"
#include "broker/security/ssl_principal_mapper.h"
#include "coordination/embedded_store.h"

namespace sluice::broker::security {
namespace {

bytes b(std::string_view s) { return bytes(s.begin(), s.end()); }
std::string text(const bytes& v) { return std::string(v.begin(), v.end()); }

bytes xor_of(const bytes& a, const bytes& c) {
  bytes out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<uint8_t>(a[i] ^ c[i]);
  return out;
}

TEST(scram, rfc7677_example_proof_and_server_signature) {
  // RFC 7677 §3: user "user", password "pencil".
  const auto salt = *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  const auto salted = scram_salted_password(scram_mechanism::sha_256, "pencil", salt, 4096);
  const auto client_key = scram_hmac(scram_mechanism::sha_256, salted, b("Client Key"));
  const auto stored_key = scram_hash(scram_mechanism::sha_256, client_key);
  const auto server_key = scram_hmac(scram_mechanism::sha_256, salted, b("Server Key"));
  const std::string auth_message =
      "n=user,r=rOprNGfwEbeRWgbNEkqO,"
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
  const auto proof = xor_of(client_key, scram_hmac(scram_mechanism::sha_256, stored_key, b(auth_message)));
  EXPECT_EQ(base64_encode(proof), "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_EQ(base64_encode(scram_hmac(scram_mechanism::sha_256, server_key, b(auth_message))),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");

  const auto c = scram_credential_from_password(scram_mechanism::sha_256, "pencil", salt, 4096);
  EXPECT_EQ(c.stored_key, stored_key);
  auto back = parse_scram_credential(format_scram_credential(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->server_key, server_key);
  EXPECT_EQ(back->iterations, 4096);
  EXPECT_TRUE(format_scram_credential(c).starts_with("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key="));
  EXPECT_FALSE(parse_scram_credential("salt=x,iterations=4096"));
}

/// Plays the client of a SCRAM-SHA-512 exchange against the server; returns the server's last step.
sasl_step scram_login(sasl_server& server, const std::string& user, const std::string& password) {
  const std::string client_nonce = "fyko+d2lbbFgONRv9qkxdawL";
  const std::string first_bare = "n=" + user + ",r=" + client_nonce;
  auto s1 = server.evaluate(b("n,," + first_bare));
  if (s1.what != sasl_step::kind::challenge) return s1;
  const std::string server_first = text(s1.token);
  // r=<nonce>,s=<salt>,i=<n>
  const auto r = server_first.substr(2, server_first.find(",s=") - 2);
  const auto salt_b64 = server_first.substr(server_first.find(",s=") + 3, server_first.find(",i=") - server_first.find(",s=") - 3);
  const int iterations = std::stoi(server_first.substr(server_first.find(",i=") + 3));
  EXPECT_TRUE(r.starts_with(client_nonce));
  const auto salted = scram_salted_password(scram_mechanism::sha_512, password, *base64_decode(salt_b64), iterations);
  const auto client_key = scram_hmac(scram_mechanism::sha_512, salted, b("Client Key"));
  const auto stored_key = scram_hash(scram_mechanism::sha_512, client_key);
  const std::string without_proof = "c=biws,r=" + r;
  const std::string auth = first_bare + "," + server_first + "," + without_proof;
  const auto proof = xor_of(client_key, scram_hmac(scram_mechanism::sha_512, stored_key, b(auth)));
  return server.evaluate(b(without_proof + ",p=" + base64_encode(proof)));
}

TEST(sasl_servers, scram_accepts_the_password_and_tells_failures_apart_only_in_the_log) {
  const auto salt = random_bytes(16);
  const auto alice = scram_credential_from_password(scram_mechanism::sha_512, "alice-secret", salt, 4096);
  scram_lookup lookup = [&](const std::string& user, scram_mechanism m) -> std::optional<scram_credential> {
    if (user == "alice" && m == scram_mechanism::sha_512) return alice;
    return std::nullopt;
  };
  auto ok = make_scram_server(scram_mechanism::sha_512, lookup);
  auto done = scram_login(*ok, "alice", "alice-secret");
  ASSERT_EQ(done.what, sasl_step::kind::complete) << done.error_message;
  EXPECT_EQ(done.principal_name, "alice");
  EXPECT_TRUE(text(done.token).starts_with("v="));

  const std::string generic =
      "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512";
  auto wrong = make_scram_server(scram_mechanism::sha_512, lookup);
  auto w = scram_login(*wrong, "alice", "guess");
  EXPECT_EQ(w.what, sasl_step::kind::failed);
  EXPECT_EQ(w.error_message, generic);
  auto unknown = make_scram_server(scram_mechanism::sha_512, lookup);
  auto u = scram_login(*unknown, "mallory", "x");
  EXPECT_EQ(u.what, sasl_step::kind::failed);
  EXPECT_EQ(u.error_message, generic);  // the same text as a wrong password
  EXPECT_EQ(u.log_reason, "unknown user mallory");
  auto garbage = make_scram_server(scram_mechanism::sha_512, lookup);
  EXPECT_EQ(garbage->evaluate(b("hello")).error_message, generic);
}

TEST(sasl_servers, plain_checks_user_password_and_authzid) {
  auto plain = [] { return make_plain_server({{"alice", "alice-secret"}}); };
  auto ok = plain()->evaluate(b(std::string("\0alice\0alice-secret", 19)));
  EXPECT_EQ(ok.what, sasl_step::kind::complete);
  EXPECT_EQ(ok.principal_name, "alice");
  EXPECT_EQ(plain()->evaluate(b(std::string("\0alice\0nope", 11))).error_message,
            "Authentication failed: Invalid username or password");
  EXPECT_EQ(plain()->evaluate(b(std::string("bob\0alice\0alice-secret", 22))).error_message,
            "Authentication failed: Client requested an authorization id that is different from username");
  auto two = plain()->evaluate(b(std::string("alice\0x", 7)));
  EXPECT_EQ(two.what, sasl_step::kind::failed);
  EXPECT_EQ(two.log_reason, "Invalid SASL/PLAIN response: expected 3 tokens, got 2");
}

std::string b64url(const std::string& s) {
  auto t = base64_encode(b(s));
  for (char& c : t) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!t.empty() && t.back() == '=') t.pop_back();
  return t;
}

TEST(sasl_servers, oauthbearer_unsecured_tokens) {
  const int64_t now = 1'800'000'000'000;
  oauthbearer_unsecured_options o;
  o.required_scope = {"produce"};
  auto message = [](const std::string& claims) {
    const std::string jws = b64url(R"({"alg":"none"})") + "." + b64url(claims) + ".";
    return b("n,,\x01" "auth=Bearer " + jws + "\x01\x01");
  };
  auto good = make_oauthbearer_unsecured_server(o, [&] { return now; })
                  ->evaluate(message(R"({"sub":"carol","exp":1800000600,"scope":"produce consume"})"));
  ASSERT_EQ(good.what, sasl_step::kind::complete);
  EXPECT_EQ(good.principal_name, "carol");
  EXPECT_EQ(good.credential_expiry_ms, 1800000600000);

  auto server = make_oauthbearer_unsecured_server(o, [&] { return now; });
  auto challenge = server->evaluate(message(R"({"sub":"carol","exp":1800000600})"));
  ASSERT_EQ(challenge.what, sasl_step::kind::challenge);
  EXPECT_EQ(text(challenge.token), R"({"status":"insufficient_scope", "scope":"[produce]"})");
  auto end = server->evaluate(b("\x01"));
  EXPECT_EQ(end.what, sasl_step::kind::failed);
  EXPECT_EQ(end.error_message, R"({"status":"insufficient_scope", "scope":"[produce]"})");

  auto expired = make_oauthbearer_unsecured_server({}, [&] { return now; });
  EXPECT_EQ(text(expired->evaluate(message(R"({"sub":"carol","exp":1700000000})")).token), R"({"status":"invalid_token"})");
}

TEST(jaas, parses_kafka_entries) {
  auto e = parse_jaas_config(
      R"(org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a;b" user_bob=bob-secret;)");
  ASSERT_TRUE(e.ok()) << e.err().message;
  EXPECT_EQ(e->login_module, "org.apache.kafka.common.security.plain.PlainLoginModule");
  EXPECT_EQ(e->control_flag, "required");
  EXPECT_EQ(e->options.at("user_alice"), "a;b");
  EXPECT_EQ(e->options.at("user_bob"), "bob-secret");
  EXPECT_FALSE(parse_jaas_config("PlainLoginModule required user_alice=\"x\"").ok());  // no ';'
  EXPECT_FALSE(parse_jaas_config("PlainLoginModule sometimes;").ok());              // not a control flag
}

TEST(ssl_principal_mapping, rules_and_default) {
  auto m = ssl_principal_mapper::parse("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,DEFAULT");
  ASSERT_TRUE(m.ok()) << m.err().message;
  EXPECT_EQ(m->map("CN=Alice,OU=Eng,O=Sluice Test"), "alice@eng");
  EXPECT_EQ(m->map("CN=svc"), "CN=svc");  // DEFAULT: the whole name
  auto only = ssl_principal_mapper::parse("RULE:^CN=([a-z]+)$/$1/U");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->map("CN=bob"), "BOB");
  EXPECT_EQ(only->map("CN=Bob,O=x"), std::nullopt);
  EXPECT_FALSE(ssl_principal_mapper::parse("RULE:^(unclosed/$1/").ok());
}

TEST(acl_filter, matches_as_kafkas_filters) {
  acl_binding literal{resource_type::topic, "orders", pattern_type::literal, "User:alice", "*", acl_operation::read,
                      acl_permission::allow};
  acl_binding wildcard{resource_type::topic, "*", pattern_type::literal, "User:*", "*", acl_operation::describe,
                       acl_permission::allow};
  acl_binding prefixed{resource_type::topic, "ord", pattern_type::prefixed, "User:bob", "10.0.0.1", acl_operation::write,
                       acl_permission::deny};
  acl_filter any;
  EXPECT_TRUE(any.matches(literal) && any.matches(wildcard) && any.matches(prefixed));
  acl_filter match;
  match.name = "orders";
  match.pattern = pattern_type::match;  // what applies to the topic "orders"
  EXPECT_TRUE(match.matches(literal));
  EXPECT_TRUE(match.matches(wildcard));
  EXPECT_TRUE(match.matches(prefixed));
  acl_filter exact_name;
  exact_name.name = "orders";  // pattern ANY: the name itself
  EXPECT_TRUE(exact_name.matches(literal));
  EXPECT_FALSE(exact_name.matches(prefixed));
  acl_filter by_principal;
  by_principal.principal = "User:bob";
  by_principal.permission = acl_permission::deny;
  EXPECT_TRUE(by_principal.matches(prefixed));
  EXPECT_FALSE(by_principal.matches(literal));
  acl_filter group_only;
  group_only.type = resource_type::group;
  EXPECT_FALSE(group_only.matches(literal));

  EXPECT_EQ(invalid_binding_reason(literal), "");
  acl_binding cluster = literal;
  cluster.type = resource_type::cluster;
  EXPECT_EQ(invalid_binding_reason(cluster), "The only valid name for the CLUSTER resource is kafka-cluster");
  acl_binding no_colon = literal;
  no_colon.principal = "alice";
  EXPECT_NE(invalid_binding_reason(no_colon).find("no colon"), std::string::npos);
  acl_filter unknown;
  unknown.operation = acl_operation::unknown;
  EXPECT_EQ(invalid_filter_reason(unknown), "Filter contain UNKNOWN elements");
}

TEST(acl_node, zookeeper_json_round_trip) {
  std::vector<acl_binding> entries = {
      {resource_type::group, "g1", pattern_type::prefixed, "User:alice", "*", acl_operation::read, acl_permission::allow},
      {resource_type::group, "g1", pattern_type::prefixed, "User:*", "10.1.2.3", acl_operation::all, acl_permission::deny}};
  const auto key = node_key_of(entries[0]);
  EXPECT_EQ(key.pattern_type, "PREFIXED");
  EXPECT_EQ(key.resource_type, "Group");
  const auto data = encode_acl_node(entries);
  EXPECT_EQ(data, R"({"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},)"
                  R"({"principal":"User:*","permissionType":"Deny","operation":"All","host":"10.1.2.3"}]})");
  auto back = decode_acl_node(key, data);
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(*back, entries);
  EXPECT_FALSE(decode_acl_node(key, R"({"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Read","host":"*"}]})").ok());
}

/// A fresh embedded store per test (what a single node keeps ACLs and quotas in).
class store_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sluice-security-" + std::to_string(::getpid()) + "-" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto s = coordination::embedded_store::open(dir_);
    ASSERT_TRUE(s.ok()) << s.err().message;
    store_ = std::move(*s);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::unique_ptr<coordination::embedded_store> store_;
};

using authorizer_test = store_test;

TEST_F(authorizer_test, kafkas_rules) {
  authorizer_options o;
  o.super_users = parse_super_users(" User:admin ; User:ops");
  ASSERT_EQ(o.super_users.size(), 2u);
  authorizer a(*store_, o);
  ASSERT_TRUE(a.reload().ok());
  const auto topic = resource_type::topic;
  // No ACL at all and allow.everyone.if.no.acl.found=false: denied, except super users.
  EXPECT_FALSE(a.authorize("User:alice", "127.0.0.1", acl_operation::read, topic, "orders"));
  EXPECT_TRUE(a.authorize("User:ops", "127.0.0.1", acl_operation::alter, resource_type::cluster, "kafka-cluster"));
  ASSERT_TRUE(a.create({
      {topic, "orders", pattern_type::literal, "User:alice", "*", acl_operation::read, acl_permission::allow},
      {topic, "pay", pattern_type::prefixed, "User:*", "*", acl_operation::write, acl_permission::allow},
      {topic, "payments-secret", pattern_type::literal, "User:bob", "*", acl_operation::all, acl_permission::deny},
      {topic, "*", pattern_type::literal, "User:carol", "10.0.0.7", acl_operation::describe, acl_permission::allow},
      {resource_type::topic, "configs", pattern_type::literal, "User:alice", "*", acl_operation::alter_configs, acl_permission::allow},
  }).ok());
  EXPECT_TRUE(a.authorize("User:alice", "127.0.0.1", acl_operation::read, topic, "orders"));
  EXPECT_TRUE(a.authorize("User:alice", "127.0.0.1", acl_operation::describe, topic, "orders"));  // implied by Read
  EXPECT_FALSE(a.authorize("User:alice", "127.0.0.1", acl_operation::write, topic, "orders"));
  EXPECT_TRUE(a.authorize("User:bob", "127.0.0.1", acl_operation::write, topic, "payments"));       // prefix, User:*
  EXPECT_FALSE(a.authorize("User:bob", "127.0.0.1", acl_operation::write, topic, "payments-secret"));  // DENY wins
  EXPECT_TRUE(a.authorize("User:alice", "127.0.0.1", acl_operation::write, topic, "payments-secret"));
  EXPECT_FALSE(a.authorize("User:bob", "127.0.0.1", acl_operation::write, topic, "orders"));
  EXPECT_TRUE(a.authorize("User:carol", "10.0.0.7", acl_operation::describe, topic, "anything"));   // wildcard name
  EXPECT_FALSE(a.authorize("User:carol", "10.0.0.8", acl_operation::describe, topic, "anything"));  // other host
  EXPECT_TRUE(a.authorize("User:alice", "127.0.0.1", acl_operation::describe_configs, topic, "configs"));
  EXPECT_FALSE(a.authorize("User:alice", "127.0.0.1", acl_operation::read, resource_type::group, "orders"));
  EXPECT_TRUE(a.authorize_any("User:bob", "127.0.0.1", acl_operation::write, topic));
  EXPECT_FALSE(a.authorize_any("User:dave", "127.0.0.1", acl_operation::read, resource_type::group));
  // KIP-430 bit field: Read (3) and Describe (8) on orders.
  EXPECT_EQ(a.authorized_operations("User:alice", "127.0.0.1", topic, "orders"), (1 << 3) | (1 << 8));

  acl_filter mine;
  mine.principal = "User:alice";
  EXPECT_EQ(a.describe(mine).size(), 2u);
  auto removed = a.remove(mine);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 2u);
  EXPECT_FALSE(a.authorize("User:alice", "127.0.0.1", acl_operation::read, topic, "orders"));
  EXPECT_EQ(a.describe({}).size(), 3u);
  // What another broker reads from the store (ZooKeeper in a cluster) is the same.
  authorizer other(*store_, o);
  ASSERT_TRUE(other.reload().ok());
  EXPECT_EQ(other.describe({}).size(), 3u);
  EXPECT_TRUE(other.authorize("User:bob", "127.0.0.1", acl_operation::write, topic, "payments"));
}

TEST_F(authorizer_test, allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls) {
  authorizer_options o;
  o.allow_everyone_if_no_acl_found = true;
  authorizer a(*store_, o);
  ASSERT_TRUE(a.reload().ok());
  EXPECT_TRUE(a.authorize("User:anyone", "127.0.0.1", acl_operation::write, resource_type::topic, "free"));
  ASSERT_TRUE(a.create({{resource_type::topic, "guarded", pattern_type::literal, "User:alice", "*",
                         acl_operation::write, acl_permission::allow}}).ok());
  EXPECT_FALSE(a.authorize("User:anyone", "127.0.0.1", acl_operation::write, resource_type::topic, "guarded"));
  EXPECT_TRUE(a.authorize("User:anyone", "127.0.0.1", acl_operation::write, resource_type::topic, "free"));
}

}  // namespace
}  // namespace sluice::broker::security

namespace sluice::broker {
namespace {

TEST(sampled_rate, kafkas_windowed_rate) {
  sampled_rate r(11, 1000);
  r.record(1000, 0);
  // A young window still counts 10 full samples: 1000 bytes over 10 s.
  EXPECT_DOUBLE_EQ(r.rate(0), 100.0);
  for (int s = 1; s <= 20; ++s) r.record(1000, s * 1000);
  // Steady 1000 B/s: the live samples (the last 11 s) give 1000 B/s give or take one sample.
  EXPECT_NEAR(r.rate(20000), 1100.0, 1.0);  // 11 samples of 1000 over 10 s elapsed
  EXPECT_NEAR(r.rate(20999), 11000.0 * 1000 / 10999, 1.0);
}

using quota_test = security::store_test;

TEST_F(quota_test, user_then_default_user_then_client_id) {
  quota_manager q(*store_, 11, 1);
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.record(quota_manager::kind::produce, "alice", "app", 10'000'000, 0), 0);  // no quota
  ASSERT_TRUE(q.set_entity_configs("clients", "app", {{"producer_byte_rate", "1000"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users", default_quota_entity, {{"consumer_byte_rate", "2000"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users", "alice", {{"producer_byte_rate", "1048576"}, {"SCRAM-SHA-512", "x"}}).ok());
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.quota_of(quota_manager::kind::produce, "alice", "app"), 1048576.0);
  EXPECT_EQ(q.quota_of(quota_manager::kind::produce, "bob", "app"), 1000.0);
  EXPECT_EQ(q.quota_of(quota_manager::kind::fetch, "bob", "app"), 2000.0);
  EXPECT_EQ(q.quota_of(quota_manager::kind::produce, "bob", "other"), std::nullopt);
  // 1 MiB/s for alice: 5 MiB at once is 5 MiB over a 10 s window, under the quota; then 15 MiB more is
  // 2 MiB/s, one second over: the throttle is (rate - quota) / quota * window = 10 s, capped at 11 s.
  EXPECT_EQ(q.record(quota_manager::kind::produce, "alice", "app", 5 * 1048576, 1000), 0);
  EXPECT_EQ(q.record(quota_manager::kind::produce, "alice", "app", 15 * 1048576, 1000), 10000);
  EXPECT_EQ(q.record(quota_manager::kind::produce, "alice", "app", 100 * 1048576, 1000), 11000);
}

// KIP-73: the replication throttle rates are this broker's dynamic configs (/config/brokers/<id>) over the
// cluster-wide default (/config/brokers/<default>); the measured rate is compared with them.
TEST_F(quota_test, replication_throttle_rates_per_broker_over_the_default) {
  quota_manager q(*store_, 11, 1);
  q.set_broker_id(3);
  const auto leader = quota_manager::replication_side::leader;
  const auto follower = quota_manager::replication_side::follower;
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.replication_limit(leader), std::nullopt);
  q.record_replication(leader, 1'000'000'000, 0);
  EXPECT_FALSE(q.replication_exceeded(leader, 0)) << "no limit, never exceeded";
  ASSERT_TRUE(q.set_entity_configs("brokers", default_quota_entity, {{"leader.replication.throttled.rate", "1000"},
                                                                    {"follower.replication.throttled.rate", "500"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("brokers", "3", {{"follower.replication.throttled.rate", "20000"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("brokers", "4", {{"leader.replication.throttled.rate", "1"}}).ok());
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.replication_limit(leader), 1000.0) << "the default: broker 4's own rate is not ours";
  EXPECT_EQ(q.replication_limit(follower), 20000.0) << "our own rate wins over the default";
  EXPECT_TRUE(q.replication_exceeded(leader, 0)) << "1e9 bytes over a 10 s window is far above 1000 B/s";
  // Follower: 100 kB within the window is 10 kB/s, under 20000; another 200 kB makes 30 kB/s, over it.
  q.record_replication(follower, 100'000, 0);
  EXPECT_FALSE(q.replication_exceeded(follower, 0));
  q.record_replication(follower, 200'000, 0);
  EXPECT_TRUE(q.replication_exceeded(follower, 0));
  // Eleven seconds later the samples have aged out.
  EXPECT_FALSE(q.replication_exceeded(follower, 12'000));
}

TEST_F(quota_test, user_and_client_id_levels_in_kafka_order) {
  quota_manager q(*store_, 11, 1);
  const auto produce = quota_manager::kind::produce;
  ASSERT_TRUE(q.set_entity_configs("clients", "app", {{"producer_byte_rate", "8"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users", default_quota_entity, {{"producer_byte_rate", "7"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users/<default>/clients", default_quota_entity, {{"producer_byte_rate", "6"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users/<default>/clients", "app", {{"producer_byte_rate", "5"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users", "alice", {{"producer_byte_rate", "4"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users/alice/clients", default_quota_entity, {{"producer_byte_rate", "3"}}).ok());
  ASSERT_TRUE(q.set_entity_configs("users/alice/clients", "app", {{"producer_byte_rate", "2"}}).ok());
  // a user with only per-client-id quotas (no configs of its own) is found too
  ASSERT_TRUE(q.set_entity_configs("users/carol/clients", "tool", {{"consumer_byte_rate", "9"}}).ok());
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.quota_of(produce, "alice", "app"), 2.0);    // /config/users/alice/clients/app
  EXPECT_EQ(q.quota_of(produce, "alice", "other"), 3.0);  // /config/users/alice/clients/<default>
  EXPECT_EQ(q.quota_of(produce, "bob", "app"), 5.0);      // /config/users/<default>/clients/app
  EXPECT_EQ(q.quota_of(produce, "bob", "other"), 6.0);    // /config/users/<default>/clients/<default>
  EXPECT_EQ(q.quota_of(quota_manager::kind::fetch, "carol", "tool"), 9.0);
  EXPECT_EQ(q.quota_of(quota_manager::kind::fetch, "carol", "other"), std::nullopt);
  // each key on its own: alice's user level beats the user default client level only for keys it sets
  ASSERT_TRUE(q.set_entity_configs("users/alice/clients", default_quota_entity, {}).ok());
  ASSERT_TRUE(q.set_entity_configs("users/alice/clients", "app", {}).ok());
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.quota_of(produce, "alice", "other"), 4.0);  // /config/users/alice
  auto names = store_->entity_names("users");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"<default>", "alice", "carol"}));
}

TEST_F(quota_test, request_percentage_counts_time_in_percent_of_one_thread) {
  quota_manager q(*store_, 2, 1);
  ASSERT_TRUE(q.set_entity_configs("clients", "app", {{"request_percentage", "10"}}).ok());
  ASSERT_TRUE(q.reload().ok());
  // 10% of a thread is 100 ms a second; the young window counts 1 s. 50 ms: 5%, within.
  EXPECT_EQ(q.record_request_time("u", "app", 50'000, 1000), 0);
  // 150 ms more: 20% over 1 s, twice the quota: throttle (20 - 10) / 10 * 1000 ms.
  EXPECT_EQ(q.record_request_time("u", "app", 150'000, 1000), 1000);
  EXPECT_EQ(q.record_request_time("u", "other", 150'000, 1000), 0);  // no quota for that client id
}

TEST_F(quota_test, connection_creation_rates) {
  quota_manager q(*store_, 2, 1);
  q.set_connection_rate_limits(2, {{"EXTERNAL", 1}}, "INTERNAL");
  // broker-wide 2/s: the third connection in the first second is over: wait (3 - 2) / 2 * 1000 ms
  EXPECT_EQ(q.record_accept("CLIENTS", 1000), 0);
  EXPECT_EQ(q.record_accept("CLIENTS", 1000), 0);
  EXPECT_EQ(q.record_accept("CLIENTS", 1000), 500);
  // the inter-broker listener is not limited by the broker-wide rate
  EXPECT_EQ(q.record_accept("INTERNAL", 1000), 0);
  EXPECT_EQ(q.record_accept("INTERNAL", 1000), 0);
  EXPECT_EQ(q.record_accept("INTERNAL", 1000), 0);
  // per address: a refused connection is not counted, so the rate stays at the quota
  ASSERT_TRUE(q.set_entity_configs("ips", "127.0.0.2", {{"connection_creation_rate", "1"}}).ok());
  ASSERT_TRUE(q.reload().ok());
  EXPECT_EQ(q.record_ip_connection("127.0.0.2", 5000), 0);
  EXPECT_EQ(q.record_ip_connection("127.0.0.2", 5000), 1000);
  EXPECT_EQ(q.record_ip_connection("127.0.0.2", 5000), 1000);
  EXPECT_EQ(q.record_ip_connection("127.0.0.3", 5000), 0);  // no quota, no default
}

}  // namespace
}  // namespace sluice::broker
