// Records over HTTP (broker/http/README.md, openapi.yaml): read N records of a partition from an offset or a
// timestamp (ListOffsets, then Fetch), and produce records to a topic or a partition (Produce, acks as asked).
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <map>
#include <set>

#include "base/murmur2.h"
#include "broker/handlers/handlers.h"
#include "broker/http/admin_kafka.h"
#include "broker/topic_registry.h"
#include "storage/compression.h"
#include "storage/control_record.h"
#include "storage/record_batch.h"

namespace sluice::broker::http {

using beast_http::verb;
using protocol::error_code;
namespace asio = boost::asio;

namespace {

constexpr int32_t kMaxRecordsPerRead = 10000;
constexpr int32_t kDefaultRecordsPerRead = 10;
constexpr int32_t kFetchBytes = 1 << 20;
constexpr int kMaxFetchRounds = 64;  // a read stops after this many Fetch calls even below `limit`

std::optional<int64_t> parse_int(const std::string* text) {
  if (!text || text->empty()) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || ptr != text->data() + text->size()) return std::nullopt;
  return v;
}

bool known_encoding(std::string_view e) { return e == "utf8" || e == "base64" || e == "hex"; }

/// The bytes of fetched records (a file region is read with pread).
std::optional<std::vector<uint8_t>> materialize(const protocol::records& r) {
  if (!r.in_file()) return std::vector<uint8_t>(r.bytes.begin(), r.bytes.end());
  std::vector<uint8_t> out(static_cast<size_t>(r.file.size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(r.file.file->fd(), out.data() + done, out.size() - done, r.file.position + static_cast<off_t>(done));
    if (n <= 0) return std::nullopt;
    done += static_cast<size_t>(n);
  }
  return out;
}

json::object record_json(const storage::record_view& r, const storage::record_batch_header& h, int32_t partition,
                         std::string_view encoding) {
  std::string used;
  json::object o{{"partition", partition},
                 {"offset", r.offset},
                 {"timestamp", r.timestamp},
                 {"timestamp_type", h.ts_type() == storage::timestamp_type::log_append_time ? "LogAppendTime" : "CreateTime"}};
  if (r.key) {
    o["key"] = bytes_json(*r.key, encoding, used);
    o["key_encoding"] = used;
  } else {
    o["key"] = nullptr;
  }
  if (r.value) {
    o["value"] = bytes_json(*r.value, encoding, used);
    o["value_encoding"] = used;
  } else {
    o["value"] = nullptr;
  }
  json::array headers;
  for (const auto& hd : r.headers) {
    json::object ho;
    ho["key"] = bytes_json(hd.key, "utf8", used);
    if (used != "utf8") ho["key_encoding"] = used;
    if (hd.value) {
      ho["value"] = bytes_json(*hd.value, encoding, used);
      ho["value_encoding"] = used;
    } else {
      ho["value"] = nullptr;
    }
    headers.push_back(std::move(ho));
  }
  o["headers"] = std::move(headers);
  return o;
}

/// ListOffsets for one partition (list_offsets of admin_kafka.h).
asio::awaitable<listed_offset> list_offset(kafka_caller& kc, const std::string& topic, int32_t partition, int64_t timestamp,
                                           int8_t isolation) {
  const std::set<topic_partition> which{{topic, partition}};  // outlives the coroutine, which takes a reference
  auto op = list_offsets(kc, which, timestamp, isolation);
  auto all = co_await std::move(op);
  auto it = all.find({topic, partition});
  co_return it != all.end() ? it->second : listed_offset{error_code::unknown_server_error, -1};
}

asio::awaitable<reply> read_records(kafka_caller& kc, const request&, const target_parts& parts, const std::string& topic,
                                    int32_t partition) {
  int32_t limit = kDefaultRecordsPerRead;
  if (const auto* l = parts.param("limit")) {
    auto v = parse_int(l);
    if (!v || *v < 1 || *v > kMaxRecordsPerRead)
      co_return error_reply(400, "INVALID_REQUEST", "limit must be an integer 1.." + std::to_string(kMaxRecordsPerRead));
    limit = static_cast<int32_t>(*v);
  }
  std::string encoding = "utf8";
  if (const auto* e = parts.param("encoding")) {
    if (!known_encoding(*e)) co_return error_reply(400, "INVALID_REQUEST", "encoding must be utf8, base64 or hex");
    encoding = *e;
  }
  int8_t isolation = 0;
  if (const auto* i = parts.param("isolation")) {
    if (*i == "read_committed") isolation = 1;
    else if (*i != "read_uncommitted") co_return error_reply(400, "INVALID_REQUEST", "isolation must be read_uncommitted or read_committed");
  }
  const auto* offset_param = parts.param("offset");
  const auto* timestamp_param = parts.param("timestamp");
  if (offset_param && timestamp_param) co_return error_reply(400, "INVALID_REQUEST", "give offset or timestamp, not both");
  int64_t start = 0;
  if (offset_param && (*offset_param == "earliest" || *offset_param == "latest")) {
    auto op = list_offset(kc, topic, partition, *offset_param == "earliest" ? -2 : -1, isolation);
    auto r = co_await std::move(op);
    if (r.error != error_code::none) co_return kafka_error_reply(r.error);
    start = r.offset;
  } else if (offset_param) {
    auto v = parse_int(offset_param);
    if (!v || *v < 0) co_return error_reply(400, "INVALID_REQUEST", "offset must be an integer >= 0, earliest or latest");
    start = *v;
  } else if (timestamp_param) {
    auto v = parse_int(timestamp_param);
    if (!v || *v < 0) co_return error_reply(400, "INVALID_REQUEST", "timestamp must be milliseconds since the epoch (>= 0)");
    auto op = list_offset(kc, topic, partition, *v, isolation);
    auto r = co_await std::move(op);
    if (r.error != error_code::none) co_return kafka_error_reply(r.error);
    if (r.offset < 0) {  // no record at or after the timestamp: nothing to read, start at the end
      auto lop = list_offset(kc, topic, partition, -1, isolation);
      auto latest = co_await std::move(lop);
      if (latest.error != error_code::none) co_return kafka_error_reply(latest.error);
      start = latest.offset;
    } else {
      start = r.offset;
    }
  } else {
    auto op = list_offset(kc, topic, partition, -2, isolation);
    auto r = co_await std::move(op);
    if (r.error != error_code::none) co_return kafka_error_reply(r.error);
    start = r.offset;
  }

  json::array out;
  int64_t next = start, high_watermark = -1, log_start = -1, last_stable = -1;
  // read_committed: the producers whose aborted transactions span what is read (Kafka's consumer skips their
  // transactional batches until the ABORT marker).
  std::vector<protocol::fetch_response::aborted_transaction> aborted;
  std::vector<int64_t> skipping;
  for (int round = 0; round < kMaxFetchRounds && static_cast<int32_t>(out.size()) < limit; ++round) {
    protocol::fetch_request fr;
    fr.replica_id = -1;
    fr.max_wait_ms = 0;
    fr.min_bytes = 0;
    fr.max_bytes = kFetchBytes;
    fr.isolation_level = isolation;
    auto& ft = fr.topics.emplace_back();
    ft.topic = topic;
    auto& fp = ft.partitions.emplace_back();
    fp.partition = partition;
    fp.fetch_offset = next;
    fp.partition_max_bytes = kFetchBytes;
    auto op = kc.call(&handlers::fetch, fr, 12);
    auto resp = co_await std::move(op);
    if (resp.error_code != error_code::none) co_return kafka_error_reply(resp.error_code);
    if (resp.responses.empty() || resp.responses.front().partitions.empty())
      co_return kafka_error_reply(error_code::unknown_server_error, "Fetch gave no partition");
    const auto& pd = resp.responses.front().partitions.front();
    if (pd.error_code != error_code::none)
      co_return kafka_error_reply(pd.error_code, topic + "-" + std::to_string(partition) + ": " +
                                                     std::string(protocol::error_name(pd.error_code)) +
                                                     leader_hint(kc.services(), topic, partition));
    high_watermark = pd.high_watermark;
    log_start = pd.log_start_offset;
    last_stable = pd.last_stable_offset;
    if (pd.aborted_transactions)
      for (const auto& a : *pd.aborted_transactions) aborted.push_back(a);
    if (!pd.records_ || pd.records_->size() == 0) break;
    auto bytes = materialize(*pd.records_);
    if (!bytes) co_return kafka_error_reply(error_code::kafka_storage_error, "cannot read the log segment");
    std::span<const uint8_t> rest(*bytes);
    const int64_t before = next;
    while (!rest.empty() && static_cast<int32_t>(out.size()) < limit) {
      auto h = storage::parse_record_batch_header(rest);
      if (!h) break;  // a partial batch at the end of the fetch
      const auto batch = rest.subspan(0, static_cast<size_t>(h->size_bytes()));
      rest = rest.subspan(batch.size());
      if (h->last_offset() < next) continue;
      if (isolation == 1) {
        for (auto it = aborted.begin(); it != aborted.end();) {
          if (it->first_offset <= h->last_offset()) {
            skipping.push_back(it->producer_id);
            it = aborted.erase(it);
          } else {
            ++it;
          }
        }
      }
      if (h->is_control()) {
        if (auto m = storage::parse_end_txn_marker(batch); m && !m->commit)
          std::erase(skipping, h->producer_id);
        next = h->last_offset() + 1;
        continue;
      }
      if (isolation == 1 && h->is_transactional() && std::find(skipping.begin(), skipping.end(), h->producer_id) != skipping.end()) {
        next = h->last_offset() + 1;
        continue;
      }
      std::vector<uint8_t> inflated;
      std::span<const uint8_t> records = batch.subspan(storage::record_batch_header_size);
      if (h->compression() != storage::compression_codec::none) {
        auto d = storage::decompress(h->compression(), records);
        if (!d) co_return kafka_error_reply(error_code::corrupt_message, d.err().message);
        inflated = std::move(*d);
        records = inflated;
      }
      auto it = storage::record_iterator::over_records(*h, records);
      storage::record_view r;
      while (static_cast<int32_t>(out.size()) < limit && it.next(r)) {
        if (r.offset < next) continue;
        out.push_back(record_json(r, *h, partition, encoding));
        next = r.offset + 1;
      }
      if (it.error()) co_return kafka_error_reply(error_code::corrupt_message, it.error()->message);
      if (static_cast<int32_t>(out.size()) < limit) next = std::max(next, h->last_offset() + 1);
    }
    if (next == before) break;  // nothing readable beyond (e.g. the batch is larger than a fetch)
  }
  co_return json_reply(200, json::object{{"topic", topic},
                                         {"partition", partition},
                                         {"records", std::move(out)},
                                         {"next_offset", next},
                                         {"high_watermark", high_watermark},
                                         {"last_stable_offset", last_stable},
                                         {"log_start_offset", log_start}});
}

/// One record of a produce body, its bytes decoded.
struct body_record {
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  std::optional<int32_t> partition;
  std::optional<int64_t> timestamp;
};

std::atomic<uint32_t> g_round_robin{0};

asio::awaitable<reply> produce_records(kafka_caller& kc, const request& req, const std::string& topic,
                                       std::optional<int32_t> path_partition) {
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  std::string key_encoding = "utf8", value_encoding = "utf8";
  int16_t acks = -1;
  int32_t timeout_ms = 30000;
  const json::array* items = nullptr;
  for (const auto& [k, v] : *body) {
    if (k == "records") {
      if (!v.is_array()) co_return error_reply(400, "INVALID_REQUEST", "\"records\" must be an array");
      items = &v.as_array();
    } else if (k == "key_encoding" || k == "value_encoding") {
      if (!v.is_string() || !known_encoding(v.as_string()))
        co_return error_reply(400, "INVALID_REQUEST", std::string(k) + " must be utf8, base64 or hex");
      (k == "key_encoding" ? key_encoding : value_encoding) = std::string(v.as_string());
    } else if (k == "acks") {
      if (v.is_string() && v.as_string() == "all") acks = -1;
      else if (v.is_int64() && (v.as_int64() == 0 || v.as_int64() == 1 || v.as_int64() == -1)) acks = static_cast<int16_t>(v.as_int64());
      else co_return error_reply(400, "INVALID_REQUEST", "acks must be 0, 1, -1 or \"all\"");
    } else if (k == "timeout_ms") {
      if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() > INT32_MAX)
        co_return error_reply(400, "INVALID_REQUEST", "timeout_ms must be an integer >= 0");
      timeout_ms = static_cast<int32_t>(v.as_int64());
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k) + " (records, key_encoding, value_encoding, acks, timeout_ms)");
    }
  }
  if (!items || items->empty()) co_return error_reply(400, "INVALID_REQUEST", "\"records\" must hold at least one record");
  auto t = kc.services().topics.find(topic);
  // A topic not known here still goes to Produce (one partition), which answers as Kafka would: authorization
  // first (TOPIC_AUTHORIZATION_FAILED), then UNKNOWN_TOPIC_OR_PARTITION.
  const int32_t partition_count = t ? static_cast<int32_t>(t->partitions.size()) : 1;

  std::vector<body_record> records;
  records.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const auto& item = (*items)[i];
    const std::string where = "records[" + std::to_string(i) + "]";
    if (!item.is_object()) co_return error_reply(400, "INVALID_REQUEST", where + " must be an object");
    body_record br;
    for (const auto& [k, v] : item.as_object()) {
      if (k == "key" || k == "value") {
        if (v.is_null()) continue;
        if (!v.is_string()) co_return error_reply(400, "INVALID_REQUEST", where + "." + std::string(k) + " must be a string or null");
        auto bytes = bytes_from(v.as_string(), k == "key" ? key_encoding : value_encoding);
        if (!bytes) co_return error_reply(400, "INVALID_REQUEST", where + "." + std::string(k) + " does not decode");
        (k == "key" ? br.key : br.value) = std::move(*bytes);
      } else if (k == "headers") {
        auto add = [&](std::string_view hk, const json::value& hv) -> bool {
          if (hv.is_null()) {
            br.headers.emplace_back(std::string(hk), std::nullopt);
            return true;
          }
          if (!hv.is_string()) return false;
          auto bytes = bytes_from(hv.as_string(), value_encoding);
          if (!bytes) return false;
          br.headers.emplace_back(std::string(hk), std::move(*bytes));
          return true;
        };
        bool ok = true;
        if (v.is_object()) {
          for (const auto& [hk, hv] : v.as_object()) ok = ok && add(hk, hv);
        } else if (v.is_array()) {
          for (const auto& h : v.as_array()) {
            const auto* ho = h.if_object();
            const auto* hk = ho ? ho->if_contains("key") : nullptr;
            const auto* hv = ho ? ho->if_contains("value") : nullptr;
            if (ho)
              for (const auto& [name, _] : *ho) ok = ok && (name == "key" || name == "value");
            ok = ok && hk && hk->is_string() && add(hk->as_string(), hv ? *hv : json::value(nullptr));
          }
        } else {
          ok = false;
        }
        if (!ok) co_return error_reply(400, "INVALID_REQUEST", where + ".headers: an object {name: value} or an array of {key, value}");
      } else if (k == "partition") {
        if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() >= partition_count)
          co_return error_reply(400, "INVALID_REQUEST", where + ".partition must be 0.." + std::to_string(partition_count - 1));
        br.partition = static_cast<int32_t>(v.as_int64());
      } else if (k == "timestamp") {
        if (!v.is_int64() || v.as_int64() < 0) co_return error_reply(400, "INVALID_REQUEST", where + ".timestamp must be ms since the epoch");
        br.timestamp = v.as_int64();
      } else {
        co_return error_reply(400, "INVALID_REQUEST", where + ": unknown field " + std::string(k) + " (key, value, headers, partition, timestamp)");
      }
    }
    if (path_partition) {
      if (br.partition && *br.partition != *path_partition)
        co_return error_reply(400, "INVALID_REQUEST", where + ".partition differs from the partition in the path");
      br.partition = path_partition;
    }
    records.push_back(std::move(br));
  }
  if (path_partition && (*path_partition < 0 || *path_partition >= partition_count))
    co_return kafka_error_reply(error_code::unknown_topic_or_partition, topic + " has no partition " + std::to_string(*path_partition));
  // The Java client's default partitioner for keyed records; keyless ones go round robin (one partition per call).
  const int32_t keyless_partition = static_cast<int32_t>(g_round_robin.fetch_add(1, std::memory_order_relaxed) %
                                                         static_cast<uint32_t>(partition_count));
  std::map<int32_t, std::vector<size_t>> by_partition;
  for (size_t i = 0; i < records.size(); ++i) {
    auto& r = records[i];
    if (!r.partition) r.partition = r.key ? partition_for_key(*r.key, partition_count) : keyless_partition;
    by_partition[*r.partition].push_back(i);
  }
  const int64_t now = kc.services().clock.now_ms();
  std::vector<std::shared_ptr<std::vector<uint8_t>>> batches;
  protocol::produce_request pr;
  pr.acks = acks;
  pr.timeout_ms = timeout_ms;
  auto& td = pr.topic_data.emplace_back();
  td.name = topic;
  for (const auto& [p, idx] : by_partition) {
    storage::record_batch_builder b;
    for (size_t i : idx) {
      const auto& r = records[i];
      std::vector<storage::record_header> headers;
      for (const auto& [hk, hv] : r.headers)
        headers.push_back({hk, hv ? std::optional<std::string_view>(*hv) : std::nullopt});
      b.add(r.key ? std::optional<std::string_view>(*r.key) : std::nullopt,
            r.value ? std::optional<std::string_view>(*r.value) : std::nullopt, r.timestamp.value_or(now), headers);
    }
    auto bytes = std::make_shared<std::vector<uint8_t>>(b.build());
    auto& pd = td.partition_data.emplace_back();
    pd.index = p;
    pd.records_ = protocol::records::from_memory(*bytes, bytes);
    batches.push_back(std::move(bytes));
  }
  auto op = kc.call(&handlers::produce, pr, 9);
  auto resp = co_await std::move(op);
  if (!resp) co_return json_reply(202, json::object{{"topic", topic}, {"acks", 0}, {"records", records.size()}});
  std::map<int32_t, const protocol::produce_response::partition_produce_response*> results;
  for (const auto& tr : resp->responses)
    for (const auto& r : tr.partition_responses) results[r.index] = &r;
  json::array offsets;
  error_code first_error = error_code::none;
  std::string first_message;
  size_t failed = 0;
  std::map<int32_t, int64_t> position;
  for (size_t i = 0; i < records.size(); ++i) {
    const int32_t p = *records[i].partition;
    const auto* r = results.count(p) ? results[p] : nullptr;
    json::object o{{"partition", p}};
    if (!r || r->error_code != error_code::none) {
      const auto e = r ? r->error_code : error_code::unknown_server_error;
      o["error"] = protocol::error_name(e);
      std::string message = r && r->error_message ? *r->error_message : "";
      if (e == error_code::not_leader_or_follower)
        message = topic + "-" + std::to_string(p) + ": NOT_LEADER_OR_FOLLOWER" + leader_hint(kc.services(), topic, p);
      if (!message.empty()) o["message"] = message;
      if (first_error == error_code::none) {
        first_error = e;
        first_message = message;
      }
      ++failed;
    } else {
      o["offset"] = r->base_offset + position[p]++;
      if (r->log_append_time_ms >= 0) o["timestamp"] = r->log_append_time_ms;
    }
    offsets.push_back(std::move(o));
  }
  if (failed == records.size()) co_return kafka_error_reply(first_error, first_message);
  co_return json_reply(failed ? 207 : 200, json::object{{"topic", topic}, {"offsets", std::move(offsets)}});
}

}  // namespace

asio::awaitable<reply> records_route(kafka_caller& kc, const request& req, const target_parts& parts) {
  const auto& s = parts.segments;  // v1 topics T records | v1 topics T partitions P records
  const std::string& topic = s[2];
  std::optional<int32_t> partition;
  if (s.size() == 6) {
    auto p = parse_int(&s[4]);
    if (!p || *p < 0 || *p > INT32_MAX) co_return error_reply(404, "NOT_FOUND", "no partition " + s[4]);
    partition = static_cast<int32_t>(*p);
  }
  const auto method = req.method();
  if (method == verb::post) {
    auto op = produce_records(kc, req, topic, partition);
    co_return co_await std::move(op);
  }
  if ((method == verb::get || method == verb::head) && partition) {
    auto op = read_records(kc, req, parts, topic, *partition);
    co_return co_await std::move(op);
  }
  co_return method_not_allowed(partition ? "GET, POST" : "POST");
}

}  // namespace sluice::broker::http
