#pragma once
// The one place where errors of lower layers become Kafka error codes (DESIGN.md §3).
#include <string>

#include "base/result.h"
#include "protocol/error_code.h"

namespace sluice::broker {

/// A Kafka error code with the message Kafka would put beside it (ErrorMessage fields, the log).
struct kafka_error {
  protocol::error_code code = protocol::error_code::none;
  std::string message;
  bool ok() const { return code == protocol::error_code::none; }
};

/// storage::errc -> Kafka: corrupt_message -> CORRUPT_MESSAGE, record_too_large -> MESSAGE_TOO_LARGE,
/// unsupported_magic -> UNSUPPORTED_FOR_MESSAGE_FORMAT, invalid_record -> INVALID_RECORD,
/// offset_out_of_range -> OFFSET_OUT_OF_RANGE, not_found -> UNKNOWN_TOPIC_OR_PARTITION (also a partition
/// deleted under the request), invalid_argument -> INVALID_REQUEST, io_error and already_exists ->
/// KAFKA_STORAGE_ERROR; also partition_errc::not_leader -> NOT_LEADER_OR_FOLLOWER.
protocol::error_code from_storage(const error& e);

/// coordination::errc -> Kafka: topic_exists -> TOPIC_ALREADY_EXISTS, unknown_topic ->
/// UNKNOWN_TOPIC_OR_PARTITION, io_error -> KAFKA_STORAGE_ERROR.
protocol::error_code from_coordination(const error& e);

}  // namespace sluice::broker
