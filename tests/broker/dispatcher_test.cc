// The dispatcher, table-driven (issue #13): every handler of the table, at every served version, answers a
// request sent through `dispatcher::dispatch` with the request's correlation id and, where the response schema
// has ThrottleTimeMs, the throttle time the quota hook chose. Also: the session and hook checks that close a
// connection, and the ApiVersions fallback (KIP-511). A real single-node set of services on a temporary dir.
#include "broker/dispatcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <map>

#include "broker/handler_table.h"
#include "protocol/messages/all.h"
#include "tests/broker/single_node.h"

namespace sluice::broker {
namespace {

namespace asio = boost::asio;
using protocol::api_key;

/// Records what the dispatcher asked and answers with a fixed throttle time; refuses one API key if told to.
struct recording_hooks final : request_hooks {
  int32_t throttle = 7;
  int16_t refuse_key = -1;
  int admitted = 0;
  int completed_calls = 0;
  std::optional<std::string> admit(const session&, const protocol::request_header& h) override {
    if (h.api_key == refuse_key) return "refused by the test";
    ++admitted;
    return std::nullopt;
  }
  int32_t throttle_time_ms(const session&, const protocol::request_header&) override { return throttle; }
  void completed(const session&, const protocol::request_header&, int64_t start_ms, int64_t end_ms,
                 bool) override {
    EXPECT_LE(start_ms, end_ms);
    ++completed_calls;
  }
};

/// The services broker::start builds on a single node, on a temporary log dir, driven by the test's io_context.
class DispatcherTest : public ::testing::Test {
 public:
  void SetUp() override {
    node_.open("sluice-dispatcher-test",
               {{"offsets.topic.num.partitions", "2"}, {"advertised.listeners", "PLAINTEXT://127.0.0.1:9092"}}, clock_,
               io_);
    ASSERT_FALSE(HasFatalFailure());
    dispatcher_ = std::make_unique<dispatcher>(*node_.services, &hooks_);
  }

  /// Dispatches one encoded request (with its size prefix) on a strand of the test's io_context; bounded wait.
  dispatcher::outcome dispatch(const protocol::encoded_frame& request) {
    std::span<const uint8_t> body(request.bytes.data() + 4, request.bytes.size() - 4);
    auto strand = asio::make_strand(io_);
    auto done = asio::co_spawn(strand, dispatcher_->dispatch(session_, body, strand), asio::use_future);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(5));
    }
    if (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ADD_FAILURE() << "no outcome within 20 s";
      return {};
    }
    return done.get();
  }

  manual_clock clock_;
  asio::io_context io_;
  testing::single_node node_;
  recording_hooks hooks_;
  std::unique_ptr<dispatcher> dispatcher_;
  session session_;
};

/// The response bytes after the size prefix (file regions read back, so a Fetch answer is whole).
std::vector<uint8_t> flatten(const protocol::encoded_frame& f) {
  std::vector<uint8_t> out;
  size_t at = 0;
  for (const auto& [pos, region] : f.file_regions) {
    out.insert(out.end(), f.bytes.begin() + static_cast<ptrdiff_t>(at), f.bytes.begin() + static_cast<ptrdiff_t>(pos));
    std::vector<uint8_t> chunk(static_cast<size_t>(region.size));
    EXPECT_EQ(::pread(region.file->fd(), chunk.data(), chunk.size(), region.position), region.size);
    out.insert(out.end(), chunk.begin(), chunk.end());
    at = pos;
  }
  out.insert(out.end(), f.bytes.begin() + static_cast<ptrdiff_t>(at), f.bytes.end());
  return std::vector<uint8_t>(out.begin() + 4, out.end());
}

/// Whether Resp has ThrottleTimeMs at `version`, read from the schema itself: a value survives an encode and a
/// decode only in the versions that carry the field.
template <typename Resp>
bool schema_has_throttle(int16_t version) {
  if constexpr (requires(Resp r) { r.throttle_time_ms; }) {
    Resp probe;
    probe.throttle_time_ms = 12345;
    protocol::writer w;
    probe.encode(w, version);
    auto f = w.finish();
    protocol::reader r(std::span<const uint8_t>(f.bytes.data(), f.bytes.size()));
    Resp back;
    back.decode(r, version);
    return r.ok() && back.throttle_time_ms == 12345;
  } else {
    return false;
  }
}

/// One API of the table: sends a default request (adjusted by `prepare`) at every served version.
struct probe {
  std::function<void(DispatcherTest&, const handler_entry&, int& throttled_answers)> run;
};

template <typename Req, typename Resp>
probe make_probe(std::function<void(Req&, int16_t)> prepare = {}) {
  return probe{[prepare](DispatcherTest& t, const handler_entry& e, int& throttled_answers) {
    for (int16_t v = e.min_version; v <= e.max_version; ++v) {
      SCOPED_TRACE(std::string(protocol::api_name(static_cast<int16_t>(e.key))) + " v" + std::to_string(v));
      Req req;
      if (prepare) prepare(req, v);
      const int32_t correlation_id = 1000 * static_cast<int32_t>(e.key) + v;
      auto frame = protocol::encode_request(correlation_id, v, std::string("dispatcher-test"), req);
      auto out = t.dispatch(frame);
      ASSERT_EQ(out.what, dispatcher::outcome::kind::respond);
      auto bytes = flatten(out.frame);
      protocol::reader r(std::span<const uint8_t>(bytes.data(), bytes.size()));
      int32_t got_id = -1;
      ASSERT_TRUE(protocol::decode_response_header(
          r, protocol::response_header_version(static_cast<int16_t>(e.key), v), got_id));
      EXPECT_EQ(got_id, correlation_id);
      Resp resp;
      resp.decode(r, v);
      ASSERT_TRUE(r.ok()) << r.error_field() << ": " << r.error_message();
      EXPECT_EQ(r.remaining(), 0u);
      if constexpr (requires { resp.throttle_time_ms; }) {
        if (schema_has_throttle<Resp>(v)) {
          EXPECT_EQ(resp.throttle_time_ms, 7);
          ++throttled_answers;
        }
      }
    }
  }};
}

/// Every served API with its request and response types. A handler added to the table without a line here
/// fails `EveryHandlerAnswersWithTheCorrelationIdAndThrottleTime`.
std::map<api_key, probe> probes() {
  using namespace protocol;
  std::map<api_key, probe> p;
  p[api_key::produce] = make_probe<produce_request, produce_response>(
      [](produce_request& r, int16_t) { r.acks = 1; });  // acks=0 is answered by silence
  p[api_key::fetch] = make_probe<fetch_request, fetch_response>();
  p[api_key::list_offsets] = make_probe<list_offsets_request, list_offsets_response>();
  p[api_key::metadata] = make_probe<metadata_request, metadata_response>();
  p[api_key::api_versions] = make_probe<api_versions_request, api_versions_response>(
      [](api_versions_request& r, int16_t) {
        r.client_software_name = "dispatcher-test";
        r.client_software_version = "1.0";
      });
  p[api_key::create_topics] = make_probe<create_topics_request, create_topics_response>();
  p[api_key::delete_topics] = make_probe<delete_topics_request, delete_topics_response>();
  p[api_key::offset_commit] = make_probe<offset_commit_request, offset_commit_response>();
  p[api_key::offset_fetch] = make_probe<offset_fetch_request, offset_fetch_response>();
  p[api_key::txn_offset_commit] = make_probe<txn_offset_commit_request, txn_offset_commit_response>();
  p[api_key::find_coordinator] = make_probe<find_coordinator_request, find_coordinator_response>();
  p[api_key::join_group] = make_probe<join_group_request, join_group_response>();
  p[api_key::heartbeat] = make_probe<heartbeat_request, heartbeat_response>();
  p[api_key::leave_group] = make_probe<leave_group_request, leave_group_response>();
  p[api_key::sync_group] = make_probe<sync_group_request, sync_group_response>();
  p[api_key::describe_groups] = make_probe<describe_groups_request, describe_groups_response>();
  p[api_key::list_groups] = make_probe<list_groups_request, list_groups_response>();
  p[api_key::delete_groups] = make_probe<delete_groups_request, delete_groups_response>();
  p[api_key::offset_delete] = make_probe<offset_delete_request, offset_delete_response>();
  p[api_key::init_producer_id] = make_probe<init_producer_id_request, init_producer_id_response>();
  p[api_key::delete_records] = make_probe<delete_records_request, delete_records_response>();
  p[api_key::offset_for_leader_epoch] = make_probe<offset_for_leader_epoch_request, offset_for_leader_epoch_response>();
  p[api_key::describe_configs] = make_probe<describe_configs_request, describe_configs_response>();
  p[api_key::alter_configs] = make_probe<alter_configs_request, alter_configs_response>();
  p[api_key::describe_log_dirs] = make_probe<describe_log_dirs_request, describe_log_dirs_response>();
  p[api_key::incremental_alter_configs] =
      make_probe<incremental_alter_configs_request, incremental_alter_configs_response>();
  p[api_key::create_partitions] = make_probe<create_partitions_request, create_partitions_response>();
  p[api_key::describe_cluster] = make_probe<describe_cluster_request, describe_cluster_response>();
  p[api_key::add_partitions_to_txn] = make_probe<add_partitions_to_txn_request, add_partitions_to_txn_response>();
  p[api_key::add_offsets_to_txn] = make_probe<add_offsets_to_txn_request, add_offsets_to_txn_response>();
  p[api_key::end_txn] = make_probe<end_txn_request, end_txn_response>();
  p[api_key::write_txn_markers] = make_probe<write_txn_markers_request, write_txn_markers_response>();
  p[api_key::describe_transactions] = make_probe<describe_transactions_request, describe_transactions_response>();
  p[api_key::list_transactions] = make_probe<list_transactions_request, list_transactions_response>();
  p[api_key::describe_producers] = make_probe<describe_producers_request, describe_producers_response>();
  p[api_key::describe_topic_partitions] =
      make_probe<describe_topic_partitions_request, describe_topic_partitions_response>();
  p[api_key::list_config_resources] = make_probe<list_config_resources_request, list_config_resources_response>();
  p[api_key::update_features] = make_probe<update_features_request, update_features_response>();
  p[api_key::alter_replica_log_dirs] = make_probe<alter_replica_log_dirs_request, alter_replica_log_dirs_response>();
  p[api_key::elect_leaders] = make_probe<elect_leaders_request, elect_leaders_response>();
  p[api_key::alter_partition_reassignments] =
      make_probe<alter_partition_reassignments_request, alter_partition_reassignments_response>();
  p[api_key::list_partition_reassignments] =
      make_probe<list_partition_reassignments_request, list_partition_reassignments_response>();
  p[api_key::consumer_group_heartbeat] =
      make_probe<consumer_group_heartbeat_request, consumer_group_heartbeat_response>();
  p[api_key::consumer_group_describe] = make_probe<consumer_group_describe_request, consumer_group_describe_response>();
  // On this PLAINTEXT session both SASL APIs answer ILLEGAL_SASL_STATE, as Kafka's KafkaApis does.
  p[api_key::sasl_handshake] = make_probe<sasl_handshake_request, sasl_handshake_response>();
  p[api_key::sasl_authenticate] = make_probe<sasl_authenticate_request, sasl_authenticate_response>();
  p[api_key::describe_user_scram_credentials] =
      make_probe<describe_user_scram_credentials_request, describe_user_scram_credentials_response>();
  p[api_key::alter_user_scram_credentials] =
      make_probe<alter_user_scram_credentials_request, alter_user_scram_credentials_response>();
  p[api_key::describe_acls] = make_probe<describe_acls_request, describe_acls_response>(
      [](describe_acls_request& r, int16_t) {  // ANY everywhere (UNKNOWN, the zero default, closes the connection)
        r.resource_type_filter = r.pattern_type_filter = r.operation = r.permission_type = 1;
      });
  p[api_key::create_acls] = make_probe<create_acls_request, create_acls_response>();
  p[api_key::delete_acls] = make_probe<delete_acls_request, delete_acls_response>();
  p[api_key::describe_client_quotas] = make_probe<describe_client_quotas_request, describe_client_quotas_response>();
  p[api_key::alter_client_quotas] = make_probe<alter_client_quotas_request, alter_client_quotas_response>();
  return p;
}

TEST_F(DispatcherTest, EveryHandlerAnswersWithTheCorrelationIdAndThrottleTime) {
  auto all = probes();
  int versions = 0;
  int throttled = 0;
  for (const handler_entry& e : handler_table()) {
    auto it = all.find(e.key);
    ASSERT_NE(it, all.end()) << protocol::api_name(static_cast<int16_t>(e.key)) << " has no probe in this test";
    it->second.run(*this, e, throttled);
    versions += e.max_version - e.min_version + 1;
  }
  EXPECT_EQ(all.size(), handler_table().size());
  // Every request went through the hooks once; most responses have a throttle time (ApiVersions v1+,
  // Metadata v3+, ...), and each of those carried the hook's 7 ms.
  EXPECT_EQ(hooks_.admitted, versions);
  EXPECT_EQ(hooks_.completed_calls, versions);
  EXPECT_GT(throttled, versions / 2);
  EXPECT_EQ(session_.client_id, "dispatcher-test");
  EXPECT_EQ(session_.client_software_name, "dispatcher-test");
  EXPECT_EQ(session_.client_software_version, "1.0");
}

TEST_F(DispatcherTest, ApiVersionsOfAnUnknownVersionAnswersV0WithItsOwnRange) {
  protocol::api_versions_request req;
  auto out = dispatch(protocol::encode_request(42, int16_t{99}, std::string("t"), req));
  ASSERT_EQ(out.what, dispatcher::outcome::kind::respond);
  auto bytes = flatten(out.frame);
  protocol::reader r(std::span<const uint8_t>(bytes.data(), bytes.size()));
  int32_t id = -1;
  ASSERT_TRUE(protocol::decode_response_header(r, 0, id));
  EXPECT_EQ(id, 42);
  protocol::api_versions_response resp;
  resp.decode(r, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(resp.error_code, protocol::error_code::unsupported_version);
  // Kafka 4.4 lists ApiVersions only (ApiVersionsRequest.getErrorResponse).
  ASSERT_EQ(resp.api_keys.size(), 1u);
  EXPECT_EQ(resp.api_keys[0].api_key, 18);
  EXPECT_EQ(resp.api_keys[0].min_version, 0);
  EXPECT_EQ(resp.api_keys[0].max_version, find_handler(int16_t{18})->max_version);
}

TEST_F(DispatcherTest, UnsupportedVersionUnknownKeyAndMalformedBodyClose) {
  protocol::metadata_request m;
  EXPECT_EQ(dispatch(protocol::encode_request(1, int16_t{99}, std::string("t"), m)).what,
            dispatcher::outcome::kind::close);
  protocol::request_header h{12345, 0, 2, std::string("t")};
  protocol::writer w;
  protocol::detail::begin_frame(w, protocol::request_header_size(h));
  protocol::encode_request_header(w, h);
  EXPECT_EQ(dispatch(w.finish()).what, dispatcher::outcome::kind::close);
  // A Heartbeat v0 cut after its header: the body's GroupId is missing.
  protocol::heartbeat_request hb;
  auto frame = protocol::encode_request(3, int16_t{0}, std::string("t"), hb);
  frame.bytes.resize(frame.bytes.size() - 4);
  EXPECT_EQ(dispatch(frame).what, dispatcher::outcome::kind::close);
  EXPECT_EQ(hooks_.completed_calls, 1);  // only the heartbeat reached its handler (and failed to decode)
}

TEST_F(DispatcherTest, TheSessionAndTheHooksAreConsultedBeforeTheHandler) {
  protocol::metadata_request m;
  // A SASL listener's client before authentication: Metadata closes, ApiVersions is answered (KIP-43).
  session_.sasl = sasl_state::handshake_expected;
  EXPECT_EQ(dispatch(protocol::encode_request(1, int16_t{12}, std::string("t"), m)).what,
            dispatcher::outcome::kind::close);
  protocol::api_versions_request av;
  EXPECT_EQ(dispatch(protocol::encode_request(2, int16_t{0}, std::string("t"), av)).what,
            dispatcher::outcome::kind::respond);
  session_.sasl = sasl_state::authenticated;
  EXPECT_EQ(dispatch(protocol::encode_request(3, int16_t{12}, std::string("t"), m)).what,
            dispatcher::outcome::kind::respond);
  // The admission hook refuses Metadata: closed before the handler runs.
  hooks_.refuse_key = static_cast<int16_t>(api_key::metadata);
  const int before = hooks_.completed_calls;
  EXPECT_EQ(dispatch(protocol::encode_request(4, int16_t{12}, std::string("t"), m)).what,
            dispatcher::outcome::kind::close);
  EXPECT_EQ(hooks_.completed_calls, before);
}

TEST_F(DispatcherTest, ProduceWithAcksZeroSendsNoResponse) {
  protocol::produce_request p;
  p.acks = 0;
  EXPECT_EQ(dispatch(protocol::encode_request(5, int16_t{9}, std::string("t"), p)).what,
            dispatcher::outcome::kind::no_response);
}

}  // namespace
}  // namespace sluice::broker
