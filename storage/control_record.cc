#include "storage/control_record.h"

#include <string_view>

#include "storage/byte_order.h"
#include "storage/errc.h"

namespace sluice::storage {

namespace {
constexpr int16_t marker_key_version = 0;
constexpr int16_t marker_value_version = 0;
constexpr int16_t type_abort = 0;
constexpr int16_t type_commit = 1;
}  // namespace

std::vector<uint8_t> build_end_txn_marker_batch(int64_t producer_id, int16_t producer_epoch,
                                                const end_txn_marker& marker, int64_t timestamp_ms) {
  uint8_t key[4];
  detail::store_be<int16_t>(key, marker_key_version);
  detail::store_be<int16_t>(key + 2, marker.commit ? type_commit : type_abort);
  uint8_t value[6];
  detail::store_be<int16_t>(value, marker_value_version);
  detail::store_be<int32_t>(value + 2, marker.coordinator_epoch);
  record_batch_builder b;
  // Markers carry no sequence (RecordBatch.NO_SEQUENCE), as Kafka's MemoryRecords.withEndTransactionMarker.
  b.set_producer(producer_id, producer_epoch, -1).set_transactional().set_control();
  b.add(std::string_view(reinterpret_cast<const char*>(key), sizeof key),
        std::string_view(reinterpret_cast<const char*>(value), sizeof value), timestamp_ms);
  return b.build();
}

sluice::result<end_txn_marker> parse_end_txn_marker(std::span<const uint8_t> batch) {
  auto it = record_iterator::open(batch);
  if (!it) return make_error(errc::invalid_record, "marker batch: " + it.err().message);
  if (!it->header().is_control()) return make_error(errc::invalid_record, "marker batch: not a control batch");
  if (it->header().records_count != 1) {
    return make_error(errc::invalid_record, "control batch with " + std::to_string(it->header().records_count) +
                                                " records");
  }
  record_view r;
  if (!it->next(r)) return make_error(errc::invalid_record, "control batch: malformed record");
  if (!r.key || r.key->size() < 4) return make_error(errc::invalid_record, "control record key too short");
  const auto* k = reinterpret_cast<const uint8_t*>(r.key->data());
  const auto key_version = detail::load_be<int16_t>(k);
  const auto type = detail::load_be<int16_t>(k + 2);
  if (key_version != marker_key_version) {
    return make_error(errc::invalid_record, "control record key version " + std::to_string(key_version));
  }
  if (type != type_abort && type != type_commit) {
    return make_error(errc::not_found, "control record type " + std::to_string(type) + " is not a marker");
  }
  if (!r.value || r.value->size() < 6) return make_error(errc::invalid_record, "marker value too short");
  const auto* v = reinterpret_cast<const uint8_t*>(r.value->data());
  if (detail::load_be<int16_t>(v) != marker_value_version) {
    return make_error(errc::invalid_record, "marker value version " + std::to_string(detail::load_be<int16_t>(v)));
  }
  return end_txn_marker{type == type_commit, detail::load_be<int32_t>(v + 2)};
}

}  // namespace sluice::storage
