// Fault rules (broker/fault_injection.h), the error responses they produce (handlers/fault_response.h), the
// Prometheus text of base/metrics.h and the HTTP routes' answers (broker/http/admin_api.h, without a socket).
#include <gtest/gtest.h>

#include "base/metrics.h"
#include "broker/fault_injection.h"
#include "broker/handlers/fault_response.h"
#include "protocol/messages/all.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

fault_subject subject(int16_t key, std::string_view client = "c", std::string_view topic = "") {
  return fault_subject{key, client, "127.0.0.1:5000", [topic](std::string_view t) { return t == topic; }};
}

TEST(FaultInjector, DisabledNeverMatches) {
  fault_injector f(false, 1);
  fault_rule r;
  r.api_key = 0;
  r.remaining = 5;
  f.add(r);
  EXPECT_FALSE(f.any_for(0));
  EXPECT_FALSE(f.match(subject(0)).has_value());
}

TEST(FaultInjector, CountIsUsedUpThenTheRuleGoes) {
  fault_injector f(true, 1);
  fault_rule r;
  r.api_key = 0;
  r.remaining = 2;
  const auto id = f.add(r);
  EXPECT_EQ(id, 1);
  EXPECT_FALSE(f.match(subject(1)).has_value());  // another API
  auto first = f.match(subject(0));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->applied, 1u);
  EXPECT_TRUE(f.match(subject(0)).has_value());
  EXPECT_FALSE(f.match(subject(0)).has_value());
  EXPECT_TRUE(f.list().empty());
  EXPECT_FALSE(f.remove(id));
}

TEST(FaultInjector, FiltersByTopicAndClient) {
  fault_injector f(true, 1);
  fault_rule r;
  r.api_key = 0;
  r.remaining = 10;
  r.topic = "orders";
  r.client_id = "app";
  f.add(r);
  EXPECT_FALSE(f.match(subject(0, "app", "payments")).has_value());
  EXPECT_FALSE(f.match(subject(0, "other", "orders")).has_value());
  EXPECT_TRUE(f.match(subject(0, "app", "orders")).has_value());
}

TEST(FaultInjector, RateIsSeededAndNearItsFraction) {
  auto hits = [](uint64_t seed) {
    fault_injector f(true, seed);
    fault_rule r;
    r.api_key = 0;
    r.rate = 0.25;
    f.add(r);
    int n = 0;
    for (int i = 0; i < 4000; ++i) n += f.match(subject(0)).has_value() ? 1 : 0;
    return n;
  };
  const int a = hits(7);
  EXPECT_EQ(a, hits(7));  // the same seed draws the same requests
  EXPECT_GT(a, 850);
  EXPECT_LT(a, 1150);
}

TEST(FaultResponse, ProduceErrorGoesIntoEveryPartition) {
  protocol::produce_request q;
  q.topic_data.resize(1);
  q.topic_data[0].name = "t";
  q.topic_data[0].partition_data.resize(2);
  q.topic_data[0].partition_data[1].index = 1;
  protocol::produce_response out;
  ASSERT_TRUE(handlers::fault_error(q, 9, error_code::not_leader_or_follower, out));
  ASSERT_EQ(out.responses.size(), 1u);
  ASSERT_EQ(out.responses[0].partition_responses.size(), 2u);
  EXPECT_EQ(out.responses[0].partition_responses[1].index, 1);
  EXPECT_EQ(out.responses[0].partition_responses[1].error_code, error_code::not_leader_or_follower);
  EXPECT_TRUE(handlers::request_mentions_topic(q, "t", std::nullopt));
  EXPECT_FALSE(handlers::request_mentions_topic(q, "u", std::nullopt));
}

TEST(FaultResponse, SupportedApis) {
  EXPECT_TRUE(handlers::fault_error_supported(0));   // Produce: per partition
  EXPECT_TRUE(handlers::fault_error_supported(10));  // FindCoordinator: per coordinator / top level
  EXPECT_TRUE(handlers::fault_error_supported(3));   // Metadata: per topic
}

TEST(Metrics, PrometheusTextGroupsFamiliesAndEscapes) {
  metrics::registry r;
  r.counter("a_requests_total", "Requests", {{"api", "Produce"}}).add(3);
  r.counter("a_requests_total", "Requests", {{"api", "Fe\"tch\n"}}).add();
  const double bounds[] = {1, 10};
  auto& h = r.histogram("b_time_ms", "Time", {}, bounds);
  h.observe(0.5);
  h.observe(5);
  h.observe(50);
  r.add_collector([](metrics::sample_sink& s) { s.gauge("c_level", "Level", {{"x", "1"}}, 2.5); });
  const std::string text = r.prometheus_text();
  EXPECT_NE(text.find("# TYPE a_requests_total counter\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("# TYPE a_requests_total counter"), text.rfind("# TYPE a_requests_total counter"));
  EXPECT_NE(text.find("a_requests_total{api=\"Produce\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("a_requests_total{api=\"Fe\\\"tch\\n\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b_time_ms_bucket{le=\"1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b_time_ms_bucket{le=\"10\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b_time_ms_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b_time_ms_count 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b_time_ms_sum 55.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("c_level{x=\"1\"} 2.5\n"), std::string::npos) << text;
  r.remove("api", "Produce");
  EXPECT_EQ(r.prometheus_text().find("api=\"Produce\""), std::string::npos);
}

}  // namespace
}  // namespace sluice::broker
