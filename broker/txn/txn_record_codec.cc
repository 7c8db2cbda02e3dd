#include "broker/txn/txn_record_codec.h"

#include <map>
#include <span>

#include "protocol/messages/transaction_state.h"
#include "protocol/reader.h"

namespace sluice::txn {

namespace {

namespace p = ::sluice::protocol;

constexpr int16_t key_version = 0;
constexpr int16_t value_version = 0;
constexpr int16_t value_version_with_previous_id = 1;  // PreviousProducerId is a v1 tagged field

template <typename Msg>
bytes encode_versioned(const Msg& msg, int16_t version) {
  p::writer w(2 + msg.encoded_size(version));
  w.write_int16(version);
  msg.encode(w, version);
  return w.finish().bytes;
}

std::span<const uint8_t> span_of(const bytes& b) { return std::span<const uint8_t>(b.data(), b.size()); }

}  // namespace

bytes encode_key(const std::string& transactional_id) {
  p::transaction_log_key k;
  k.transactional_id = transactional_id;
  return encode_versioned(k, key_version);
}

result<std::string> decode_key(const bytes& key) {
  p::reader r(span_of(key));
  const int16_t version = r.read_int16("key.version");
  if (!r.ok() || version != key_version) {
    return error{base_errc::failed, "unsupported __transaction_state key version " + std::to_string(version)};
  }
  p::transaction_log_key k;
  k.decode(r, version);
  if (!r.ok()) return error{base_errc::failed, "truncated TransactionLogKey: " + r.error_message()};
  return std::move(k.transactional_id);
}

bytes encode_value(const txn_log_value& v) {
  p::transaction_log_value m;
  m.producer_id = v.producer_id;
  m.previous_producer_id = v.previous_producer_id;
  m.producer_epoch = v.producer_epoch;
  m.transaction_timeout_ms = v.timeout_ms;
  m.transaction_status = static_cast<int8_t>(v.state);
  if (v.state == txn_state::empty) {
    m.transaction_partitions = std::nullopt;
  } else {
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const auto& tp : v.partitions) by_topic[tp.topic].push_back(tp.partition);
    std::vector<p::transaction_log_value::partitions_schema> out;
    for (auto& [topic, ids] : by_topic) {
      p::transaction_log_value::partitions_schema s;
      s.topic = topic;
      s.partition_ids = std::move(ids);
      out.push_back(std::move(s));
    }
    m.transaction_partitions = std::move(out);
  }
  m.transaction_last_update_timestamp_ms = v.last_update_timestamp_ms;
  m.transaction_start_timestamp_ms = v.start_timestamp_ms;
  return encode_versioned(m, v.previous_producer_id == no_producer_id ? value_version : value_version_with_previous_id);
}

result<txn_log_value> decode_value(const bytes& value) {
  p::reader r(span_of(value));
  const int16_t version = r.read_int16("value.version");
  if (!r.ok() || version < p::transaction_log_value::min_version || version > p::transaction_log_value::max_version) {
    return error{base_errc::failed, "unsupported TransactionLogValue version " + std::to_string(version)};
  }
  p::transaction_log_value m;
  m.decode(r, version);
  if (!r.ok()) return error{base_errc::failed, "truncated TransactionLogValue: " + r.error_message()};
  if (m.transaction_status < 0 || m.transaction_status > static_cast<int8_t>(txn_state::prepare_epoch_fence)) {
    return error{base_errc::failed, "unknown TransactionStatus " + std::to_string(m.transaction_status)};
  }
  txn_log_value v;
  v.producer_id = m.producer_id;
  v.previous_producer_id = m.previous_producer_id;
  v.producer_epoch = m.producer_epoch;
  v.timeout_ms = m.transaction_timeout_ms;
  v.state = static_cast<txn_state>(m.transaction_status);
  if (m.transaction_partitions) {
    for (const auto& s : *m.transaction_partitions) {
      for (int32_t id : s.partition_ids) v.partitions.insert({s.topic, id});
    }
  }
  v.last_update_timestamp_ms = m.transaction_last_update_timestamp_ms;
  v.start_timestamp_ms = m.transaction_start_timestamp_ms;
  return v;
}

}  // namespace sluice::txn
