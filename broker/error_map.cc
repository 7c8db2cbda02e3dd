#include "broker/error_map.h"

#include "broker/partition.h"
#include "coordination/cluster_store.h"
#include "storage/errc.h"

namespace sluice::broker {

using protocol::error_code;

error_code from_storage(const error& e) {
  if (e.code == static_cast<int>(partition_errc::not_leader)) return error_code::not_leader_or_follower;
  if (e.code == static_cast<int>(partition_errc::not_enough_replicas)) return error_code::not_enough_replicas;
  switch (static_cast<storage::errc>(e.code)) {
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
  }
  return error_code::unknown_server_error;
}

error_code from_coordination(const error& e) {
  switch (static_cast<coordination::errc>(e.code)) {
    case coordination::errc::ok: return error_code::none;
    case coordination::errc::topic_exists: return error_code::topic_already_exists;
    case coordination::errc::unknown_topic: return error_code::unknown_topic_or_partition;
    case coordination::errc::io_error: return error_code::kafka_storage_error;
  }
  return error_code::unknown_server_error;
}

}  // namespace sluice::broker
