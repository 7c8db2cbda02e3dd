// sluice produce NAME: one record per line of stdin (optionally key<SEP>value), headers, a fixed partition or
// the Java client's default partitioner (cli/partitioner.h). Records are batched per partition (one v2 batch
// per partition per Produce request, as Kafka clients send them) and sent to each partition's leader with
// acks=all unless --acks says otherwise. No idempotence: a retried batch (after NOT_LEADER_OR_FOLLOWER and the
// like) may be written twice, as with a Java producer with enable.idempotence=false.
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <ostream>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cli/partitioner.h"
#include "protocol/messages/produce.h"
#include "storage/record_batch.h"

namespace sluice::cli {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool retriable(protocol::error_code e) {
  using protocol::error_code;
  return e == error_code::not_leader_or_follower || e == error_code::leader_not_available ||
         e == error_code::request_timed_out || e == error_code::not_enough_replicas ||
         e == error_code::not_enough_replicas_after_append || e == error_code::unknown_topic_or_partition;
}

/// Lines of stdin, read with read(2) so that an idle pipe can be noticed (poll) and the batches sent meanwhile.
class line_reader {
 public:
  enum class status { line, idle, eof };
  /// The next line (without its '\n') in `out`; `idle` when none arrived within `linger`.
  status next(std::string& out, std::chrono::milliseconds linger) {
    for (;;) {
      if (size_t nl = buf_.find('\n', scan_); nl != std::string::npos) {
        out.assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        scan_ = 0;
        return status::line;
      }
      scan_ = buf_.size();
      if (eof_) {
        if (buf_.empty()) return status::eof;
        out.swap(buf_);
        buf_.clear();
        scan_ = 0;
        return status::line;
      }
      pollfd p{0, POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(linger.count()));
      if (n == 0) return status::idle;
      char chunk[65536];
      ssize_t got = ::read(0, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) eof_ = true;
      else buf_.append(chunk, static_cast<size_t>(got));
    }
  }

 private:
  std::string buf_;
  size_t scan_ = 0;
  bool eof_ = false;
};

struct partition_stats {
  int64_t records = 0;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
};

class producer {
 public:
  producer(context& ctx, std::string topic, int16_t acks, int64_t batch_bytes)
      : ctx_(ctx), topic_(std::move(topic)), acks_(acks), batch_bytes_(batch_bytes) {
    partitions_ = static_cast<int32_t>(ctx_.kafka().topic(topic_, true).partitions.size());
  }
  int32_t partitions() const { return partitions_; }

  /// Adds a record to `partition`'s open batch; true when that batch reached batch_bytes (time to send).
  bool add(int32_t partition, std::optional<std::string_view> key, std::string_view value,
           const std::vector<storage::record_header>& headers, int64_t& record_bytes) {
    auto& b = open_[partition];
    const size_t before = b.size_bytes();
    b.add(key, value, now_ms(), headers);
    record_bytes = static_cast<int64_t>(b.size_bytes() - before);
    ++total_;
    return static_cast<int64_t>(b.size_bytes()) >= batch_bytes_;
  }

  /// Sends every open batch: one Produce request per leader, each partition's batch once; retriable errors
  /// refresh the metadata and resend (5 attempts).
  void flush() {
    std::map<int32_t, std::pair<std::vector<uint8_t>, int32_t>> pending;  // partition -> (batch, records)
    for (auto& [p, b] : open_)
      if (b.record_count() > 0) pending[p] = {b.build(), b.record_count()};
    open_.clear();
    for (int attempt = 1; !pending.empty(); ++attempt) {
      const topic_info topic = ctx_.kafka().topic(topic_);
      std::map<int32_t, std::vector<int32_t>> by_leader;
      for (const auto& [p, _] : pending) by_leader[topic.partitions.at(p).leader].push_back(p);
      protocol::error_code last_error = protocol::error_code::none;
      std::optional<std::string> last_message;
      int32_t last_partition = -1;
      for (const auto& [leader, parts] : by_leader) {
        auto& c = ctx_.kafka().node(leader);
        const int16_t v = c.pick(protocol::api_key::produce, 3, 11);
        protocol::produce_request req;
        req.acks = acks_;
        req.timeout_ms = static_cast<int32_t>(ctx_.options().timeout.count());
        protocol::produce_request::topic_produce_data td;
        td.name = topic_;
        for (int32_t p : parts) {
          const auto& bytes = pending[p].first;
          td.partition_data.push_back({p, protocol::records::from_memory(std::span<const uint8_t>(bytes)), {}});
        }
        req.topic_data.push_back(std::move(td));
        if (acks_ == 0) {
          c.send(req, v);
          for (int32_t p : parts) {
            stats_[p].records += pending[p].second;
            pending.erase(p);
          }
          continue;
        }
        // acks=all waits for the ISR: give the broker its timeout plus the way there and back.
        auto resp = c.call<protocol::produce_response>(req, v, ctx_.options().timeout * 2);
        for (const auto& tr : resp.responses)
          for (const auto& pr : tr.partition_responses) {
            auto it = pending.find(pr.index);
            if (it == pending.end()) continue;
            if (pr.error_code == protocol::error_code::none) {
              auto& s = stats_[pr.index];
              if (s.first_offset < 0) s.first_offset = pr.base_offset;
              s.last_offset = pr.base_offset + it->second.second - 1;
              s.records += it->second.second;
              pending.erase(it);
            } else if (!retriable(pr.error_code) || attempt >= 5) {
              std::optional<std::string> msg = pr.error_message;
              if (!pr.record_errors.empty() && pr.record_errors.front().batch_index_error_message)
                msg = *pr.record_errors.front().batch_index_error_message;
              kafka_failure(pr.error_code, msg, fmt::format("Produce to {}-{}", topic_, pr.index));
            } else {
              last_error = pr.error_code, last_message = pr.error_message, last_partition = pr.index;
            }
          }
      }
      if (!pending.empty()) {
        if (attempt >= 5)
          kafka_failure(last_error, last_message, fmt::format("Produce to {}-{}", topic_, last_partition));
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
      }
    }
  }

  int64_t total() const { return total_; }
  const std::map<int32_t, partition_stats>& stats() const { return stats_; }

 private:
  context& ctx_;
  std::string topic_;
  int16_t acks_;
  int64_t batch_bytes_;
  int32_t partitions_ = 0;
  int64_t total_ = 0;
  std::map<int32_t, storage::record_batch_builder> open_;
  std::map<int32_t, partition_stats> stats_;
};

}  // namespace

int produce(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("key-separator,K", po::value<std::string>(), "split each line at the first SEP into key and value (no SEP in a line: no key)")
      ("partition,p", po::value<int32_t>(), "send every record to this partition (default: the Java client's partitioner)")
      ("header,H", po::value<std::vector<std::string>>()->composing(), "header key=value on every record (repeatable)")
      ("acks", po::value<std::string>()->default_value("all"), "all (-1), 1 or 0")
      ("batch-bytes", po::value<int64_t>()->default_value(16384), "batch size per partition (the producer's batch.size)")
      ("linger-ms", po::value<int64_t>()->default_value(100), "send open batches when stdin is idle this long")
      ("quiet,q", po::bool_switch(), "no summary on stderr");
  po::options_description hidden;
  hidden.add_options()("topic", po::value<std::string>(), "topic");
  po::positional_options_description positional;
  positional.add("topic", 1);
  po::variables_map vm;
  if (!parse_args(ctx, args, "produce", "produce NAME [--key-separator SEP] [--partition P] [--header k=v]... [--acks all|1|0]",
                  "Sends one record per line of stdin (empty lines are skipped). Keyed records go to\n"
                  "(murmur2(key) & 0x7fffffff) % partitions, keyless ones stick to one partition per batch, as the\n"
                  "Java client's default partitioner.",
                  options, hidden, positional, vm))
    return 0;
  if (!vm.count("topic")) usage_error("produce: give a topic name");
  const std::string topic = vm["topic"].as<std::string>();
  const std::string acks_text = vm["acks"].as<std::string>();
  int16_t acks;
  if (acks_text == "all" || acks_text == "-1") acks = -1;
  else if (acks_text == "1") acks = 1;
  else if (acks_text == "0") acks = 0;
  else usage_error("--acks takes all, -1, 1 or 0, got '" + acks_text + "'");
  std::optional<std::string> sep;
  if (vm.count("key-separator")) {
    sep = vm["key-separator"].as<std::string>();
    if (sep->empty()) usage_error("--key-separator must not be empty");
  }
  std::vector<std::pair<std::string, std::string>> header_values;
  if (vm.count("header"))
    for (const auto& kv : vm["header"].as<std::vector<std::string>>()) header_values.push_back(split_key_value(kv, "--header"));
  std::vector<storage::record_header> headers;
  for (const auto& [k, v] : header_values) headers.push_back({k, std::string_view(v)});
  const int64_t batch_bytes = vm["batch-bytes"].as<int64_t>();
  if (batch_bytes < 1 || batch_bytes > (1 << 20)) usage_error("--batch-bytes must be in 1..1048576");
  const auto linger = std::chrono::milliseconds(std::max<int64_t>(0, vm["linger-ms"].as<int64_t>()));

  producer prod(ctx, topic, acks, batch_bytes);
  std::optional<int32_t> fixed;
  if (vm.count("partition")) {
    fixed = vm["partition"].as<int32_t>();
    if (*fixed < 0 || *fixed >= prod.partitions())
      usage_error(fmt::format("--partition {}: topic '{}' has partitions 0-{}", *fixed, topic, prod.partitions() - 1));
  }
  sticky_partitioner partitioner(prod.partitions(), batch_bytes, std::random_device{}());
  const bool progress = !vm["quiet"].as<bool>() && ::isatty(2);
  line_reader in;
  std::string line;
  for (;;) {
    auto st = in.next(line, linger);
    if (st == line_reader::status::eof) break;
    if (st == line_reader::status::idle) {
      prod.flush();
      continue;
    }
    if (line.empty()) continue;
    std::optional<std::string_view> key;
    std::string_view value = line;
    if (sep) {
      if (size_t at = line.find(*sep); at != std::string::npos) {
        key = std::string_view(line).substr(0, at);
        value = std::string_view(line).substr(at + sep->size());
      }
    }
    int32_t partition;
    int64_t bytes = 0;
    if (fixed) partition = *fixed;
    else if (key) partition = partitioner.for_key(*key);
    else partition = partitioner.next_keyless();  // accounted below, once the record's size is known
    const bool full = prod.add(partition, key, value, headers, bytes);
    if (!fixed && !key) partitioner.account_keyless(bytes);
    if (full) prod.flush();
    if (progress && prod.total() % 100000 == 0) ctx.err << "\rproduced " << prod.total() << " records" << std::flush;
  }
  prod.flush();
  if (progress && prod.total() >= 100000) ctx.err << "\n";

  if (ctx.json()) {
    boost::json::array parts;
    for (const auto& [p, s] : prod.stats())
      parts.push_back(boost::json::object{{"partition", p}, {"records", s.records}, {"first_offset", s.first_offset},
                                          {"last_offset", s.last_offset}});
    print_json(ctx.out, boost::json::object{{"topic", topic}, {"records", prod.total()}, {"partitions", std::move(parts)}});
  } else if (!vm["quiet"].as<bool>()) {
    std::string per;
    for (const auto& [p, s] : prod.stats()) per += fmt::format("{}{}: {}", per.empty() ? "" : ", ", p, s.records);
    ctx.err << fmt::format("produced {} records to '{}'{}\n", prod.total(), topic,
                             per.empty() ? "" : " (partition: records " + per + ")");
  }
  return 0;
}

}  // namespace sluice::cli
