#include "broker/error_map.h"

#include "broker/groups/group_error.h"
#include "broker/partition.h"
#include "broker/partition_errc.h"
#include "broker/txn/txn_error.h"
#include "coordination/cluster_store.h"
#include "coordination/replica_assignment.h"
#include "storage/errc.h"

namespace sluice::broker {

using protocol::error_code;

namespace {

error_code from_storage(storage::errc e) {
  switch (e) {
    case storage::errc::ok: return error_code::none;
    case storage::errc::corrupt_message: return error_code::corrupt_message;
    case storage::errc::record_too_large: return error_code::message_too_large;
    case storage::errc::unsupported_magic: return error_code::unsupported_for_message_format;
    case storage::errc::invalid_record: return error_code::invalid_record;
    case storage::errc::offset_out_of_range: return error_code::offset_out_of_range;
    case storage::errc::io_error: return error_code::kafka_storage_error;
    case storage::errc::invalid_argument: return error_code::invalid_request;
    case storage::errc::not_found: return error_code::unknown_topic_or_partition;
    case storage::errc::already_exists: return error_code::kafka_storage_error;
    case storage::errc::out_of_order_sequence: return error_code::out_of_order_sequence_number;
    case storage::errc::invalid_producer_epoch: return error_code::invalid_producer_epoch;
    case storage::errc::invalid_txn_state: return error_code::invalid_txn_state;
    case storage::errc::coordinator_fenced: return error_code::transaction_coordinator_fenced;
    case storage::errc::invalid_timestamp: return error_code::invalid_timestamp;
  }
  return error_code::unknown_server_error;
}

error_code from_partition(partition_errc e) {
  switch (e) {
    case partition_errc::not_leader: return error_code::not_leader_or_follower;
    case partition_errc::not_enough_replicas: return error_code::not_enough_replicas;
    case partition_errc::unknown_leader_epoch: return error_code::unknown_leader_epoch;
  }
  return error_code::unknown_server_error;
}

error_code from_coordination(coordination::errc e) {
  switch (e) {
    case coordination::errc::ok: return error_code::none;
    case coordination::errc::topic_exists: return error_code::topic_already_exists;
    case coordination::errc::unknown_topic: return error_code::unknown_topic_or_partition;
    case coordination::errc::io_error: return error_code::kafka_storage_error;
  }
  return error_code::unknown_server_error;
}

error_code from_assignment(coordination::assignment_errc e) {
  switch (e) {
    case coordination::assignment_errc::invalid_replication_factor: return error_code::invalid_replication_factor;
    case coordination::assignment_errc::invalid_partitions: return error_code::invalid_partitions;
  }
  return error_code::unknown_server_error;
}

}  // namespace

error_code to_kafka(const std::error_code& code) {
  if (!code) return error_code::none;
  const std::error_category& c = code.category();
  const int v = code.value();
  if (c == storage::storage_category()) return from_storage(static_cast<storage::errc>(v));
  if (c == partition_category()) return from_partition(static_cast<partition_errc>(v));
  if (c == coordination::coordination_category()) return from_coordination(static_cast<coordination::errc>(v));
  if (c == coordination::assignment_category()) return from_assignment(static_cast<coordination::assignment_errc>(v));
  if (c == groups::groups_category()) return static_cast<error_code>(static_cast<int16_t>(v));
  if (c == txn::txn_category()) return static_cast<error_code>(static_cast<int16_t>(v));
  return error_code::unknown_server_error;
}

error_code to_kafka_produce(const error& e, int16_t api_version) {
  if (api_version >= 3 && e.code == storage::errc::unsupported_magic) return error_code::invalid_record;
  return to_kafka(e);
}

protocol::error_code to_kafka(hw_wait_result r) {
  using protocol::error_code;
  switch (r) {
    case hw_wait_result::reached: return error_code::none;
    case hw_wait_result::not_enough_replicas: return error_code::not_enough_replicas_after_append;
    case hw_wait_result::not_leader: return error_code::not_leader_or_follower;
    case hw_wait_result::timed_out: return error_code::request_timed_out;
  }
  return error_code::unknown_server_error;
}

}  // namespace sluice::broker
