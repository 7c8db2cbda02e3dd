#pragma once
// The __transaction_state records, in Kafka's format (TransactionLog): a key is int16 version 0 then
// TransactionLogKey (the transactional id); a value is an int16 version then TransactionLogValue at that version
// (protocol/defs/transaction_state.def). We write value version 0 (what Kafka writes for transaction version 1
// clients), or version 1 when the id has a previous producer id to keep (KIP-360 rotation; v1 carries it as a
// tagged field, v0 has no place for it), and read 0 and 1. A tombstone (no value) removes the id.
#include <optional>
#include <string>

#include "base/result.h"
#include "broker/txn/txn_types.h"

namespace sluice::txn {

/// The state a TransactionLogValue carries (everything of transaction_metadata but the in-memory parts).
struct txn_log_value {
  int64_t producer_id = no_producer_id;
  int64_t previous_producer_id = no_producer_id;  // v1 tagged field; -1 in v0
  int16_t producer_epoch = no_producer_epoch;
  int32_t timeout_ms = 0;
  txn_state state = txn_state::empty;
  std::set<topic_partition> partitions;
  int64_t last_update_timestamp_ms = -1;
  int64_t start_timestamp_ms = -1;
  bool operator==(const txn_log_value&) const = default;
};

bytes encode_key(const std::string& transactional_id);
/// Errors: a version other than 0, a truncated body (base_errc::failed, message says which).
result<std::string> decode_key(const bytes& key);

/// Version 0 (1 with a previous producer id); the partitions are written null in state Empty, as Kafka does.
bytes encode_value(const txn_log_value& v);
/// Versions 0-1. Errors: unknown version, truncated body, a status outside 0-7.
result<txn_log_value> decode_value(const bytes& value);

}  // namespace sluice::txn
