#pragma once
// The one place where errors of lower layers become Kafka error codes (DESIGN.md §3). Every layer's enum
// is a std::error_code of its own category (storage, partition, coordination, cluster_view, assignment,
// zookeeper, groups, sluice), so this file is the only reader of all of them and handlers never look at a
// lower layer's enum.
#include <cstdint>
#include <string>
#include <system_error>

#include "base/result.h"
#include "protocol/error_code.h"

namespace sluice::broker {

enum class hw_wait_result : uint8_t;  // broker/partition.h

/// A Kafka error code with the message Kafka would put beside it (ErrorMessage fields, the log).
struct kafka_error {
  protocol::error_code code = protocol::error_code::none;
  std::string message;
  bool ok() const { return code == protocol::error_code::none; }
};

/// A lower layer's error code -> Kafka's. Any category's value 0 -> NONE. Otherwise, by category:
///   storage::errc: corrupt_message -> CORRUPT_MESSAGE, invalid_record -> INVALID_RECORD,
///     record_too_large -> MESSAGE_TOO_LARGE, unsupported_magic -> UNSUPPORTED_FOR_MESSAGE_FORMAT,
///     offset_out_of_range -> OFFSET_OUT_OF_RANGE, io_error and already_exists -> KAFKA_STORAGE_ERROR,
///     invalid_argument -> INVALID_REQUEST, not_found -> UNKNOWN_TOPIC_OR_PARTITION (also a partition
///     deleted under the request), out_of_order_sequence -> OUT_OF_ORDER_SEQUENCE_NUMBER,
///     invalid_producer_epoch -> INVALID_PRODUCER_EPOCH;
///   partition_errc: not_leader -> NOT_LEADER_OR_FOLLOWER, not_enough_replicas -> NOT_ENOUGH_REPLICAS;
///   coordination::errc: topic_exists -> TOPIC_ALREADY_EXISTS, unknown_topic -> UNKNOWN_TOPIC_OR_PARTITION,
///     io_error -> KAFKA_STORAGE_ERROR;
///   coordination::assignment_errc: invalid_replication_factor -> INVALID_REPLICATION_FACTOR,
///     invalid_partitions -> INVALID_PARTITIONS;
///   groups::group_error: the same number (the enum holds Kafka's codes; values outside it pass through);
///   view_errc, zk_errc, base_errc, any other category or unknown value -> UNKNOWN_SERVER_ERROR.
protocol::error_code to_kafka(const std::error_code& code);

/// to_kafka of an error's code (its message goes to the ErrorMessage field or the log, not here).
inline protocol::error_code to_kafka(const error& e) { return to_kafka(e.code); }

/// Produce's answer for a partition whose append failed: to_kafka, except that v3+ requests get
/// INVALID_RECORD for a batch of another magic than 2 (Kafka's ProduceRequest.validateRecords: v3+ may
/// carry magic v2 batches only; older versions answer UNSUPPORTED_FOR_MESSAGE_FORMAT).
protocol::error_code to_kafka_produce(const error& e, int16_t api_version);

/// How a wait for the high watermark ended (partition::wait_for_high_watermark) -> the answer of an acks=-1
/// write (Kafka's DelayedProduce; the coordinators' appends answer the same): reached -> NONE,
/// not_enough_replicas -> NOT_ENOUGH_REPLICAS_AFTER_APPEND, not_leader -> NOT_LEADER_OR_FOLLOWER,
/// timed_out -> REQUEST_TIMED_OUT.
protocol::error_code to_kafka(hw_wait_result r);

}  // namespace sluice::broker
