#pragma once
// Error codes of the storage layer, carried in sluice::error::code as std::error_code of the "storage"
// category. The broker maps them to Kafka error codes in one place (broker/error_map, DESIGN.md §3); the
// comment on each names the Kafka code it becomes.
#include <string>
#include <system_error>

#include "base/result.h"

namespace sluice::storage {

enum class errc : int {
  ok = 0,
  corrupt_message,      // CRC32C mismatch, size fields inconsistent with the bytes      -> CORRUPT_MESSAGE (2)
  invalid_record,       // well-formed batch that breaks a rule (count, offset range)     -> INVALID_RECORD (87)
  record_too_large,     // batch larger than max.message.bytes                             -> MESSAGE_TOO_LARGE (10)
  unsupported_magic,    // record batch magic other than 2                                 -> UNSUPPORTED_FOR_MESSAGE_FORMAT (43)
  offset_out_of_range,  // offset < log start offset or > log end offset                   -> OFFSET_OUT_OF_RANGE (1)
  io_error,             // a system call on a log file failed                              -> KAFKA_STORAGE_ERROR (56)
  invalid_argument,     // caller error: bad topic name, negative partition, bad config    -> INVALID_REQUEST (42)
  not_found,            // no such partition log                                           -> UNKNOWN_TOPIC_OR_PARTITION (3)
  already_exists,       // duplicate partition directory across log dirs                   -> KAFKA_STORAGE_ERROR (56)
  // Idempotent producers (KIP-98, storage/producer_state.h). A duplicate batch is not an error: append
  // succeeds with the original offsets (append_result::duplicate). Since KIP-360 (Kafka 2.5) the log never
  // answers UNKNOWN_PRODUCER_ID: a producer it has no state for is accepted at any sequence.
  out_of_order_sequence,   // sequence gap, or a new epoch not starting at 0              -> OUT_OF_ORDER_SEQUENCE_NUMBER (45)
  invalid_producer_epoch,  // batch epoch older than the producer's current epoch         -> INVALID_PRODUCER_EPOCH (47)
  // Transactions (KIP-98, storage/producer_state.h).
  invalid_txn_state,       // a non-transactional batch from a producer with an open transaction -> INVALID_TXN_STATE (48)
  coordinator_fenced,      // a marker from an older transaction coordinator epoch        -> TRANSACTION_COORDINATOR_FENCED (52)
  invalid_timestamp,       // a CreateTime record outside message.timestamp.before/after.max.ms -> INVALID_TIMESTAMP (32)
};

}  // namespace sluice::storage

template <>
struct std::is_error_code_enum<sluice::storage::errc> : std::true_type {};

namespace sluice::storage {

inline const char* to_string(errc e) {
  switch (e) {
    case errc::ok: return "ok";
    case errc::corrupt_message: return "corrupt_message";
    case errc::invalid_record: return "invalid_record";
    case errc::record_too_large: return "record_too_large";
    case errc::unsupported_magic: return "unsupported_magic";
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::io_error: return "io_error";
    case errc::invalid_argument: return "invalid_argument";
    case errc::not_found: return "not_found";
    case errc::already_exists: return "already_exists";
    case errc::out_of_order_sequence: return "out_of_order_sequence";
    case errc::invalid_producer_epoch: return "invalid_producer_epoch";
    case errc::invalid_txn_state: return "invalid_txn_state";
    case errc::coordinator_fenced: return "coordinator_fenced";
    case errc::invalid_timestamp: return "invalid_timestamp";
  }
  return "unknown";
}

/// The std::error_category of errc: name "storage", message(v) = to_string(errc(v)).
const std::error_category& storage_category() noexcept;

/// errc as a std::error_code of storage_category() (found by ADL: `std::error_code c = errc::not_found`).
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), storage_category()}; }

/// Builds a sluice::error carrying a storage code.
inline sluice::error make_error(errc code, std::string message) { return sluice::error{code, std::move(message)}; }

}  // namespace sluice::storage
