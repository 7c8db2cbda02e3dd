// /v1/groups: list, describe (members, assignments, committed offsets and lag), delete, reset offsets (broker/http/
// README.md, openapi.yaml). Lag is computed as kafka-consumer-groups does: the partition's latest offset from
// ListOffsets (read_uncommitted: the high watermark) less the committed offset from OffsetFetch.
#include <map>
#include <set>
#include <variant>

#include "broker/handlers/handlers.h"
#include "broker/http/admin_kafka.h"
#include "broker/partition.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"
#include "protocol/reader.h"

namespace sluice::broker::http {

using beast_http::verb;
using protocol::error_code;
namespace asio = boost::asio;

namespace {

/// ConsumerProtocolAssignment (the "consumer" protocol type's member assignment): version int16, then
/// [topic string, [partition int32]], then user data. Empty when the bytes are not one.
std::vector<std::pair<std::string, std::vector<int32_t>>> decode_assignment(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<std::string, std::vector<int32_t>>> out;
  if (bytes.size() < 6) return out;
  protocol::reader r(bytes);
  (void)r.read_int16("version");
  const int32_t topics = r.read_int32("topics");
  if (!r.ok() || topics < 0 || static_cast<size_t>(topics) > bytes.size()) return {};
  for (int32_t i = 0; i < topics && r.ok(); ++i) {
    std::string name = r.read_string("topic");
    const int32_t n = r.read_int32("partitions");
    if (!r.ok() || n < 0 || static_cast<size_t>(n) > r.remaining() / 4) return {};
    std::vector<int32_t> partitions;
    for (int32_t k = 0; k < n; ++k) partitions.push_back(r.read_int32("partition"));
    out.emplace_back(std::move(name), std::move(partitions));
  }
  if (!r.ok()) return {};
  return out;
}

asio::awaitable<std::optional<protocol::describe_groups_response::described_group>> describe(kafka_caller& kc,
                                                                                               const std::string& group) {
  protocol::describe_groups_request dg;
  dg.groups.push_back(group);
  auto op = kc.call(&handlers::describe_groups, dg, 5);
  auto resp = co_await std::move(op);
  if (resp.groups.empty()) co_return std::nullopt;
  co_return resp.groups.front();
}

/// Every committed offset of the group (OffsetFetch v8, all topics).
asio::awaitable<std::pair<error_code, std::map<topic_partition, protocol::offset_fetch_response::offset_fetch_response_partitions>>>
committed_offsets(kafka_caller& kc, const std::string& group) {
  protocol::offset_fetch_request of;
  auto& g = of.groups.emplace_back();
  g.group_id = group;
  g.topics = std::nullopt;
  auto op = kc.call(&handlers::offset_fetch, of, 8);
  auto resp = co_await std::move(op);
  std::map<topic_partition, protocol::offset_fetch_response::offset_fetch_response_partitions> out;
  if (resp.groups.empty()) co_return std::pair{error_code::unknown_server_error, out};
  const auto& rg = resp.groups.front();
  if (rg.error_code != error_code::none) co_return std::pair{rg.error_code, out};
  for (const auto& t : rg.topics)
    for (const auto& p : t.partitions)
      if (p.error_code == error_code::none && p.committed_offset >= 0) out[{t.name, p.partition_index}] = p;
  co_return std::pair{error_code::none, out};
}

/// The error reply for a group request that failed, naming the coordinator when it is another broker.
asio::awaitable<reply> group_error(kafka_caller& kc, const std::string& group, error_code e) {
  if (e != error_code::not_coordinator) co_return kafka_error_reply(e, "group " + group + ": " + std::string(protocol::error_name(e)));
  protocol::find_coordinator_request fc;
  fc.key_type = 0;
  fc.coordinator_keys.push_back(group);
  auto op = kc.call(&handlers::find_coordinator, fc, 4);
  auto resp = co_await std::move(op);
  std::string where = "another broker";
  if (!resp.coordinators.empty() && resp.coordinators.front().error_code == error_code::none)
    where = "broker " + std::to_string(resp.coordinators.front().node_id) + " (" + resp.coordinators.front().host + ":" +
            std::to_string(resp.coordinators.front().port) + ")";
  co_return kafka_error_reply(e, "group " + group + " is coordinated by " + where + ": ask its HTTP side");
}

/// FindCoordinator for the group, as a client starts (it creates __consumer_offsets when missing): nullopt when
/// this broker coordinates the group and has loaded it, else the reply to give (421 naming the coordinator,
/// 503 while it is still not available after about 5 s of retries on the injected clock).
asio::awaitable<std::optional<reply>> coordinate_here(kafka_caller& kc, const std::string& group) {
  auto& svc = kc.services();
  error_code last = error_code::none;
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (attempt > 0) {
      auto executor = co_await asio::this_coro::executor;
      auto waiter = std::make_shared<purgatory_waiter>(executor);
      auto wait = waiter->wait(wait_deadline::after(svc.clock, 100));
      co_await std::move(wait);
    }
    protocol::find_coordinator_request fc;
    fc.key_type = 0;
    fc.coordinator_keys.push_back(group);
    auto op = kc.call(&handlers::find_coordinator, fc, 4);
    auto resp = co_await std::move(op);
    if (resp.coordinators.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "FindCoordinator gave no answer");
    const auto& c = resp.coordinators.front();
    last = c.error_code;
    if (c.error_code == error_code::coordinator_not_available || c.error_code == error_code::coordinator_load_in_progress) continue;
    if (c.error_code != error_code::none) co_return kafka_error_reply(c.error_code, "group " + group);
    if (c.node_id != svc.config.broker_id)
      co_return kafka_error_reply(error_code::not_coordinator, "group " + group + " is coordinated by broker " +
                                                                   std::to_string(c.node_id) + " (" + c.host + ":" +
                                                                   std::to_string(c.port) + "): ask its HTTP side");
    // Coordinated here: wait for the shard to finish loading (DescribeGroups answers COORDINATOR_LOAD_IN_PROGRESS).
    auto dop = describe(kc, group);
    auto g = co_await std::move(dop);
    if (g && (g->error_code == error_code::coordinator_load_in_progress || g->error_code == error_code::not_coordinator)) {
      last = g->error_code;
      continue;
    }
    co_return std::nullopt;
  }
  co_return kafka_error_reply(last, "group " + group + ": its coordinator is still loading");
}

/// DescribeGroups for the group, or the reply for its failure (group_error).
asio::awaitable<std::variant<protocol::describe_groups_response::described_group, reply>> described(kafka_caller& kc,
                                                                                                   const std::string& group) {
  auto dop = describe(kc, group);
  auto g = co_await std::move(dop);
  if (!g) co_return kafka_error_reply(error_code::unknown_server_error, "DescribeGroups gave no group");
  if (g->error_code != error_code::none) {
    auto eop = group_error(kc, group, g->error_code);
    co_return co_await std::move(eop);
  }
  co_return std::move(*g);
}

asio::awaitable<reply> list_groups(kafka_caller& kc) {
  protocol::list_groups_request lg;
  auto op = kc.call(&handlers::list_groups, lg, 5);
  auto resp = co_await std::move(op);
  if (resp.error_code != error_code::none) co_return kafka_error_reply(resp.error_code);
  auto groups = resp.groups;
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
  json::array out;
  for (const auto& g : groups)
    out.push_back(json::object{{"group_id", g.group_id},
                               {"state", g.group_state},
                               {"protocol_type", g.protocol_type},
                               {"type", g.group_type.empty() ? "classic" : g.group_type}});
  co_return json_reply(200, json::object{{"groups", std::move(out)}});
}

asio::awaitable<reply> describe_group(kafka_caller& kc, const std::string& group) {
  auto dop = described(kc, group);
  auto described_or_error = co_await std::move(dop);
  if (auto* refused = std::get_if<reply>(&described_or_error)) co_return std::move(*refused);
  auto* g = &std::get<protocol::describe_groups_response::described_group>(described_or_error);
  auto cop = committed_offsets(kc, group);
  auto [cerr, committed] = co_await std::move(cop);
  if (cerr != error_code::none) {
    auto eop = group_error(kc, group, cerr);
    co_return co_await std::move(eop);
  }
  if (g->group_state == "Dead" && committed.empty())
    co_return kafka_error_reply(error_code::group_id_not_found, "no group " + group);

  std::set<topic_partition> partitions;
  std::map<topic_partition, std::string> owner;  // member id of the assignment
  json::array members;
  for (const auto& m : g->members) {
    json::array assignment;
    if (g->protocol_type == "consumer") {
      for (const auto& [topic, ps] : decode_assignment(m.member_assignment)) {
        json::array pa;
        for (int32_t p : ps) {
          pa.push_back(p);
          partitions.insert({topic, p});
          owner[{topic, p}] = m.member_id;
        }
        assignment.push_back(json::object{{"topic", topic}, {"partitions", std::move(pa)}});
      }
    }
    members.push_back(json::object{{"member_id", m.member_id},
                                   {"group_instance_id", m.group_instance_id ? json::value(*m.group_instance_id) : json::value(nullptr)},
                                   {"client_id", m.client_id},
                                   {"client_host", m.client_host},
                                   {"assignment", std::move(assignment)}});
  }
  for (const auto& [tp, _] : committed) partitions.insert(tp);
  auto lop = list_offsets(kc, partitions, -1);
  auto latest = co_await std::move(lop);
  json::array offsets;
  int64_t total_lag = 0;
  for (const auto& tp : partitions) {
    json::object o{{"topic", tp.first}, {"partition", tp.second}};
    const auto c = committed.find(tp);
    const auto l = latest.find(tp);
    const bool have_end = l != latest.end() && l->second.error == error_code::none && l->second.offset >= 0;
    o["committed_offset"] = c != committed.end() ? json::value(c->second.committed_offset) : json::value(nullptr);
    o["log_end_offset"] = have_end ? json::value(l->second.offset) : json::value(nullptr);
    if (c != committed.end() && have_end) {
      const int64_t lag = std::max<int64_t>(0, l->second.offset - c->second.committed_offset);
      o["lag"] = lag;
      total_lag += lag;
    } else {
      o["lag"] = nullptr;
    }
    if (l != latest.end() && l->second.error != error_code::none) o["error"] = protocol::error_name(l->second.error);
    if (c != committed.end()) {
      o["metadata"] = c->second.metadata ? json::value(*c->second.metadata) : json::value(nullptr);
      o["leader_epoch"] = c->second.committed_leader_epoch;
    }
    const auto own = owner.find(tp);
    o["member_id"] = own != owner.end() ? json::value(own->second) : json::value(nullptr);
    offsets.push_back(std::move(o));
  }
  co_return json_reply(200, json::object{{"group_id", group},
                                         {"state", g->group_state},
                                         {"protocol_type", g->protocol_type},
                                         {"protocol", g->protocol_data},
                                         {"members", std::move(members)},
                                         {"offsets", std::move(offsets)},
                                         {"lag", total_lag}});
}

asio::awaitable<reply> delete_group(kafka_caller& kc, const std::string& group) {
  protocol::delete_groups_request dg;
  dg.groups_names.push_back(group);
  auto op = kc.call(&handlers::delete_groups, dg, 2);
  auto resp = co_await std::move(op);
  if (resp.results.empty()) co_return kafka_error_reply(error_code::unknown_server_error, "DeleteGroups gave no result");
  const auto e = resp.results.front().error_code;
  if (e == error_code::none) co_return reply{204, "application/json", ""};
  auto eop = group_error(kc, group, e);
  co_return co_await std::move(eop);
}

/// POST /v1/groups/{g}/offsets: {"to": "earliest"|"latest"|"timestamp"|"offset", "timestamp": ms, "offset": n,
/// "topics": [names] or "partitions": [{"topic","partition"}], "dry_run": bool}. Only while the group has no
/// members (Empty, or Dead: no group yet), as kafka-consumer-groups --reset-offsets requires.
asio::awaitable<reply> reset_offsets(kafka_caller& kc, const std::string& group, const request& req) {
  reply bad;
  auto body = parse_object(req.body(), bad);
  if (!body) co_return bad;
  std::string to;
  std::optional<int64_t> timestamp, offset;
  bool dry_run = false;
  std::set<topic_partition> chosen;
  bool named = false;
  for (const auto& [k, v] : *body) {
    if (k == "to") {
      if (!v.is_string()) co_return error_reply(400, "INVALID_REQUEST", "\"to\" must be earliest, latest, timestamp or offset");
      to = std::string(v.as_string());
    } else if (k == "timestamp" || k == "offset") {
      if (!v.is_int64() || v.as_int64() < 0) co_return error_reply(400, "INVALID_REQUEST", "\"" + std::string(k) + "\" must be an integer >= 0");
      (k == "timestamp" ? timestamp : offset) = v.as_int64();
    } else if (k == "dry_run") {
      if (!v.is_bool()) co_return error_reply(400, "INVALID_REQUEST", "\"dry_run\" must be true or false");
      dry_run = v.as_bool();
    } else if (k == "topics") {
      if (!v.is_array()) co_return error_reply(400, "INVALID_REQUEST", "\"topics\" must be an array of topic names");
      named = true;
      for (const auto& t : v.as_array()) {
        if (!t.is_string()) co_return error_reply(400, "INVALID_REQUEST", "\"topics\" must be an array of topic names");
        auto topic = kc.services().topics.find(std::string_view(t.as_string()));
        if (!topic) co_return kafka_error_reply(error_code::unknown_topic_or_partition, "no topic " + std::string(t.as_string()));
        for (int32_t p = 0; p < static_cast<int32_t>(topic->partitions.size()); ++p) chosen.insert({topic->name, p});
      }
    } else if (k == "partitions") {
      if (!v.is_array()) co_return error_reply(400, "INVALID_REQUEST", "\"partitions\" must be an array of {topic, partition}");
      named = true;
      for (const auto& e : v.as_array()) {
        const auto* o = e.if_object();
        const auto* t = o ? o->if_contains("topic") : nullptr;
        const auto* p = o ? o->if_contains("partition") : nullptr;
        bool known_only = true;
        if (o)
          for (const auto& [name, _] : *o) known_only = known_only && (name == "topic" || name == "partition");
        if (!known_only || !t || !t->is_string() || !p || !p->is_int64())
          co_return error_reply(400, "INVALID_REQUEST", "\"partitions\" must be an array of {topic, partition}");
        auto topic = kc.services().topics.find(std::string_view(t->as_string()));
        if (!topic || p->as_int64() < 0 || p->as_int64() >= static_cast<int64_t>(topic->partitions.size()))
          co_return kafka_error_reply(error_code::unknown_topic_or_partition,
                                      "no partition " + std::string(t->as_string()) + "-" + std::to_string(p->as_int64()));
        chosen.insert({topic->name, static_cast<int32_t>(p->as_int64())});
      }
    } else {
      co_return error_reply(400, "INVALID_REQUEST", "unknown field " + std::string(k) + " (to, timestamp, offset, topics, partitions, dry_run)");
    }
  }
  if (to != "earliest" && to != "latest" && to != "timestamp" && to != "offset")
    co_return error_reply(400, "INVALID_REQUEST", "\"to\" must be earliest, latest, timestamp or offset");
  if (to == "timestamp" && !timestamp) co_return error_reply(400, "INVALID_REQUEST", "to timestamp needs \"timestamp\" (ms)");
  if (to == "offset" && !offset) co_return error_reply(400, "INVALID_REQUEST", "to offset needs \"offset\"");

  auto dop = described(kc, group);
  auto described_or_error = co_await std::move(dop);
  if (auto* refused = std::get_if<reply>(&described_or_error)) co_return std::move(*refused);
  auto* g = &std::get<protocol::describe_groups_response::described_group>(described_or_error);
  if (g->group_state != "Empty" && g->group_state != "Dead")
    co_return kafka_error_reply(error_code::non_empty_group, "group " + group + " is " + g->group_state +
                                                                 ": offsets can be reset only while it has no members");
  if (!named) {
    auto cop = committed_offsets(kc, group);
    auto [cerr, committed] = co_await std::move(cop);
    if (cerr != error_code::none) {
      auto eop = group_error(kc, group, cerr);
      co_return co_await std::move(eop);
    }
    for (const auto& [tp, _] : committed) chosen.insert(tp);
  }
  if (chosen.empty()) co_return error_reply(400, "INVALID_REQUEST", "no partitions: the group has no committed offsets; name \"topics\" or \"partitions\"");

  // Where each partition goes. An explicit offset is kept within [log start, latest], as kafka-consumer-groups does.
  auto eop = list_offsets(kc, chosen, -2);
  auto earliest = co_await std::move(eop);
  auto lop = list_offsets(kc, chosen, -1);
  auto latest = co_await std::move(lop);
  std::map<topic_partition, listed_offset> by_time;
  if (to == "timestamp") {
    auto top = list_offsets(kc, chosen, *timestamp);
    by_time = co_await std::move(top);
  }
  std::map<topic_partition, int64_t> target;
  for (const auto& tp : chosen) {
    const auto& lo = earliest[tp];
    const auto& hi = latest[tp];
    if (lo.error != error_code::none || hi.error != error_code::none)
      co_return kafka_error_reply(lo.error != error_code::none ? lo.error : hi.error,
                                  "ListOffsets for " + tp.first + "-" + std::to_string(tp.second) +
                                      leader_hint(kc.services(), tp.first, tp.second));
    if (to == "timestamp" && by_time[tp].error != error_code::none)
      co_return kafka_error_reply(by_time[tp].error, "ListOffsets by timestamp for " + tp.first + "-" + std::to_string(tp.second) +
                                                         leader_hint(kc.services(), tp.first, tp.second));
    int64_t t = hi.offset;
    if (to == "earliest") t = lo.offset;
    else if (to == "offset") t = std::clamp(*offset, lo.offset, hi.offset);
    else if (to == "timestamp") t = by_time[tp].offset >= 0 ? by_time[tp].offset : hi.offset;
    target[tp] = t;
  }
  json::array out;
  if (!dry_run) {
    protocol::offset_commit_request oc;
    oc.group_id = group;
    oc.generation_id_or_member_epoch = -1;  // an admin commit: no member, allowed while the group is empty
    std::map<std::string, std::vector<std::pair<int32_t, int64_t>>> by_topic;
    for (const auto& [tp, o] : target) by_topic[tp.first].emplace_back(tp.second, o);
    for (const auto& [t, ps] : by_topic) {
      auto& ot = oc.topics.emplace_back();
      ot.name = t;
      for (const auto& [p, o] : ps) {
        auto& op = ot.partitions.emplace_back();
        op.partition_index = p;
        op.committed_offset = o;
      }
    }
    auto op = kc.call(&handlers::offset_commit, oc, 8);
    auto resp = co_await std::move(op);
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions)
        if (p.error_code != error_code::none) {
          auto gop = group_error(kc, group, p.error_code);
          co_return co_await std::move(gop);
        }
  }
  for (const auto& [tp, o] : target) out.push_back(json::object{{"topic", tp.first}, {"partition", tp.second}, {"offset", o}});
  co_return json_reply(200, json::object{{"group_id", group}, {"dry_run", dry_run}, {"offsets", std::move(out)}});
}

}  // namespace

asio::awaitable<reply> groups_route(kafka_caller& kc, const request& req, const target_parts& parts) {
  const auto& s = parts.segments;  // "v1", "groups", ...
  const auto method = req.method();
  const bool get = method == verb::get || method == verb::head;
  if (s.size() == 2) {
    if (!get) co_return method_not_allowed("GET");
    auto op = list_groups(kc);
    co_return co_await std::move(op);
  }
  const std::string& group = s[2];
  if (s.size() > 4 || (s.size() == 4 && s[3] != "offsets"))
    co_return error_reply(404, "NOT_FOUND", "no route " + std::string(req.target()));
  {
    auto cop = coordinate_here(kc, group);
    auto refused = co_await std::move(cop);
    if (refused) co_return std::move(*refused);
  }
  if (s.size() == 3) {
    if (get) {
      auto op = describe_group(kc, group);
      co_return co_await std::move(op);
    }
    if (method == verb::delete_) {
      auto op = delete_group(kc, group);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("GET, DELETE");
  }
  if (s.size() == 4 && s[3] == "offsets") {
    if (method == verb::post) {
      auto op = reset_offsets(kc, group, req);
      co_return co_await std::move(op);
    }
    co_return method_not_allowed("POST");
  }
  co_return error_reply(404, "NOT_FOUND", "no route " + std::string(req.target()));
}

}  // namespace sluice::broker::http
