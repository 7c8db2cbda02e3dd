// sluice consume NAME: prints records of a topic, from partitions assigned directly (every partition, or
// --partition ones) or as a member of a consumer group (--group, cli/group_consumer.cc), starting at the
// beginning, the end, an offset or the first offset at or after a timestamp (ListOffsets, KIP-79).
#include <fmt/format.h>

#include <ostream>

#include "cli/commands.h"
#include "cli/fetcher.h"
#include "cli/offsets.h"
#include "cli/record_format.h"

namespace sluice::cli {

namespace {

struct start_point {
  enum class kind { beginning, end, offset, timestamp } k = kind::beginning;
  int64_t value = 0;
};

start_point parse_from(const std::string& s) {
  auto number = [&](std::string_view digits) -> int64_t {
    if (digits.empty()) usage_error("--from takes beginning, end, OFFSET or @TIMESTAMP_MS, got '" + s + "'");
    int64_t v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10)
        usage_error("--from takes beginning, end, OFFSET or @TIMESTAMP_MS, got '" + s + "'");
      v = v * 10 + (c - '0');
    }
    return v;
  };
  if (s == "beginning" || s == "start" || s == "earliest") return {start_point::kind::beginning, 0};
  if (s == "end" || s == "latest") return {start_point::kind::end, 0};
  if (!s.empty() && s[0] == '@') return {start_point::kind::timestamp, number(std::string_view(s).substr(1))};
  return {start_point::kind::offset, number(s)};
}

}  // namespace

std::map<int32_t, int64_t> resolve_start(cluster& kafka, const topic_info& topic, const std::vector<int32_t>& partitions,
                                         const std::string& from) {
  const start_point sp = parse_from(from);
  std::map<int32_t, int64_t> out;
  switch (sp.k) {
    case start_point::kind::beginning: return list_offsets(kafka, topic, partitions, earliest_timestamp);
    case start_point::kind::end: return list_offsets(kafka, topic, partitions, latest_timestamp);
    case start_point::kind::offset:
      for (int32_t p : partitions) out[p] = sp.value;
      return out;
    case start_point::kind::timestamp: {
      out = list_offsets(kafka, topic, partitions, sp.value);
      // No record at or after the timestamp: start at the end (Kafka answers offset -1).
      std::vector<int32_t> none;
      for (auto& [p, o] : out)
        if (o < 0) none.push_back(p);
      if (!none.empty())
        for (auto& [p, o] : list_offsets(kafka, topic, none, latest_timestamp)) out[p] = o;
      return out;
    }
  }
  return out;
}

void print_record(context& ctx, const consumed_record& r, const std::string& format) {
  if (ctx.json()) print_json(ctx.out, record_json(r));
  else ctx.out << format_record(format, r);
}

int consume(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("from,o", po::value<std::string>()->default_value("beginning"), "beginning, end, OFFSET or @TIMESTAMP_MS (with --group: where a partition without a committed offset starts, default end as Kafka's auto.offset.reset=latest)")
      ("num,n", po::value<int64_t>(), "stop after N records")
      ("exit,e", po::bool_switch(), "stop at the end of the partitions (their high watermark)")
      ("partition,p", po::value<std::vector<int32_t>>()->composing(), "read only this partition (repeatable; not with --group)")
      ("group,g", po::value<std::string>(), "consume as a member of this consumer group (commits its offsets)")
      ("format,f", po::value<std::string>()->default_value("%s\\n"), "kcat's placeholders: %t %p %o %T %k %s %K %S %h %%, escapes \\n \\t \\r \\\\");
  po::options_description hidden;
  hidden.add_options()("topic", po::value<std::string>(), "topic");
  po::positional_options_description positional;
  positional.add("topic", 1);
  po::variables_map vm;
  if (!parse_args(ctx, args, "consume",
                  "consume NAME [--group G] [--from beginning|end|OFFSET|@TIMESTAMP_MS] [--num N] [--exit] [--partition P]... [--format FMT]",
                  "Prints records of a topic: with --json one JSON object per line, else --format per record.",
                  options, hidden, positional, vm))
    return 0;
  if (!vm.count("topic")) usage_error("consume: give a topic name");
  const std::string topic_name = vm["topic"].as<std::string>();
  const std::string format = unescape_format(vm["format"].as<std::string>());
  const int64_t num = vm.count("num") ? vm["num"].as<int64_t>() : -1;
  if (vm.count("num") && num < 0) usage_error("--num must be >= 0");
  const bool exit_at_end = vm["exit"].as<bool>();
  const std::string from = vm["from"].as<std::string>();
  parse_from(from);  // usage errors before any connection
  if (vm.count("group")) {
    if (vm.count("partition")) usage_error("consume: --partition and --group do not go together");
    // Kafka's auto.offset.reset defaults to latest: a group member starts at the end unless --from says otherwise.
    return consume_group(ctx, topic_name, vm["group"].as<std::string>(), vm["from"].defaulted() ? "end" : from, num,
                         exit_at_end, format);
  }
  auto& kafka = ctx.kafka();
  const topic_info topic = kafka.topic(topic_name);
  std::vector<int32_t> partitions;
  if (vm.count("partition")) {
    partitions = vm["partition"].as<std::vector<int32_t>>();
    for (int32_t p : partitions)
      if (p < 0 || static_cast<size_t>(p) >= topic.partitions.size())
        usage_error(fmt::format("--partition {}: topic '{}' has partitions 0-{}", p, topic_name, topic.partitions.size() - 1));
  } else {
    for (const auto& p : topic.partitions) partitions.push_back(p.partition);
  }
  if (num == 0) return 0;
  fetcher f(ctx, topic_name, resolve_start(kafka, topic, partitions, from));
  int64_t printed = 0;
  for (;;) {
    const bool more = f.poll([&](const consumed_record& r) {
      print_record(ctx, r, format);
      return !(num >= 0 && ++printed >= num);
    });
    ctx.out.flush();
    if (!more) return 0;
    if (exit_at_end && f.at_end()) return 0;
  }
}

}  // namespace sluice::cli
