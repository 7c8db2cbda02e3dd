#pragma once
// Transaction markers (KIP-98; Kafka's EndTransactionMarker and ControlRecordType): a control batch
// (attributes: transactional | control) of one record written only by the broker, for one producer id and epoch.
//   key:   int16 version (0) | int16 type (0 ABORT, 1 COMMIT)
//   value: int16 version (0) | int32 coordinator epoch          (the 6-byte value)
#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "storage/record_batch.h"

namespace sluice::storage {

struct end_txn_marker {
  bool commit = false;
  int32_t coordinator_epoch = 0;
  friend bool operator==(const end_txn_marker&, const end_txn_marker&) = default;
};

/// One control batch carrying `marker` for `producer_id` at `producer_epoch`, CreateTime `timestamp_ms`, base
/// offset 0 (the log assigns it).
std::vector<uint8_t> build_end_txn_marker_batch(int64_t producer_id, int16_t producer_epoch,
                                                const end_txn_marker& marker, int64_t timestamp_ms);

/// The marker of the control batch at the start of `batch` (uncompressed, as the broker writes them). Errors:
/// not a control batch, not exactly one record, an unknown key/value version or control type, a truncated
/// record (errc::invalid_record). A control record of another type (Kafka's LEADER_CHANGE and the KRaft ones)
/// is errc::not_found: not a transaction marker.
sluice::result<end_txn_marker> parse_end_txn_marker(std::span<const uint8_t> batch);

}  // namespace sluice::storage
