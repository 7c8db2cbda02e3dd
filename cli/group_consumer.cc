// sluice consume NAME --group G: a member of a classic consumer group (protocol type "consumer", the range
// assignor), as the Java KafkaConsumer's classic protocol does it:
//   JoinGroup (KIP-394: a new member's first JoinGroup gets MEMBER_ID_REQUIRED and the member id to join with), then
//   SyncGroup (the leader computes the range assignment from every member's ConsumerProtocolSubscription), then
//   OffsetFetch of the assigned partitions (none committed: --from, default end as auto.offset.reset=latest), Fetch,
//   OffsetCommit of the positions every 5 s, before rejoining and on exit, LeaveGroup on exit.
// Heartbeats come from a heartbeat thread (as the Java consumer's), timed by a condition variable on the interval,
// on a connection of its own to the coordinator; an error (REBALANCE_IN_PROGRESS after another member joined or
// left, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, NOT_COORDINATOR) ends the thread and the consuming loop, which checks it
// after every Fetch (at most 500 ms apart), commits and rejoins.
#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "cli/fetcher.h"
#include "cli/group_client.h"
#include "protocol/messages/heartbeat.h"
#include "protocol/messages/join_group.h"
#include "protocol/messages/leave_group.h"
#include "protocol/messages/sync_group.h"

namespace sluice::cli {

namespace {

using protocol::error_code;
using namespace std::chrono_literals;

// The Java consumer's defaults where they suit a command-line tool: heartbeat.interval.ms 3000; a session timeout of
// 10 s (Java's 45 s would keep a killed CLI's partitions from the others for that long; the broker's
// group.min.session.timeout.ms is 6 s); rebalance (max.poll.interval) 30 s: this consumer rejoins within a Fetch.
constexpr int32_t session_timeout_ms = 10000;
constexpr int32_t rebalance_timeout_ms = 30000;
constexpr auto heartbeat_interval = 3000ms;
constexpr auto commit_interval = 5000ms;

std::atomic<bool> stop_requested{false};
extern "C" void on_stop_signal(int) { stop_requested = true; }

/// SIGINT/SIGTERM end the consuming loop (which then commits and leaves the group); a second one kills at once.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool coordinator_moved(error_code e) {
  return e == error_code::not_coordinator || e == error_code::coordinator_not_available ||
         e == error_code::coordinator_load_in_progress;
}

/// What the coordinator made of this member at its last rebalance.
struct membership {
  std::string member_id;  // "" until the first JoinGroup answers one (KIP-394)
  int32_t generation = -1;
  bool leader = false;
  assignment assigned;  // of every topic (the range assignor only gives ours to a CLI member)
};

/// Heartbeat every heartbeat_interval for one generation; stops at the first error, which status() then returns.
/// Owns its own io_context and connection to the coordinator (the main thread's connections are not shared).
class heartbeat_thread {
 public:
  heartbeat_thread(endpoint coordinator, std::chrono::milliseconds timeout, std::string group, membership m,
                   std::shared_ptr<const client_security> security)
      : where_(std::move(coordinator)), timeout_(timeout), group_(std::move(group)), member_(std::move(m)),
        security_(std::move(security)) {
    thread_ = std::thread([this] { run(); });
  }
  ~heartbeat_thread() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  heartbeat_thread(const heartbeat_thread&) = delete;
  heartbeat_thread& operator=(const heartbeat_thread&) = delete;

  /// none while the member is in good standing; else the Heartbeat error (connection trouble: request_timed_out,
  /// with the reason in lost_reason()).
  error_code status() const {
    std::lock_guard lk(mu_);
    return status_;
  }
  std::string lost_reason() const {
    std::lock_guard lk(mu_);
    return lost_reason_;
  }

 private:
  void run() {
    asio::io_context io;
    connection c(io, where_, timeout_, "sluice-cli", security_);
    try {
      c.open();
      const int16_t v = c.pick(protocol::api_key::heartbeat, 0, 4);
      std::unique_lock lk(mu_);
      for (;;) {
        if (cv_.wait_for(lk, heartbeat_interval, [&] { return stopping_; })) return;
        lk.unlock();
        protocol::heartbeat_request req;
        req.group_id = group_;
        req.generation_id = member_.generation;
        req.member_id = member_.member_id;
        auto resp = c.call<protocol::heartbeat_response>(req, v);
        lk.lock();
        if (resp.error_code != error_code::none) {
          status_ = resp.error_code;
          return;
        }
      }
    } catch (const failure& f) {
      std::lock_guard lk(mu_);
      status_ = error_code::request_timed_out;
      lost_reason_ = f.what();
    }
  }

  endpoint where_;
  std::chrono::milliseconds timeout_;
  std::string group_;
  membership member_;
  std::shared_ptr<const client_security> security_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  error_code status_ = error_code::none;
  std::string lost_reason_;
  std::thread thread_;
};

class group_consumer {
 public:
  group_consumer(context& ctx, std::string topic, std::string group)
      : ctx_(ctx), kafka_(ctx.kafka()), topic_(std::move(topic)), group_(std::move(group)) {}

  /// JoinGroup then SyncGroup until the member has an assignment of a stable generation (bounded: a few rebalance
  /// timeouts). The leader (the coordinator names it) assigns with the range assignor.
  void join() {
    const auto deadline = std::chrono::steady_clock::now() + 3 * std::chrono::milliseconds(rebalance_timeout_ms);
    const auto call_timeout = std::chrono::milliseconds(rebalance_timeout_ms) + kafka_.timeout();
    for (;;) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw failure(exit_code::cannot_connect, fmt::format("group '{}': no stable generation within {} ms", group_,
                                                             3 * rebalance_timeout_ms));
      auto& c = kafka_.coordinator(group_);
      const int16_t jv = c.pick(protocol::api_key::join_group, 0, 9);
      protocol::join_group_request jr;
      jr.group_id = group_;
      jr.session_timeout_ms = session_timeout_ms;
      jr.rebalance_timeout_ms = rebalance_timeout_ms;
      jr.member_id = m_.member_id;
      jr.protocol_type = "consumer";
      protocol::join_group_request::join_group_request_protocol proto;
      proto.name = "range";
      proto.metadata = encode_subscription({topic_}, m_.assigned, m_.generation);
      jr.protocols.push_back(std::move(proto));
      if (jv >= 8) jr.reason = m_.generation < 0 ? "a new sluice consume member" : "rejoining after a rebalance";
      auto join = c.call<protocol::join_group_response>(jr, jv, call_timeout);
      if (join.error_code == error_code::member_id_required) {  // KIP-394: join again with the id it gave
        m_.member_id = join.member_id;
        continue;
      }
      if (join.error_code == error_code::unknown_member_id) {
        m_.member_id.clear();
        continue;
      }
      if (coordinator_moved(join.error_code) || join.error_code == error_code::rebalance_in_progress) {
        std::this_thread::sleep_for(200ms);
        continue;
      }
      if (join.error_code != error_code::none) kafka_failure(join.error_code, std::nullopt, fmt::format("JoinGroup of '{}'", group_));
      m_.member_id = join.member_id;
      m_.generation = join.generation_id;
      m_.leader = join.leader == join.member_id;

      protocol::sync_group_request sr;
      sr.group_id = group_;
      sr.generation_id = join.generation_id;
      sr.member_id = m_.member_id;
      sr.protocol_type = "consumer";
      sr.protocol_name = join.protocol_name;
      if (m_.leader) sr.assignments = assign(join);
      const int16_t sv = c.pick(protocol::api_key::sync_group, 0, 5);
      auto sync = c.call<protocol::sync_group_response>(sr, sv, call_timeout);
      if (sync.error_code == error_code::unknown_member_id) {
        m_.member_id.clear();
        continue;
      }
      if (sync.error_code == error_code::rebalance_in_progress || sync.error_code == error_code::illegal_generation ||
          coordinator_moved(sync.error_code))
        continue;
      if (sync.error_code != error_code::none) kafka_failure(sync.error_code, std::nullopt, fmt::format("SyncGroup of '{}'", group_));
      m_.assigned = decode_assignment(sync.assignment);
      return;
    }
  }

  /// The range assignment of every member's subscription (the leader's job in the classic protocol).
  std::vector<protocol::sync_group_request::sync_group_request_assignment> assign(
      const protocol::join_group_response& join) {
    std::map<std::string, std::vector<std::string>> subscriptions;
    std::set<std::string> topics;
    for (const auto& m : join.members) {
      auto t = decode_subscription_topics(m.metadata);
      subscriptions[m.member_id] = t ? *t : std::vector<std::string>{};
      if (t) topics.insert(t->begin(), t->end());
    }
    std::map<std::string, int32_t> counts;
    const cluster_metadata meta = kafka_.refresh(std::vector<std::string>(topics.begin(), topics.end()));
    for (const auto& t : meta.topics)
      if (t.error == error_code::none) counts[t.name] = static_cast<int32_t>(t.partitions.size());
    std::vector<protocol::sync_group_request::sync_group_request_assignment> out;
    for (const auto& [member, a] : range_assign(subscriptions, counts)) {
      protocol::sync_group_request::sync_group_request_assignment x;
      x.member_id = member;
      x.assignment = encode_assignment(a);
      out.push_back(std::move(x));
    }
    return out;
  }

  /// Where each assigned partition of our topic starts: its committed offset, else `from`.
  std::map<int32_t, int64_t> start_positions(const std::string& from) {
    std::map<int32_t, int64_t> out;
    auto it = m_.assigned.find(topic_);
    if (it == m_.assigned.end() || it->second.empty()) return out;
    assignment ours{{topic_, it->second}};
    const auto committed = offset_fetch(kafka_.coordinator(group_), group_, ours);
    std::vector<int32_t> missing;
    for (int32_t p : it->second) {
      if (auto c = committed.find({topic_, p}); c != committed.end()) out[p] = c->second.offset;
      else missing.push_back(p);
    }
    if (!missing.empty()) {
      const topic_info ti = kafka_.topic(topic_);
      for (const auto& [p, o] : resolve_start(kafka_, ti, missing, from)) out[p] = o;
    }
    for (const auto& [p, o] : out) committed_[p] = committed.count({topic_, p}) ? o : -1;
    return out;
  }

  /// OffsetCommit of the positions that moved since the last commit. Returns the first partition error (none: ok).
  error_code commit(const std::map<int32_t, int64_t>& positions) {
    std::map<topic_partition, int64_t> offsets;
    for (const auto& [p, o] : positions)
      if (committed_[p] != o) offsets[{topic_, p}] = o;
    if (offsets.empty()) return error_code::none;
    const auto errors = offset_commit(kafka_.coordinator(group_), group_, m_.generation, m_.member_id, offsets);
    error_code first = error_code::none;
    for (const auto& [tp, e] : errors) {
      if (e == error_code::none) committed_[tp.second] = offsets[tp];
      else if (first == error_code::none) first = e;
    }
    return first;
  }

  /// LeaveGroup (v0-5), so that the others get our partitions at once rather than after the session timeout.
  void leave() {
    if (m_.member_id.empty()) return;
    auto& c = kafka_.coordinator(group_);
    const int16_t v = c.pick(protocol::api_key::leave_group, 0, 5);
    protocol::leave_group_request req;
    req.group_id = group_;
    if (v >= 3) {
      protocol::leave_group_request::member_identity mi;
      mi.member_id = m_.member_id;
      if (v >= 5) mi.reason = "the consumer is closing";
      req.members.push_back(std::move(mi));
    } else {
      req.member_id = m_.member_id;
    }
    auto resp = c.call<protocol::leave_group_response>(req, v);
    if (resp.error_code != error_code::none && resp.error_code != error_code::unknown_member_id)
      ctx_.err << "sluice: LeaveGroup: " << protocol::error_name(resp.error_code) << "\n";
  }

  const membership& member() const { return m_; }
  void forget_member_id() { m_.member_id.clear(); }
  connection& coordinator() { return kafka_.coordinator(group_); }

 private:
  context& ctx_;
  cluster& kafka_;
  std::string topic_, group_;
  membership m_;
  std::map<int32_t, int64_t> committed_;  // partition -> what we last committed (-1: nothing)
};

}  // namespace

int consume_group(context& ctx, const std::string& topic, const std::string& group, const std::string& from,
                  int64_t num, bool exit_at_end, const std::string& format) {
  if (num == 0) return 0;
  auto& kafka = ctx.kafka();
  kafka.topic(topic);  // UNKNOWN_TOPIC_OR_PARTITION before joining
  install_stop_handlers();
  group_consumer g(ctx, topic, group);
  g.join();
  std::optional<fetcher> f;
  // A committed offset outside the log (retention deleted its records, the topic was made again) starts over as the
  // Java consumer's auto.offset.reset does: at the log start with --from beginning, else at the end (latest, the
  // default; an OFFSET or @TIMESTAMP --from is where a partition without a commit starts, not a reset policy).
  const std::string reset_to = from == "beginning" ? "beginning" : "end";
  const auto reset = [&](int32_t p, int64_t at) {
    const auto to = resolve_start(kafka, kafka.topic(topic), {p}, reset_to).at(p);
    ctx.err << fmt::format("sluice: {}-{}: offset {} is out of range (OFFSET_OUT_OF_RANGE); resetting to {} ({})\n", topic,
                           p, at, to, reset_to == "beginning" ? "the log start" : "the end");
    return to;
  };
  f.emplace(ctx, topic, g.start_positions(from));
  f->on_out_of_range(reset);
  auto hb = std::make_unique<heartbeat_thread>(g.coordinator().where(), kafka.timeout(), group, g.member(), kafka.security());
  auto last_commit = std::chrono::steady_clock::now();
  int64_t printed = 0;
  for (;;) {
    bool more = true;
    if (f->positions().empty()) {
      std::this_thread::sleep_for(200ms);  // nothing assigned (more members than partitions): wait for a rebalance
    } else {
      more = f->poll([&](const consumed_record& r) {
        print_record(ctx, r, format);
        return !(num >= 0 && ++printed >= num);
      });
      ctx.out.flush();
    }
    if (!more || stop_requested || (exit_at_end && f->at_end())) break;
    error_code status = hb->status();
    if (status == error_code::none && std::chrono::steady_clock::now() - last_commit >= commit_interval) {
      status = g.commit(f->positions());
      last_commit = std::chrono::steady_clock::now();
    }
    if (status == error_code::none) continue;
    // Rejoin: REBALANCE_IN_PROGRESS keeps the generation valid for a last commit (Kafka accepts commits of the current
    // generation while the group prepares a rebalance), so the next owner of a partition starts where we stopped.
    const std::string lost = hb->lost_reason();
    hb.reset();
    if (status == error_code::request_timed_out && !lost.empty()) throw failure(exit_code::cannot_connect, lost);
    if (status == error_code::rebalance_in_progress) g.commit(f->positions());
    else if (status == error_code::unknown_member_id) g.forget_member_id();
    else if (status != error_code::illegal_generation && !coordinator_moved(status))
      kafka_failure(status, std::nullopt, fmt::format("Heartbeat of group '{}'", group));
    g.join();
    f.emplace(ctx, topic, g.start_positions(from));
    f->on_out_of_range(reset);
    hb = std::make_unique<heartbeat_thread>(g.coordinator().where(), kafka.timeout(), group, g.member(), kafka.security());
    last_commit = std::chrono::steady_clock::now();
  }
  hb.reset();
  const error_code e = g.commit(f->positions());
  g.leave();
  if (e != error_code::none) kafka_failure(e, std::nullopt, fmt::format("OffsetCommit of group '{}'", group));
  return 0;
}

}  // namespace sluice::cli
