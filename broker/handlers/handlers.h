#pragma once
// One handler per API: typed request in, typed response out (DESIGN.md §1). A handler that returns
// std::nullopt sends no response (Produce with acks=0).
#include <boost/asio.hpp>
#include <optional>

#include "broker/request_context.h"
#include "protocol/messages/add_offsets_to_txn.h"
#include "protocol/messages/add_partitions_to_txn.h"
#include "protocol/messages/alter_configs.h"
#include "protocol/messages/create_acls.h"
#include "protocol/messages/delete_acls.h"
#include "protocol/messages/describe_acls.h"
#include "protocol/messages/describe_client_quotas.h"
#include "protocol/messages/alter_client_quotas.h"
#include "protocol/messages/describe_producers.h"
#include "protocol/messages/elect_leaders.h"
#include "protocol/messages/alter_partition_reassignments.h"
#include "protocol/messages/list_partition_reassignments.h"
#include "protocol/messages/describe_transactions.h"
#include "protocol/messages/end_txn.h"
#include "protocol/messages/list_transactions.h"
#include "protocol/messages/write_txn_markers.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/create_partitions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_groups.h"
#include "protocol/messages/delete_records.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_cluster.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/describe_groups.h"
#include "protocol/messages/describe_log_dirs.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/find_coordinator.h"
#include "protocol/messages/heartbeat.h"
#include "protocol/messages/init_producer_id.h"
#include "protocol/messages/incremental_alter_configs.h"
#include "protocol/messages/join_group.h"
#include "protocol/messages/leave_group.h"
#include "protocol/messages/list_groups.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/metadata.h"
#include "protocol/messages/consumer_group_describe.h"
#include "protocol/messages/consumer_group_heartbeat.h"
#include "protocol/messages/describe_topic_partitions.h"
#include "protocol/messages/list_config_resources.h"
#include "protocol/messages/update_features.h"
#include "protocol/messages/alter_replica_log_dirs.h"
#include "protocol/messages/offset_commit.h"
#include "protocol/messages/offset_delete.h"
#include "protocol/messages/offset_fetch.h"
#include "protocol/messages/offset_for_leader_epoch.h"
#include "protocol/messages/produce.h"
#include "protocol/messages/sasl_authenticate.h"
#include "protocol/messages/sasl_handshake.h"
#include "protocol/messages/describe_user_scram_credentials.h"
#include "protocol/messages/alter_user_scram_credentials.h"
#include "protocol/messages/sync_group.h"
#include "protocol/messages/txn_offset_commit.h"

namespace sluice::broker::handlers {

template <typename T>
using task = boost::asio::awaitable<T>;

task<protocol::api_versions_response> api_versions(broker_services&, request_context&, protocol::api_versions_request&);
task<protocol::metadata_response> metadata(broker_services&, request_context&, protocol::metadata_request&);
task<protocol::consumer_group_heartbeat_response> consumer_group_heartbeat(
    broker_services&, request_context&, protocol::consumer_group_heartbeat_request&);
task<protocol::consumer_group_describe_response> consumer_group_describe(
    broker_services&, request_context&, protocol::consumer_group_describe_request&);
task<protocol::describe_topic_partitions_response> describe_topic_partitions(
    broker_services&, request_context&, protocol::describe_topic_partitions_request&);
task<protocol::list_config_resources_response> list_config_resources(broker_services&, request_context&,
                                                                     protocol::list_config_resources_request&);
task<protocol::alter_replica_log_dirs_response> alter_replica_log_dirs(broker_services&, request_context&,
                                                                       protocol::alter_replica_log_dirs_request&);
task<protocol::update_features_response> update_features(broker_services&, request_context&,
                                                         protocol::update_features_request&);
task<std::optional<protocol::produce_response>> produce(broker_services&, request_context&, protocol::produce_request&);
task<protocol::fetch_response> fetch(broker_services&, request_context&, protocol::fetch_request&);
task<protocol::list_offsets_response> list_offsets(broker_services&, request_context&, protocol::list_offsets_request&);
task<protocol::create_topics_response> create_topics(broker_services&, request_context&, protocol::create_topics_request&);
task<protocol::delete_topics_response> delete_topics(broker_services&, request_context&, protocol::delete_topics_request&);
task<protocol::create_partitions_response> create_partitions(broker_services&, request_context&,
                                                             protocol::create_partitions_request&);
task<protocol::describe_cluster_response> describe_cluster(broker_services&, request_context&, protocol::describe_cluster_request&);

// Consumer groups (broker/groups, through broker/group_service.h).
task<protocol::find_coordinator_response> find_coordinator(broker_services&, request_context&, protocol::find_coordinator_request&);
task<protocol::join_group_response> join_group(broker_services&, request_context&, protocol::join_group_request&);
task<protocol::sync_group_response> sync_group(broker_services&, request_context&, protocol::sync_group_request&);
task<protocol::heartbeat_response> heartbeat(broker_services&, request_context&, protocol::heartbeat_request&);
task<protocol::leave_group_response> leave_group(broker_services&, request_context&, protocol::leave_group_request&);
task<protocol::offset_commit_response> offset_commit(broker_services&, request_context&, protocol::offset_commit_request&);
task<protocol::offset_fetch_response> offset_fetch(broker_services&, request_context&, protocol::offset_fetch_request&);
/// TxnOffsetCommit (KIP-98, KIP-447): a transaction's offsets, pending in the group coordinator until its marker.
task<protocol::txn_offset_commit_response> txn_offset_commit(broker_services&, request_context&,
                                                             protocol::txn_offset_commit_request&);
task<protocol::describe_groups_response> describe_groups(broker_services&, request_context&, protocol::describe_groups_request&);
task<protocol::list_groups_response> list_groups(broker_services&, request_context&, protocol::list_groups_request&);
task<protocol::delete_groups_response> delete_groups(broker_services&, request_context&, protocol::delete_groups_request&);
task<protocol::offset_delete_response> offset_delete(broker_services&, request_context&, protocol::offset_delete_request&);
task<protocol::delete_records_response> delete_records(broker_services&, request_context&, protocol::delete_records_request&);
task<protocol::describe_configs_response> describe_configs(broker_services&, request_context&, protocol::describe_configs_request&);
task<protocol::alter_configs_response> alter_configs(broker_services&, request_context&, protocol::alter_configs_request&);
task<protocol::incremental_alter_configs_response> incremental_alter_configs(broker_services&, request_context&,
                                                                             protocol::incremental_alter_configs_request&);
task<protocol::describe_log_dirs_response> describe_log_dirs(broker_services&, request_context&, protocol::describe_log_dirs_request&);

// Idempotent producers (KIP-98): producer ids from broker/producer_id_manager.h.
task<protocol::init_producer_id_response> init_producer_id(broker_services&, request_context&, protocol::init_producer_id_request&);

// Transactions (KIP-98, KIP-664; broker/txn through broker/txn_service.h).
task<protocol::add_partitions_to_txn_response> add_partitions_to_txn(broker_services&, request_context&,
                                                                     protocol::add_partitions_to_txn_request&);
task<protocol::add_offsets_to_txn_response> add_offsets_to_txn(broker_services&, request_context&,
                                                               protocol::add_offsets_to_txn_request&);
task<protocol::end_txn_response> end_txn(broker_services&, request_context&, protocol::end_txn_request&);
task<protocol::write_txn_markers_response> write_txn_markers(broker_services&, request_context&,
                                                             protocol::write_txn_markers_request&);
task<protocol::describe_transactions_response> describe_transactions(broker_services&, request_context&,
                                                                     protocol::describe_transactions_request&);
task<protocol::list_transactions_response> list_transactions(broker_services&, request_context&,
                                                             protocol::list_transactions_request&);
task<protocol::describe_producers_response> describe_producers(broker_services&, request_context&,
                                                               protocol::describe_producers_request&);

// Replica placement by the controller (broker/handlers/reassignments.cc): KIP-455 reassignments, KIP-183/460 elections.
task<protocol::alter_partition_reassignments_response> alter_partition_reassignments(
    broker_services&, request_context&, protocol::alter_partition_reassignments_request&);
task<protocol::list_partition_reassignments_response> list_partition_reassignments(
    broker_services&, request_context&, protocol::list_partition_reassignments_request&);
task<protocol::elect_leaders_response> elect_leaders(broker_services&, request_context&, protocol::elect_leaders_request&);

// Replication (KIP-101): where a leader epoch ends in this leader's log.
task<protocol::offset_for_leader_epoch_response> offset_for_leader_epoch(broker_services&, request_context&,
                                                                         protocol::offset_for_leader_epoch_request&);

// Authentication (KIP-43, KIP-152, KIP-368; broker/security): the only handlers that change the session.
task<protocol::sasl_handshake_response> sasl_handshake(broker_services&, request_context&, protocol::sasl_handshake_request&);
task<protocol::sasl_authenticate_response> sasl_authenticate(broker_services&, request_context&,
                                                             protocol::sasl_authenticate_request&);
/// One client SASL token through the session's exchange: SaslAuthenticate's body, and the bare token frames that
/// follow a SaslHandshake v0. error_code none: `token` goes back (a challenge, or the last server message once
/// the session is authenticated); else the exchange failed (session sasl_state::failed).
struct sasl_token_result {
  protocol::error_code error_code = protocol::error_code::none;
  std::optional<std::string> error_message;
  std::vector<uint8_t> token;
  int64_t session_lifetime_ms = 0;  // KIP-368, once authenticated (0: no limit)
};
sasl_token_result sasl_token(broker_services& svc, session& s, std::span<const uint8_t> token);

// SCRAM credentials (KIP-554; broker/security/credential_store.h).
task<protocol::describe_user_scram_credentials_response> describe_user_scram_credentials(
    broker_services&, request_context&, protocol::describe_user_scram_credentials_request&);
task<protocol::alter_user_scram_credentials_response> alter_user_scram_credentials(
    broker_services&, request_context&, protocol::alter_user_scram_credentials_request&);

/// The full ApiVersions answer at `version` (also used for the v0 UNSUPPORTED_VERSION answer, KIP-511).
protocol::api_versions_response api_versions_list(protocol::error_code error);

// ACLs (KIP-140): handlers/acls.cc.
task<protocol::describe_acls_response> describe_acls(broker_services&, request_context&, protocol::describe_acls_request&);
task<protocol::create_acls_response> create_acls(broker_services&, request_context&, protocol::create_acls_request&);
task<protocol::delete_acls_response> delete_acls(broker_services&, request_context&, protocol::delete_acls_request&);
// Client quotas (KIP-546): handlers/client_quotas.cc.
task<protocol::describe_client_quotas_response> describe_client_quotas(broker_services&, request_context&,
                                                                       protocol::describe_client_quotas_request&);
task<protocol::alter_client_quotas_response> alter_client_quotas(broker_services&, request_context&,
                                                                 protocol::alter_client_quotas_request&);

}  // namespace sluice::broker::handlers
