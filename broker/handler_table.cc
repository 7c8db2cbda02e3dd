#include "broker/handler_table.h"

#include <cstdlib>
#include <vector>

#include "base/logging.h"
#include "broker/fault_injection.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/fault_response.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"
#include "protocol/api_traits.h"

namespace sluice::broker {
namespace {

template <typename T>
struct unwrap_optional { using type = T; };
template <typename T>
struct unwrap_optional<std::optional<T>> { using type = T; };

/// Decodes Req at the header's version, runs `Fn`, encodes its response. A decode failure is reported as
/// malformed (the connection logs the reader's error and closes).
/// The dispatcher's throttle time into a typed response whose schema has ThrottleTimeMs (it is encoded only in
/// the versions that have it).
template <typename Resp>
void fill_throttle(Resp& response, int32_t throttle_time_ms) {
  if constexpr (requires { response.throttle_time_ms; }) response.throttle_time_ms = throttle_time_ms;
}

/// A fault rule of the HTTP admin side (broker/fault_injection.h) that applies to this request, if any.
template <typename Req>
std::optional<fault_rule> matching_fault(broker_services& svc, const request_context& rc, const Req& request) {
  const int16_t key = static_cast<int16_t>(Req::key);
  if (!svc.faults.any_for(key)) return std::nullopt;
  fault_subject subject{key, rc.session.client_id, rc.session.peer,
                        [&](std::string_view topic) {
                          std::optional<protocol::uuid> id;
                          if (auto t = svc.topics.find(topic)) id = handlers::to_wire(t->id);
                          return handlers::request_mentions_topic(request, topic, id);
                        }};
  return svc.faults.match(subject);
}

template <typename Req, auto Fn>
boost::asio::awaitable<handler_outcome> adapt(broker_services& svc, request_context& rc, protocol::reader& r) {
  Req request;
  request.decode(r, rc.header.api_version);
  if (!r.ok()) co_return handler_outcome{handler_outcome::kind::malformed, {}};
  using response_t = typename unwrap_optional<typename decltype(Fn(svc, rc, request))::value_type>::type;
  if (auto fault = matching_fault(svc, rc, request)) {
    log::info("fault {}: {} {} v{} (correlation id {}) from {}", fault->id, fault_action_name(fault->action),
              protocol::api_name(rc.header.api_key), rc.header.api_version, rc.header.correlation_id, rc.session.peer);
    switch (fault->action) {
      case fault_action::error: {
        response_t response;
        if (handlers::fault_error(request, rc.header.api_version, fault->error, response)) {
          fill_throttle(response, rc.throttle_time_ms);
          co_return handler_outcome{handler_outcome::kind::respond,
                                    protocol::encode_response(rc.header.correlation_id, rc.header.api_version, response)};
        }
        break;  // not answerable with an error (refused when the rule was added): handled as usual
      }
      case fault_action::delay: {
        auto waiter = std::make_shared<purgatory_waiter>(rc.executor);
        parked_time parked(rc, svc.clock);  // not counted as request time (request_percentage)
        auto wait = waiter->wait(wait_deadline::after(svc.clock, fault->delay_ms));
        co_await std::move(wait);
        break;
      }
      case fault_action::drop: {
        auto handled = Fn(svc, rc, request);
        (void)co_await std::move(handled);
        co_return handler_outcome{handler_outcome::kind::no_response, {}};
      }
      case fault_action::close: {
        auto handled = Fn(svc, rc, request);
        (void)co_await std::move(handled);
        rc.close_connection = true;  // the dispatcher logs it and closes without the response
        co_return handler_outcome{handler_outcome::kind::no_response, {}};
      }
    }
  }
  auto handled = Fn(svc, rc, request);
  auto response = co_await std::move(handled);
  if constexpr (requires { response.has_value(); }) {
    if (!response) co_return handler_outcome{handler_outcome::kind::no_response, {}};
    handlers::throttle_for_request_time(svc, rc);
    fill_throttle(*response, rc.throttle_time_ms);
    co_return handler_outcome{handler_outcome::kind::respond,
                              protocol::encode_response(rc.header.correlation_id, rc.header.api_version, *response)};
  } else {
    handlers::throttle_for_request_time(svc, rc);
    fill_throttle(response, rc.throttle_time_ms);
    co_return handler_outcome{handler_outcome::kind::respond,
                              protocol::encode_response(rc.header.correlation_id, rc.header.api_version, response)};
  }
}

using protocol::api_key;

// The served APIs; their versions come from the message definitions (`served=` there, default every defined
// version: the newest Kafka defines that we implement fully). Produce is defined and served from v0 as Kafka 4.0
// advertises it (librdkafka <= 2.11 compresses only when v0 is in range); v0-2 are answered UNSUPPORTED_VERSION.
struct served_api {
  api_key key;
  handler_fn handle;
};
constexpr served_api kServed[] = {
    {api_key::produce, &adapt<protocol::produce_request, handlers::produce>},
    {api_key::fetch, &adapt<protocol::fetch_request, handlers::fetch>},
    {api_key::list_offsets, &adapt<protocol::list_offsets_request, handlers::list_offsets>},
    {api_key::metadata, &adapt<protocol::metadata_request, handlers::metadata>},
    {api_key::api_versions, &adapt<protocol::api_versions_request, handlers::api_versions>},
    {api_key::create_topics, &adapt<protocol::create_topics_request, handlers::create_topics>},
    {api_key::delete_topics, &adapt<protocol::delete_topics_request, handlers::delete_topics>},
    {api_key::offset_commit, &adapt<protocol::offset_commit_request, handlers::offset_commit>},
    {api_key::offset_fetch, &adapt<protocol::offset_fetch_request, handlers::offset_fetch>},
    {api_key::txn_offset_commit, &adapt<protocol::txn_offset_commit_request, handlers::txn_offset_commit>},
    {api_key::find_coordinator, &adapt<protocol::find_coordinator_request, handlers::find_coordinator>},
    {api_key::join_group, &adapt<protocol::join_group_request, handlers::join_group>},
    {api_key::heartbeat, &adapt<protocol::heartbeat_request, handlers::heartbeat>},
    {api_key::leave_group, &adapt<protocol::leave_group_request, handlers::leave_group>},
    {api_key::sync_group, &adapt<protocol::sync_group_request, handlers::sync_group>},
    {api_key::describe_groups, &adapt<protocol::describe_groups_request, handlers::describe_groups>},
    {api_key::list_groups, &adapt<protocol::list_groups_request, handlers::list_groups>},
    {api_key::delete_groups, &adapt<protocol::delete_groups_request, handlers::delete_groups>},
    {api_key::offset_delete, &adapt<protocol::offset_delete_request, handlers::offset_delete>},
    {api_key::init_producer_id, &adapt<protocol::init_producer_id_request, handlers::init_producer_id>},
    {api_key::delete_records, &adapt<protocol::delete_records_request, handlers::delete_records>},
    {api_key::offset_for_leader_epoch, &adapt<protocol::offset_for_leader_epoch_request, handlers::offset_for_leader_epoch>},
    {api_key::describe_configs, &adapt<protocol::describe_configs_request, handlers::describe_configs>},
    {api_key::alter_configs, &adapt<protocol::alter_configs_request, handlers::alter_configs>},
    {api_key::describe_log_dirs, &adapt<protocol::describe_log_dirs_request, handlers::describe_log_dirs>},
    {api_key::incremental_alter_configs, &adapt<protocol::incremental_alter_configs_request, handlers::incremental_alter_configs>},
    {api_key::create_partitions, &adapt<protocol::create_partitions_request, handlers::create_partitions>},
    {api_key::describe_cluster, &adapt<protocol::describe_cluster_request, handlers::describe_cluster>},
    {api_key::add_partitions_to_txn, &adapt<protocol::add_partitions_to_txn_request, handlers::add_partitions_to_txn>},
    {api_key::add_offsets_to_txn, &adapt<protocol::add_offsets_to_txn_request, handlers::add_offsets_to_txn>},
    {api_key::end_txn, &adapt<protocol::end_txn_request, handlers::end_txn>},
    {api_key::write_txn_markers, &adapt<protocol::write_txn_markers_request, handlers::write_txn_markers>},
    {api_key::describe_transactions, &adapt<protocol::describe_transactions_request, handlers::describe_transactions>},
    {api_key::list_transactions, &adapt<protocol::list_transactions_request, handlers::list_transactions>},
    {api_key::describe_producers, &adapt<protocol::describe_producers_request, handlers::describe_producers>},
    {api_key::elect_leaders, &adapt<protocol::elect_leaders_request, handlers::elect_leaders>},
    {api_key::alter_partition_reassignments,
     &adapt<protocol::alter_partition_reassignments_request, handlers::alter_partition_reassignments>},
    {api_key::list_partition_reassignments,
     &adapt<protocol::list_partition_reassignments_request, handlers::list_partition_reassignments>},
    {api_key::list_config_resources, &adapt<protocol::list_config_resources_request, handlers::list_config_resources>},
    {api_key::update_features, &adapt<protocol::update_features_request, handlers::update_features>},
    {api_key::alter_replica_log_dirs, &adapt<protocol::alter_replica_log_dirs_request, handlers::alter_replica_log_dirs>},
    {api_key::consumer_group_heartbeat,
     &adapt<protocol::consumer_group_heartbeat_request, handlers::consumer_group_heartbeat>},
    {api_key::consumer_group_describe,
     &adapt<protocol::consumer_group_describe_request, handlers::consumer_group_describe>},
    {api_key::describe_topic_partitions,
     &adapt<protocol::describe_topic_partitions_request, handlers::describe_topic_partitions>},
    {api_key::sasl_handshake, &adapt<protocol::sasl_handshake_request, handlers::sasl_handshake>},
    {api_key::sasl_authenticate, &adapt<protocol::sasl_authenticate_request, handlers::sasl_authenticate>},
    {api_key::describe_user_scram_credentials,
     &adapt<protocol::describe_user_scram_credentials_request, handlers::describe_user_scram_credentials>},
    {api_key::alter_user_scram_credentials,
     &adapt<protocol::alter_user_scram_credentials_request, handlers::alter_user_scram_credentials>},
    {api_key::describe_acls, &adapt<protocol::describe_acls_request, handlers::describe_acls>},
    {api_key::create_acls, &adapt<protocol::create_acls_request, handlers::create_acls>},
    {api_key::delete_acls, &adapt<protocol::delete_acls_request, handlers::delete_acls>},
    {api_key::describe_client_quotas, &adapt<protocol::describe_client_quotas_request, handlers::describe_client_quotas>},
    {api_key::alter_client_quotas, &adapt<protocol::alter_client_quotas_request, handlers::alter_client_quotas>},
};

std::vector<handler_entry> build_table() {
  std::vector<handler_entry> out;
  for (const auto& s : kServed) {
    const protocol::api_traits* t = protocol::find_api_traits(static_cast<int16_t>(s.key));
    if (t == nullptr) std::abort();  // a served API without a definition cannot compile its adapt<>
    out.push_back({s.key, t->served_min_version, t->served_max_version, s.handle});
  }
  return out;
}

const std::vector<handler_entry>& table() {
  static const std::vector<handler_entry> t = build_table();
  return t;
}

}  // namespace

std::span<const handler_entry> handler_table() { return table(); }

const handler_entry* find_handler(int16_t key) {
  for (const auto& e : table())
    if (static_cast<int16_t>(e.key) == key) return &e;
  return nullptr;
}

}  // namespace sluice::broker
