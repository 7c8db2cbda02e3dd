#include "bench/load/topic_layout.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>

#include "bench/load/kafka_connection.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/metadata.h"

namespace sluice::bench {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  boost::system::error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<std::unique_ptr<kafka_connection>> open(asio::io_context& io, const broker_address& a,
                                                        const std::string& client_id) {
  // GCC 12: each awaitable is built before its co_await (temporaries of a co_await full-expression are destroyed
  // twice).
  auto c = std::make_unique<kafka_connection>(io, a, client_id);
  auto connecting = c->connect();
  co_await std::move(connecting);
  auto negotiating = c->negotiate();
  co_await std::move(negotiating);
  co_return c;
}

// Metadata v1..v13 for one topic, without auto-creation (v4+).
asio::awaitable<protocol::metadata_response> ask_metadata(kafka_connection& c, const std::string& topic) {
  const auto v = c.pick(protocol::api_key::metadata, 1, 13);
  if (!v) c.fail("the broker serves no Metadata version in 1-13");
  protocol::metadata_request req;
  protocol::metadata_request::metadata_request_topic t;
  t.name = topic;
  req.topics = std::vector{t};
  req.allow_auto_topic_creation = false;
  auto calling = c.call<protocol::metadata_response>(req, *v);
  co_return co_await std::move(calling);
}

asio::awaitable<void> create_topic(kafka_connection& c, const load_options& opts) {
  const auto v = c.pick(protocol::api_key::create_topics, 2, 7);
  if (!v) c.fail("the broker serves no CreateTopics version in 2-7");
  protocol::create_topics_request req;
  protocol::create_topics_request::creatable_topic t;
  t.name = opts.topic;
  t.num_partitions = opts.partitions;
  t.replication_factor = opts.replication_factor;
  req.topics.push_back(t);
  req.timeout_ms = 30000;
  auto calling = c.call<protocol::create_topics_response>(req, *v);
  auto resp = co_await std::move(calling);
  for (const auto& r : resp.topics)
    if (r.error_code != protocol::error_code::none && r.error_code != protocol::error_code::topic_already_exists)
      c.fail("CreateTopics " + opts.topic + ": " + std::string(protocol::error_name(r.error_code)) + " " +
             r.error_message.value_or(""));
}

asio::awaitable<void> discover(asio::io_context& io, const load_options& opts, topic_layout& out) {
  std::unique_ptr<kafka_connection> c;
  std::string errors;
  for (const auto& b : opts.bootstrap) {
    try {
      auto opening = open(io, b, opts.client_id);
      c = co_await std::move(opening);
      break;
    } catch (const load_error& e) {
      errors += std::string(errors.empty() ? "" : "; ") + e.what();
    }
  }
  if (!c) throw load_error("no bootstrap broker reachable: " + errors);
  out.topic = opts.topic;
  for (;;) {
    auto asking = ask_metadata(*c, opts.topic);
    auto md = co_await std::move(asking);
    out.brokers.clear();
    for (const auto& b : md.brokers) out.brokers[b.node_id] = broker_address{b.host, static_cast<uint16_t>(b.port)};
    const protocol::metadata_response::metadata_response_topic* topic = nullptr;
    for (const auto& t : md.topics)
      if (t.name && *t.name == opts.topic) topic = &t;
    if (!topic && md.topics.size() == 1) topic = &md.topics[0];  // v12+ may leave the name null on errors
    const auto code = topic ? topic->error_code : protocol::error_code::unknown_topic_or_partition;
    if (code == protocol::error_code::unknown_topic_or_partition) {
      if (opts.mode == load_mode::fetch) c->fail("topic " + opts.topic + " does not exist (fetch mode reads a topic)");
      if (opts.partitions == 0) c->fail("topic " + opts.topic + " does not exist and --partitions is 0");
      if (!out.created) {
        // Admin requests go to the controller (Kafka's AdminClient); a KRaft broker forwards them anyway.
        auto ctl = out.brokers.find(md.controller_id);
        if (ctl != out.brokers.end() && ctl->second.text() != c->address().text()) {
          auto opening = open(io, ctl->second, opts.client_id);
          auto cc = co_await std::move(opening);
          auto creating = create_topic(*cc, opts);
          co_await std::move(creating);
        } else {
          auto creating = create_topic(*c, opts);
          co_await std::move(creating);
        }
        out.created = true;
      }
      auto sleeping = sleep_for(100ms);
      co_await std::move(sleeping);
      continue;
    }
    // LEADER_NOT_AVAILABLE right after creation: wait.
    if (code != protocol::error_code::none && code != protocol::error_code::leader_not_available)
      c->fail("Metadata " + opts.topic + ": " + std::string(protocol::error_name(code)));
    bool ready = code == protocol::error_code::none && !topic->partitions.empty();
    if (ready && out.created && static_cast<int32_t>(topic->partitions.size()) < opts.partitions) ready = false;
    if (ready) {
      out.leaders.assign(topic->partitions.size(), -1);
      for (const auto& p : topic->partitions) {
        if (p.partition_index < 0 || p.partition_index >= static_cast<int32_t>(out.leaders.size())) continue;
        out.leaders[p.partition_index] = p.leader_id;
      }
      for (int32_t l : out.leaders)
        if (l < 0 || !out.brokers.contains(l)) ready = false;
    }
    if (ready) {
      out.topic_id = topic->topic_id;
      co_return;
    }
    auto sleeping = sleep_for(100ms);
    co_await std::move(sleeping);
  }
}

}  // namespace

topic_layout discover_topic(const load_options& opts, int timeout_ms) {
  asio::io_context io;
  topic_layout out;
  std::exception_ptr failure;
  bool done = false;
  asio::co_spawn(io, discover(io, opts, out), [&](std::exception_ptr e) {
    failure = e;
    done = true;
  });
  io.run_for(std::chrono::milliseconds(timeout_ms));
  if (failure) std::rethrow_exception(failure);
  if (!done) throw load_error("topic " + opts.topic + ": no leader for every partition within " +
                              std::to_string(timeout_ms) + " ms");
  return out;
}

std::vector<connection_plan> plan_connections(const topic_layout& layout, const std::vector<int32_t>& partitions,
                                              int connections, bool share_partitions) {
  std::map<int32_t, std::vector<int32_t>> by_leader;
  for (int32_t p : partitions) by_leader[layout.leaders.at(p)].push_back(p);
  std::vector<int32_t> leaders;
  for (const auto& [node, ps] : by_leader) leaders.push_back(node);
  const int total = std::max<int>(connections, static_cast<int>(leaders.size()));
  std::vector<connection_plan> plans;
  for (size_t li = 0; li < leaders.size(); ++li) {
    const int32_t node = leaders[li];
    // Connections i with i % leaders == li belong to this leader.
    const int mine = total / static_cast<int>(leaders.size()) +
                     (static_cast<int>(li) < total % static_cast<int>(leaders.size()) ? 1 : 0);
    const auto& ps = by_leader[node];
    std::vector<connection_plan> group(static_cast<size_t>(mine));
    for (auto& g : group) {
      g.node_id = node;
      g.broker = layout.brokers.at(node);
    }
    for (size_t i = 0; i < ps.size(); ++i) group[i % group.size()].partitions.push_back(ps[i]);
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i].partitions.empty()) {
        if (!share_partitions) continue;
        group[i].partitions.push_back(ps[i % ps.size()]);
      }
      plans.push_back(std::move(group[i]));
    }
  }
  return plans;
}

}  // namespace sluice::bench
