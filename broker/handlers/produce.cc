// Produce (key 0): appends record batches to partition logs led here. acks=0 sends no response; acks=1
// answers once the batches are in the leader's log; acks=-1 once every ISR member has them (single node:
// the ISR is this broker, so -1 = 1), or NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas.
#include <map>
#include <memory>
#include <variant>

#include "base/logging.h"
#include "broker/call_on.h"
#include "broker/error_map.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/topic_ids.h"
#include "broker/purgatory.h"
#include "broker/topic_config.h"
#include "broker/topic_registry.h"
#include "broker/txn_service.h"
#include "storage/byte_order.h"
#include "storage/record_batch.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::produce_response;

namespace {

/// The partitions whose first batch is transactional, with that batch's producer id and epoch (a producer writes
/// one kind per request), read once from the batch headers.
struct transactional_batches {
  std::vector<txn::topic_partition> partitions;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

transactional_batches find_transactional(const protocol::produce_request& req) {
  transactional_batches out;
  for (const auto& td : req.topic_data) {
    for (const auto& pd : td.partition_data) {
      if (!pd.records_ || pd.records_->size() == 0) continue;
      auto h = storage::parse_record_batch_header(
          std::span<const uint8_t>(pd.records_->bytes.data(), pd.records_->bytes.size()));
      if (!h || !h->is_transactional()) continue;
      out.producer_id = h->producer_id;
      out.producer_epoch = h->producer_epoch;
      out.partitions.push_back({td.name, pd.index});
    }
  }
  return out;
}

/// KIP-890 part 1 (Kafka's transaction.partition.verification.enable, on by default): the partitions of this
/// request whose transactional batch belongs to no transaction of the producer that includes the partition, with
/// the error to answer: INVALID_TXN_STATE (Produce v3-10; "Partition was not added to the transaction") or
/// TRANSACTION_ABORTABLE (v11+), INVALID_PRODUCER_EPOCH for another epoch, INVALID_PRODUCER_ID_MAPPING for an
/// unknown producer. Asked of the transaction coordinator when it is on this broker (always on a single node);
/// a coordinator elsewhere is not asked (Kafka sends it AddPartitionsToTxn v4 verify-only) and the batch goes to
/// the log, whose epoch check still fences a stale producer.
task<std::map<txn::topic_partition, error_code>> verify_transactional(broker_services& svc,
                                                                      const protocol::produce_request& req,
                                                                      transactional_batches batches, int16_t version) {
  std::map<txn::topic_partition, error_code> out;
  if (batches.partitions.empty()) co_return out;
  auto s = svc.txns.shard_for(*req.transactional_id);
  if (!s || !s->part->is_leader()) co_return out;
  txn::add_partitions_request r{*req.transactional_id, batches.producer_id, batches.producer_epoch,
                                std::move(batches.partitions)};
  auto op = [r](txn::transaction_coordinator& c) {
    if (c.state() != txn::transaction_coordinator::load_state::active)
      return std::vector<std::pair<txn::topic_partition, txn::txn_error>>{};  // loading: not asked, as elsewhere
    return c.verify_partitions(r);
  };
  auto verified = co_await coordinator::run_on(svc.txns.coordinators(), s, std::move(op));
  for (const auto& [tp, e] : verified) {
    switch (e) {
      case txn::txn_error::none: break;
      case txn::txn_error::transaction_abortable:
      case txn::txn_error::invalid_txn_state:
        out[tp] = version >= 11 ? error_code::transaction_abortable : error_code::invalid_txn_state;
        break;
      case txn::txn_error::producer_fenced: out[tp] = error_code::invalid_producer_epoch; break;
      default: out[tp] = static_cast<error_code>(static_cast<int16_t>(e)); break;
    }
  }
  co_return out;
}

/// The partitions of a request as Kafka keys them (a map by topic-partition): a partition named twice is one
/// entry with the records of its last occurrence, a topic named twice one topic of the answer.
struct planned_topic {
  const std::string* name;
  std::vector<protocol::produce_request::partition_produce_data*> partitions;
};

std::vector<planned_topic> plan_partitions(protocol::produce_request& req) {
  std::vector<planned_topic> plan;
  std::map<std::string_view, size_t> topic_at;
  std::map<std::pair<std::string_view, int32_t>, size_t> partition_at;
  for (auto& td : req.topic_data) {
    auto [t, new_topic] = topic_at.try_emplace(td.name, plan.size());
    if (new_topic) plan.push_back({&td.name, {}});
    auto& partitions = plan[t->second].partitions;
    for (auto& pd : td.partition_data) {
      auto [p, new_partition] = partition_at.try_emplace({td.name, pd.index}, partitions.size());
      if (new_partition) partitions.push_back(&pd);
      else partitions[p->second] = &pd;
    }
  }
  return plan;
}

/// Kafka's ProduceRequest.validateRecords (v3+), before the partition's log is asked: exactly one whole
/// magic-2 batch. Returns the first batch's length in bytes, or the error: INVALID_RECORD for no whole batch
/// (empty, truncated), another magic or a second whole batch; CORRUPT_MESSAGE for a batch length below 14 or
/// a magic above 2 (Kafka's ByteBufferLogInputStream). Bytes after the first batch that do not make a whole
/// batch are not an error: Kafka drops them at append (trimInvalidBytes), and only the first batch is passed on.
std::variant<size_t, std::pair<error_code, std::string>> one_whole_batch(std::span<const uint8_t> bytes) {
  constexpr size_t log_overhead = storage::log_overhead, magic_offset = storage::batch_field::magic,
                   header_up_to_magic = magic_offset + 1;
  using failure = std::pair<error_code, std::string>;
  // The length of the whole batch at `pos`, 0 when the bytes end before it does.
  auto whole_batch_at = [&](size_t pos) -> std::variant<size_t, failure> {
    const size_t left = bytes.size() - pos;
    if (left < log_overhead) return size_t{0};
    const int32_t size = storage::detail::load_be<int32_t>(bytes.data() + pos + storage::batch_field::batch_length);
    if (size < 14)
      return failure{error_code::corrupt_message, "Record size " + std::to_string(size) + " is less than the minimum record overhead (14)"};
    if (left < header_up_to_magic) return size_t{0};
    const auto magic = static_cast<int8_t>(bytes[pos + magic_offset]);
    if (magic < 0 || magic > 2) return failure{error_code::corrupt_message, "Invalid magic found in record: " + std::to_string(magic)};
    const size_t whole = static_cast<size_t>(size) + log_overhead;
    return left < whole ? size_t{0} : whole;
  };
  auto first = whole_batch_at(0);
  if (auto* f = std::get_if<failure>(&first)) return *f;
  const size_t first_bytes = std::get<size_t>(first);
  if (first_bytes == 0)
    return failure{error_code::invalid_record, "Produce requests must have at least one whole record batch per partition"};
  if (bytes[magic_offset] != 2)
    return failure{error_code::invalid_record, "Produce requests with version 3 and later must use record batch magic 2"};
  auto second = whole_batch_at(first_bytes);
  if (auto* f = std::get_if<failure>(&second)) return *f;
  if (std::get<size_t>(second) != 0)
    return failure{error_code::invalid_record, "Produce requests are only allowed to contain exactly one record batch per partition"};
  return first_bytes;
}

/// Kafka's appendToLocalLog: a refused append answers the partition's log start offset, except for the errors
/// it catches before the log is asked or as storage faults (UNKNOWN_LOG_APPEND_INFO: -1).
bool answers_log_start_offset(error_code e) {
  switch (e) {
    case error_code::unknown_topic_or_partition:
    case error_code::not_leader_or_follower:
    case error_code::message_too_large:
    case error_code::record_list_too_large:
    case error_code::corrupt_message:
    case error_code::kafka_storage_error:
    case error_code::unknown_topic_id: return false;
    default: return true;
  }
}

}  // namespace

task<std::optional<response>> produce(broker_services& svc, request_context& rc, protocol::produce_request& req) {
  const int16_t version = rc.header.api_version;
  const bool acks_valid = req.acks == 0 || req.acks == 1 || req.acks == -1;
  // Produce v13 (KIP-516) names topics by id: each is resolved to its name once, and the rest of the handler works
  // by name. An unknown id gets a name no topic can have (NUL), so that two unknown ids stay apart; its partitions
  // answer UNKNOWN_TOPIC_ID. `wire_id` gives the id to answer with.
  std::map<std::string, protocol::uuid, std::less<>> wire_id;
  if (version >= 13) {
    for (auto& td : req.topic_data) {
      auto t = svc.topics.find(from_wire(td.topic_id));
      td.name = t ? t->name : std::string(1, '\0') + td.topic_id.to_string();
      wire_id[td.name] = td.topic_id;
    }
  }
  auto answer_topic = [&](response::topic_produce_response& tr, const std::string& name) {
    if (version >= 13) tr.topic_id = wire_id[name];
    else tr.name = name;
  };
  // acks=-1: every partition is appended first, then the request waits for all of them under one
  // deadline (Kafka's DelayedProduce covers the whole request with one timeout). Waiting partition by
  // partition would delay the next partition's append by a replication round trip each.
  const auto until = wait_deadline::after(svc.clock, req.timeout_ms);
  struct pending_ack {
    size_t topic_index, partition_index;  // into resp
    std::shared_ptr<partition> p;
    uint64_t term;
    int64_t required;
    int32_t min_isr;
  };
  std::vector<pending_ack> pending;
  response resp;
  resp.responses.reserve(req.topic_data.size());
  auto transactional = find_transactional(req);
  // Quotas (KIP-13): the request's records count against the producer's rate, whatever their fate.
  if (svc.quotas != nullptr) {
    int64_t bytes = 0;
    for (const auto& td : req.topic_data)
      for (const auto& pd : td.partition_data)
        if (pd.records_) bytes += static_cast<int64_t>(pd.records_->bytes.size());
    throttle_for_quota(svc, rc, quota_manager::kind::produce, bytes);
  }
  const bool txn_id_denied =
      req.transactional_id.has_value() &&
      !authorized(svc, rc, acl_operation::write, resource_type::transactional_id, *req.transactional_id);
  if (txn_id_denied || (!req.transactional_id.has_value() && !transactional.partitions.empty())) {
    // Kafka's handleProduceRequest: transactional records need a transactional id (it is what is authorized);
    // the whole request is answered with the error.
    for (const auto& td : req.topic_data) {
      response::topic_produce_response tr;
      answer_topic(tr, td.name);
      for (const auto& pd : td.partition_data) {
        response::partition_produce_response pr;
        pr.index = pd.index;
        pr.error_code = error_code::transactional_id_authorization_failed;
        pr.base_offset = -1;
        pr.log_append_time_ms = -1;
        pr.log_start_offset = -1;
        tr.partition_responses.push_back(std::move(pr));
      }
      resp.responses.push_back(std::move(tr));
    }
    if (req.acks == 0) {
      rc.close_connection = true;  // Kafka's sendErrorOrCloseConnection: acks=0 learns of errors by the close
      co_return std::nullopt;
    }
    co_return resp;
  }
  // KIP-890 part 1: transactional data only for partitions the producer's transaction has added.
  std::map<txn::topic_partition, error_code> unverified;
  if (req.transactional_id.has_value()) {
    auto verify_op = verify_transactional(svc, req, std::move(transactional), version);
    unverified = co_await std::move(verify_op);
  }
  for (auto& planned : plan_partitions(req)) {
    const std::string& topic_name = *planned.name;
    response::topic_produce_response tr;
    answer_topic(tr, topic_name);
    auto t = svc.topics.find(topic_name);
    const bool topic_denied = !authorized(svc, rc, acl_operation::write, resource_type::topic, topic_name);
    for (auto* pdp : planned.partitions) {
      auto& pd = *pdp;
      response::partition_produce_response pr;
      pr.index = pd.index;
      pr.base_offset = -1;
      pr.log_append_time_ms = -1;
      pr.log_start_offset = -1;
      auto p = partition_of(t, pd.index);
      // Kafka's order: the topic-partition known (KafkaApis), the records (ProduceRequest.validateRecords), acks
      // (ReplicaManager), internal topics and the transaction (appendToLocalLog), then the log's own checks.
      std::variant<size_t, std::pair<error_code, std::string>> whole{size_t{0}};
      if (version >= 3 && p && pd.records_.has_value()) whole = one_whole_batch(pd.records_->bytes);
      if (version < 3) {
        // Message formats v0/v1 (Produce v0-2) are not stored; Kafka 4.0 answers the same (KIP-896).
        pr.error_code = error_code::unsupported_version;
      } else if (version >= 13 && !t) {
        pr.error_code = error_code::unknown_topic_id;
      } else if (topic_denied) {
        pr.error_code = error_code::topic_authorization_failed;  // before existence: Kafka hides unauthorized topics
      } else if (!p) {
        pr.error_code = missing_partition_error(t, pd.index);
      } else if (!pd.records_.has_value()) {
        pr.error_code = error_code::invalid_record;  // K6: Kafka 4.4 never answers a null records field
        pr.error_message = "Produce request has no record batches";
      } else if (auto* bad = std::get_if<std::pair<error_code, std::string>>(&whole)) {
        pr.error_code = bad->first;
        pr.error_message = bad->second;
      } else if (!acks_valid) {
        pr.error_code = error_code::invalid_required_acks;
      } else if (t->internal) {
        // Only the broker writes its internal topics (Kafka: InvalidTopicException for a client's append).
        pr.error_code = error_code::invalid_topic_exception;
        pr.error_message = "Cannot append to internal topic " + topic_name;
      } else if (auto u = unverified.find({topic_name, pd.index}); u != unverified.end()) {
        pr.error_code = u->second;
        if (u->second == error_code::invalid_txn_state) pr.error_message = "Partition was not added to the transaction";
      } else {
        // The frame buffer belongs to the connection and outlives this call; storage rewrites the base
        // offset and partition leader epoch of the batch in place before writing it.
        std::span<uint8_t> batches(const_cast<uint8_t*>(pd.records_->bytes.data()), std::get<size_t>(whole));
        const int16_t acks = req.acks;
        const int32_t min_isr = topic_min_insync_replicas(svc.config, t->configs);
        const uint64_t term = p->leadership_changes();
        auto rejected = std::make_shared<std::vector<storage::record_error>>();
        auto append_op = call_on(p->strand(), [p, batches, acks, min_isr, rejected] {
          return p->append(batches, acks, min_isr, storage::append_origin::client, rejected.get());
        });  // see fetch.cc
        auto appended = co_await std::move(append_op);
        if (appended && p->flushes_on_append()) {
          // A topic with flush.messages/flush.ms: acknowledge only what is on disk. A separate strand task,
          // so appends queued meanwhile share its fsync (group commit).
          auto flush_op = call_on(p->strand(), [p] { return p->flush_if_needed(); });
          auto flushed = co_await std::move(flush_op);
          if (!flushed) appended = flushed.err();
        }
        if (appended && acks == -1) {
          // acks=all: waited for below, once every partition of the request is appended.
          pending.push_back({resp.responses.size(), tr.partition_responses.size(), p, term,
                             appended->last_offset + 1, min_isr});
        }
        if (appended) {
          if (metrics::enabled()) {
            p->messages_in.add(static_cast<uint64_t>(appended->last_offset - appended->base_offset + 1));
            p->bytes_in.add(batches.size());
          }
          pr.error_code = error_code::none;
          pr.base_offset = appended->base_offset;
          pr.log_append_time_ms = appended->log_append_time;
          pr.log_start_offset = p->log_start_offset();
        } else {
          pr.error_code = to_kafka_produce(appended.err(), version);  // v3+: magic other than 2 is INVALID_RECORD
          pr.error_message = appended.err().message;
          if (answers_log_start_offset(pr.error_code)) pr.log_start_offset = p->log_start_offset();
          for (const auto& r : *rejected) pr.record_errors.push_back({r.batch_index, r.message, {}});
          log::debug("produce to {}-{} from {} rejected: {}", topic_name, pd.index, rc.session.peer, appended.err().message);
        }
      }
      tr.partition_responses.push_back(std::move(pr));
    }
    if (!planned.partitions.empty()) resp.responses.push_back(std::move(tr));  // Kafka: no entry for a topic without partitions
  }
  static metrics::gauge& parked_produces = purgatory_size("Produce");
  std::optional<parked_in_purgatory> counted;
  if (!pending.empty()) counted.emplace(parked_produces);
  for (auto& w : pending) {
    // acks=all: until every ISR member has the batches (the HW passes them), Kafka's DelayedProduce.
    const int64_t parked_us = svc.clock.monotonic_us();
    auto wait_op = w.p->wait_for_high_watermark(w.required, w.term, w.min_isr, until);
    const hw_wait_result outcome = co_await std::move(wait_op);  // not inside co_await: GCC 12
    rc.waited_us += svc.clock.monotonic_us() - parked_us;  // replication wait: not counted as work
    const error_code waited = to_kafka(outcome);
    if (waited != error_code::none) {
      auto& pr = resp.responses[w.topic_index].partition_responses[w.partition_index];
      pr.error_code = waited;
      pr.base_offset = -1;
      pr.log_append_time_ms = -1;
      pr.log_start_offset = -1;
    }
  }
  if (req.acks == 0) {
    // acks=0: the client reads no answer, so Kafka closes the connection when any partition failed (its only
    // signal; the client then refreshes its metadata).
    for (const auto& tr : resp.responses)
      for (const auto& pr : tr.partition_responses)
        if (pr.error_code != error_code::none) rc.close_connection = true;
    co_return std::nullopt;
  }
  co_return resp;
}

}  // namespace sluice::broker::handlers
