// sluice group list|describe|reset-offsets|delete: ListGroups on every broker, DescribeGroups + OffsetFetch +
// ListOffsets (lag as kafka-consumer-groups computes it: the log end offset, i.e. the high watermark for
// read_uncommitted, less the committed offset), an admin OffsetCommit while the group is empty, and DeleteGroups,
// each group's requests to its coordinator (FindCoordinator), as the Java AdminClient routes them.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <ostream>
#include <set>

#include "cli/commands.h"
#include "cli/group_client.h"
#include "cli/offsets.h"
#include "protocol/messages/delete_groups.h"
#include "protocol/messages/list_groups.h"

namespace sluice::cli {

namespace {

using protocol::error_code;
namespace json = boost::json;

json::value json_or_null(const std::optional<int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }
std::string text_or_dash(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::vector<std::string> group_names(const po::variables_map& vm, const char* command) {
  if (!vm.count("group")) usage_error(fmt::format("group {}: give a group id", command));
  return vm["group"].as<std::vector<std::string>>();
}

/// The log end offsets of `partitions` (topic -> partitions); partitions of topics that do not exist (any more) are
/// left out, as kafka-consumer-groups prints "-" for them.
std::map<topic_partition, int64_t> log_end_offsets(cluster& kafka, const std::map<std::string, std::set<int32_t>>& partitions) {
  std::map<topic_partition, int64_t> out;
  if (partitions.empty()) return out;
  std::vector<std::string> names;
  for (const auto& [t, _] : partitions) names.push_back(t);
  const cluster_metadata meta = kafka.refresh(names);
  for (const auto& [t, ps] : partitions) {
    const topic_info* ti = meta.find(t);
    if (!ti || ti->error != error_code::none) continue;
    std::vector<int32_t> list;
    for (int32_t p : ps)
      if (static_cast<size_t>(p) < ti->partitions.size() && ti->partitions[p].leader >= 0) list.push_back(p);
    if (list.empty()) continue;
    for (const auto& [p, o] : list_offsets(kafka, *ti, list, latest_timestamp)) out[{t, p}] = o;
  }
  return out;
}

}  // namespace

// ---- list --------------------------------------------------------------------------------------------------------

int group_list(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("state,s", po::value<std::vector<std::string>>()->composing(), "only groups in this state (repeatable: Stable, Empty, PreparingRebalance, CompletingRebalance, Dead; ListGroups v4+, KIP-518)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "group list", "group list [--state S]...",
                  "Lists the groups of every broker (ListGroups to each, as kafka-consumer-groups --list).", options, {},
                  {}, vm))
    return 0;
  std::vector<std::string> states;
  if (vm.count("state")) states = vm["state"].as<std::vector<std::string>>();
  auto& kafka = ctx.kafka();
  const auto brokers = kafka.refresh(std::vector<std::string>{}).brokers;
  struct listed {
    std::string protocol_type, state, type;
    int32_t coordinator;
  };
  std::map<std::string, listed> groups;
  for (const auto& b : brokers) {
    auto& c = kafka.node(b.id);
    const int16_t v = c.pick(protocol::api_key::list_groups, 0, 5);
    if (!states.empty() && v < 4)
      throw failure(exit_code::kafka_error,
                    fmt::format("UNSUPPORTED_VERSION: broker {} cannot filter groups by state (ListGroups v{})", b.id, v));
    protocol::list_groups_request req;
    req.states_filter = states;
    auto resp = c.call<protocol::list_groups_response>(req, v);
    if (resp.error_code != error_code::none) kafka_failure(resp.error_code, std::nullopt, fmt::format("ListGroups on broker {}", b.id));
    for (const auto& g : resp.groups)
      groups[g.group_id] = {g.protocol_type, v >= 4 ? g.group_state : std::string(), v >= 5 ? g.group_type : std::string(), b.id};
  }
  if (ctx.json()) {
    json::array a;
    for (const auto& [id, g] : groups)
      a.push_back(json::object{{"group_id", id},
                               {"protocol_type", g.protocol_type},
                               {"state", g.state.empty() ? json::value(nullptr) : json::value(g.state)},
                               {"type", g.type.empty() ? json::value(nullptr) : json::value(g.type)},
                               {"coordinator", g.coordinator}});
    print_json(ctx.out, json::object{{"groups", std::move(a)}});
    return 0;
  }
  table t({"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"});
  for (const auto& [id, g] : groups)
    t.add({id, g.state.empty() ? "-" : g.state, g.protocol_type.empty() ? "-" : g.protocol_type, std::to_string(g.coordinator)});
  t.print(ctx.out);
  return 0;
}

// ---- describe ----------------------------------------------------------------------------------------------------

namespace {

struct member_view {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id, host;
  assignment assigned;
};

struct offset_row {
  std::string topic;
  int32_t partition = 0;
  std::optional<int64_t> current, log_end, lag;
  const member_view* member = nullptr;
};

struct group_view {
  std::string group_id, state, protocol_type, protocol, coordinator;
  std::vector<member_view> members;
  std::vector<offset_row> rows;
};

group_view describe_one(cluster& kafka, const std::string& group) {
  auto& c = kafka.coordinator(group);
  auto g = describe_group(c, group);
  if (g.group_state == "Dead")
    throw failure(exit_code::kafka_error, fmt::format("GROUP_ID_NOT_FOUND: Consumer group '{}' does not exist.", group));
  group_view v;
  v.group_id = group;
  v.state = g.group_state;
  v.protocol_type = g.protocol_type;
  v.protocol = g.protocol_data;
  v.coordinator = c.where().text();
  for (const auto& m : g.members)
    v.members.push_back({m.member_id, m.group_instance_id, m.client_id, m.client_host,
                         g.protocol_type == "consumer" ? decode_assignment(m.member_assignment) : assignment{}});
  std::sort(v.members.begin(), v.members.end(), [](const auto& a, const auto& b) { return a.member_id < b.member_id; });
  const auto committed = offset_fetch(c, group);
  std::map<topic_partition, const member_view*> owner;
  std::map<std::string, std::set<int32_t>> partitions;
  for (const auto& m : v.members)
    for (const auto& [t, ps] : m.assigned)
      for (int32_t p : ps) {
        owner[{t, p}] = &m;
        partitions[t].insert(p);
      }
  for (const auto& [tp, _] : committed) partitions[tp.first].insert(tp.second);
  const auto ends = log_end_offsets(kafka, partitions);
  for (const auto& [t, ps] : partitions)
    for (int32_t p : ps) {
      offset_row r;
      r.topic = t;
      r.partition = p;
      if (auto it = committed.find({t, p}); it != committed.end()) r.current = it->second.offset;
      if (auto it = ends.find({t, p}); it != ends.end()) r.log_end = it->second;
      if (r.current && r.log_end) r.lag = std::max<int64_t>(0, *r.log_end - *r.current);
      if (auto it = owner.find({t, p}); it != owner.end()) r.member = it->second;
      v.rows.push_back(std::move(r));
    }
  return v;
}

json::object view_json(const group_view& v) {
  json::array members, offsets;
  for (const auto& m : v.members) {
    json::array a;
    for (const auto& [t, ps] : m.assigned) {
      json::array pa;
      for (int32_t p : ps) pa.push_back(p);
      a.push_back(json::object{{"topic", t}, {"partitions", std::move(pa)}});
    }
    members.push_back(json::object{{"member_id", m.member_id},
                                   {"group_instance_id", m.group_instance_id ? json::value(*m.group_instance_id) : json::value(nullptr)},
                                   {"client_id", m.client_id},
                                   {"host", m.host},
                                   {"assignment", std::move(a)}});
  }
  for (const auto& r : v.rows)
    offsets.push_back(json::object{{"topic", r.topic},
                                   {"partition", r.partition},
                                   {"current_offset", json_or_null(r.current)},
                                   {"log_end_offset", json_or_null(r.log_end)},
                                   {"lag", json_or_null(r.lag)},
                                   {"consumer_id", r.member ? json::value(r.member->member_id) : json::value(nullptr)},
                                   {"host", r.member ? json::value(r.member->host) : json::value(nullptr)},
                                   {"client_id", r.member ? json::value(r.member->client_id) : json::value(nullptr)}});
  return json::object{{"group_id", v.group_id},   {"state", v.state},
                      {"protocol_type", v.protocol_type}, {"protocol", v.protocol},
                      {"coordinator", v.coordinator},     {"members", std::move(members)},
                      {"offsets", std::move(offsets)}};
}

}  // namespace

int group_describe(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("members", po::bool_switch(), "print the members (CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT) instead of the offsets")
      ("state", po::bool_switch(), "print the group's state (COORDINATOR ASSIGNMENT-STRATEGY STATE #MEMBERS) instead of the offsets");
  po::variables_map vm;
  if (!parse_args(ctx, args, "group describe", "group describe GROUP... [--members | --state]",
                  "A group's committed offsets, log end offsets and lag per partition with the member that owns it, as\n"
                  "kafka-consumer-groups --describe prints them (DescribeGroups, OffsetFetch, ListOffsets).",
                  options, "group", vm))
    return 0;
  const auto names = group_names(vm, "describe");
  const bool members = vm["members"].as<bool>(), state = vm["state"].as<bool>();
  if (members && state) usage_error("group describe: --members and --state do not go together");
  std::vector<group_view> views;
  for (const auto& g : names) views.push_back(describe_one(ctx.kafka(), g));
  if (ctx.json()) {
    json::array a;
    for (const auto& v : views) a.push_back(view_json(v));
    print_json(ctx.out, json::object{{"groups", std::move(a)}});
    return 0;
  }
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    if (i) ctx.out << "\n";
    if (state) {
      table t({"GROUP", "COORDINATOR", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"});
      t.add({v.group_id, v.coordinator, v.protocol.empty() ? "-" : v.protocol, v.state, std::to_string(v.members.size())});
      t.print(ctx.out);
      continue;
    }
    if (v.members.empty()) ctx.err << fmt::format("Consumer group '{}' has no active members.\n", v.group_id);
    if (members) {
      table t({"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"});
      for (const auto& m : v.members) {
        size_t n = 0;
        std::string a;
        for (const auto& [topic, ps] : m.assigned) {
          n += ps.size();
          a += (a.empty() ? "" : ",") + topic + "(" + join_ids(ps) + ")";
        }
        t.add({v.group_id, m.member_id, m.host, m.client_id, std::to_string(n), a.empty() ? "-" : a});
      }
      t.print(ctx.out);
      continue;
    }
    table t({"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"});
    std::set<const member_view*> with_rows;
    for (const auto& r : v.rows) {
      with_rows.insert(r.member);
      t.add({v.group_id, r.topic, std::to_string(r.partition), text_or_dash(r.current), text_or_dash(r.log_end),
             text_or_dash(r.lag), r.member ? r.member->member_id : "-", r.member ? r.member->host : "-",
             r.member ? r.member->client_id : "-"});
    }
    for (const auto& m : v.members)  // members without partitions: one row of dashes, as Kafka's tool prints them
      if (!with_rows.count(&m)) t.add({v.group_id, "-", "-", "-", "-", "-", m.member_id, m.host, m.client_id});
    t.print(ctx.out);
  }
  return 0;
}

// ---- reset-offsets -----------------------------------------------------------------------------------------------

namespace {

/// Kafka's tool's --to-datetime: YYYY-MM-DDTHH:mm:SS[.sss] with an optional zone (Z, +HH:MM, -HH:MM, +HHMM);
/// without a zone, local time (as Kafka's Utils.getDateTime). Milliseconds since the epoch.
int64_t parse_datetime(const std::string& s) {
  int y, mo, d, h, mi, sec, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
    usage_error("--to-datetime takes YYYY-MM-DDTHH:mm:SS.sss[Z|+HH:MM], got '" + s + "'");
  std::string rest = s.substr(19);
  int64_t millis = 0;
  if (!rest.empty() && rest[0] == '.') {
    size_t k = 1;
    int digits = 0;
    while (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k]))) {
      if (digits < 3) millis = millis * 10 + (rest[k] - '0'), ++digits;
      ++k;
    }
    if (digits == 0) usage_error("--to-datetime: no digits after '.' in '" + s + "'");
    while (digits++ < 3) millis *= 10;
    rest = rest.substr(k);
  }
  std::tm tm{};
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
  int64_t seconds;
  if (rest.empty()) {
    tm.tm_isdst = -1;
    seconds = static_cast<int64_t>(std::mktime(&tm));
  } else {
    seconds = static_cast<int64_t>(timegm(&tm));
    if (rest != "Z") {
      int zh = 0, zm = 0;
      const char sign = rest[0];
      std::string z = rest.substr(1);
      z.erase(std::remove(z.begin(), z.end(), ':'), z.end());
      if ((sign != '+' && sign != '-') || z.size() != 4 || !std::all_of(z.begin(), z.end(), ::isdigit))
        usage_error("--to-datetime: bad time zone in '" + s + "'");
      zh = std::stoi(z.substr(0, 2)), zm = std::stoi(z.substr(2));
      seconds -= (sign == '+' ? 1 : -1) * (zh * 3600 + zm * 60);
    }
  }
  return seconds * 1000 + millis;
}

/// --topic T or T:0,1,2.
std::pair<std::string, std::vector<int32_t>> parse_topic_spec(const std::string& s) {
  auto colon = s.find(':');
  if (colon == std::string::npos) return {s, {}};
  std::pair<std::string, std::vector<int32_t>> out{s.substr(0, colon), {}};
  std::string list = s.substr(colon + 1);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (item.empty() || !std::all_of(item.begin(), item.end(), ::isdigit) || item.size() > 9)
      usage_error("--topic takes TOPIC or TOPIC:P,P,..., got '" + s + "'");
    out.second.push_back(std::stoi(item));
  }
  if (out.first.empty()) usage_error("--topic: no topic name in '" + s + "'");
  return out;
}

}  // namespace

int group_reset_offsets(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("topic,t", po::value<std::vector<std::string>>()->composing(), "TOPIC (every partition) or TOPIC:P,P,... (repeatable)")
      ("all-topics", po::bool_switch(), "every partition the group has a committed offset for")
      ("to-earliest", po::bool_switch(), "the log start offset")
      ("to-latest", po::bool_switch(), "the log end offset")
      ("to-offset", po::value<int64_t>(), "this offset (kept within log start and log end, as Kafka's tool)")
      ("shift-by", po::value<int64_t>(), "the committed offset plus N (N may be negative; kept within the log)")
      ("to-datetime", po::value<std::string>(), "the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[Z|+HH:MM] (no zone: local time)")
      ("to-timestamp", po::value<int64_t>(), "the first offset at or after this timestamp (ms since the epoch)")
      ("execute", po::bool_switch(), "commit the new offsets (without it: a dry run that only prints them)")
      ("dry-run", po::bool_switch(), "print the new offsets without committing them (the default)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "group reset-offsets",
                  "group reset-offsets GROUP (--topic T[:P,...]... | --all-topics) (--to-earliest | --to-latest |\n"
                  "       --to-offset N | --shift-by N | --to-datetime DT | --to-timestamp MS) [--execute | --dry-run]",
                  "Sets a group's committed offsets (OffsetCommit as an admin: generation -1, no member id), as\n"
                  "kafka-consumer-groups --reset-offsets. The group must have no members. Without --execute it is a dry run.",
                  options, "group", vm))
    return 0;
  const auto names = group_names(vm, "reset-offsets");
  if (names.size() != 1) usage_error("group reset-offsets: give exactly one group id");
  const std::string& group = names.front();
  const bool all_topics = vm["all-topics"].as<bool>();
  if (all_topics == (vm.count("topic") != 0)) usage_error("group reset-offsets: give --topic T[:P,...] or --all-topics (one of them)");
  const int scenarios = int(vm["to-earliest"].as<bool>()) + int(vm["to-latest"].as<bool>()) + int(vm.count("to-offset")) +
                        int(vm.count("shift-by")) + int(vm.count("to-datetime")) + int(vm.count("to-timestamp"));
  if (scenarios != 1)
    usage_error("group reset-offsets: give one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime, --to-timestamp");
  const bool execute = vm["execute"].as<bool>();
  if (execute && vm["dry-run"].as<bool>()) usage_error("group reset-offsets: --execute and --dry-run do not go together");
  std::optional<int64_t> timestamp;
  if (vm.count("to-datetime")) timestamp = parse_datetime(vm["to-datetime"].as<std::string>());
  if (vm.count("to-timestamp")) timestamp = vm["to-timestamp"].as<int64_t>();
  if (vm.count("to-offset") && vm["to-offset"].as<int64_t>() < 0) usage_error("--to-offset must be >= 0");

  auto& kafka = ctx.kafka();
  auto& coordinator = kafka.coordinator(group);
  // Kafka's tool: only an inactive group (Empty, or Dead: no such group yet) may be reset; the coordinator would also
  // refuse an admin commit to a group with members (UNKNOWN_MEMBER_ID).
  const auto described = describe_group(coordinator, group);
  if (described.group_state != "Empty" && described.group_state != "Dead")
    throw failure(exit_code::kafka_error,
                  fmt::format("{}: Assignments can only be reset if the group '{}' is inactive, but the current state is {}.",
                              protocol::error_name(error_code::non_empty_group), group, described.group_state));
  const auto committed = offset_fetch(coordinator, group);

  std::map<std::string, std::set<int32_t>> partitions;
  if (all_topics) {
    for (const auto& [tp, _] : committed) partitions[tp.first].insert(tp.second);
  } else {
    for (const auto& spec : vm["topic"].as<std::vector<std::string>>()) {
      auto [name, ps] = parse_topic_spec(spec);
      const topic_info& ti = kafka.topic(name);
      if (ps.empty())
        for (const auto& p : ti.partitions) partitions[name].insert(p.partition);
      for (int32_t p : ps) {
        if (static_cast<size_t>(p) >= ti.partitions.size())
          throw failure(exit_code::kafka_error, fmt::format("UNKNOWN_TOPIC_OR_PARTITION: topic '{}' has no partition {}", name, p));
        partitions[name].insert(p);
      }
    }
  }
  std::map<topic_partition, int64_t> target;
  for (const auto& [name, ps] : partitions) {
    const topic_info ti = kafka.topic(name);
    const std::vector<int32_t> list(ps.begin(), ps.end());
    const auto earliest = list_offsets(kafka, ti, list, earliest_timestamp);
    const auto latest = list_offsets(kafka, ti, list, latest_timestamp);
    std::map<int32_t, int64_t> by_time;
    if (timestamp) by_time = list_offsets(kafka, ti, list, *timestamp);
    for (int32_t p : list) {
      const int64_t lo = earliest.at(p), hi = latest.at(p);
      int64_t o = 0;
      if (vm["to-earliest"].as<bool>()) o = lo;
      else if (vm["to-latest"].as<bool>()) o = hi;
      else if (vm.count("to-offset")) o = std::clamp(vm["to-offset"].as<int64_t>(), lo, hi);
      else if (vm.count("shift-by")) {
        auto c = committed.find({name, p});
        if (c == committed.end())
          usage_error(fmt::format("--shift-by: partition {}-{} has no committed offset to shift", name, p));
        o = std::clamp(c->second.offset + vm["shift-by"].as<int64_t>(), lo, hi);
      } else {
        o = by_time.at(p) < 0 ? hi : by_time.at(p);  // no record at or after it: the log end, as Kafka's tool
      }
      target[{name, p}] = o;
    }
  }
  std::map<topic_partition, error_code> errors;
  if (execute) errors = offset_commit(coordinator, group, -1, "", target);
  if (ctx.json()) {
    json::array a;
    for (const auto& [tp, o] : target) {
      auto c = committed.find(tp);
      auto e = errors.find(tp);
      a.push_back(json::object{{"topic", tp.first},
                               {"partition", tp.second},
                               {"previous_offset", c != committed.end() ? json::value(c->second.offset) : json::value(nullptr)},
                               {"new_offset", o},
                               {"error", e != errors.end() && e->second != error_code::none ? json::value(protocol::error_name(e->second))
                                                                                              : json::value(nullptr)}});
    }
    print_json(ctx.out, json::object{{"group_id", group}, {"executed", execute}, {"partitions", std::move(a)}});
  } else {
    table t({"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"});
    for (const auto& [tp, o] : target) t.add({group, tp.first, std::to_string(tp.second), std::to_string(o)});
    t.print(ctx.out);
    if (!execute) ctx.err << "dry run: nothing committed (add --execute to commit these offsets)\n";
  }
  for (const auto& [tp, e] : errors)
    if (e != error_code::none)
      kafka_failure(e, std::nullopt, fmt::format("OffsetCommit of group '{}' ({}-{})", group, tp.first, tp.second));
  return 0;
}

// ---- delete ------------------------------------------------------------------------------------------------------

int group_delete(context& ctx, const args_t& args) {
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_args(ctx, args, "group delete", "group delete GROUP...",
                  "Deletes groups and their committed offsets (DeleteGroups to each group's coordinator); a group with\n"
                  "members is refused with NON_EMPTY_GROUP.",
                  options, "group", vm))
    return 0;
  const auto names = group_names(vm, "delete");
  auto& kafka = ctx.kafka();
  std::vector<std::pair<std::string, error_code>> results;
  for (const auto& g : names) {
    auto& c = kafka.coordinator(g);
    const int16_t v = c.pick(protocol::api_key::delete_groups, 0, 2);
    protocol::delete_groups_request req;
    req.groups_names.push_back(g);
    auto resp = c.call<protocol::delete_groups_response>(req, v);
    error_code e = error_code::unknown_server_error;
    for (const auto& r : resp.results)
      if (r.group_id == g) e = r.error_code;
    results.emplace_back(g, e);
  }
  if (ctx.json()) {
    json::array a;
    for (const auto& [g, e] : results)
      a.push_back(json::object{{"group_id", g}, {"error", e == error_code::none ? json::value(nullptr) : json::value(protocol::error_name(e))}});
    print_json(ctx.out, json::object{{"groups", std::move(a)}});
  } else {
    table t({"GROUP", "STATUS"});
    for (const auto& [g, e] : results) t.add({g, e == error_code::none ? "OK" : std::string(protocol::error_name(e))});
    t.print(ctx.out);
  }
  for (const auto& [g, e] : results)
    if (e != error_code::none) kafka_failure(e, std::nullopt, fmt::format("DeleteGroups of '{}'", g));
  return 0;
}

}  // namespace sluice::cli
