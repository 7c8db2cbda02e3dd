#include "broker/replication/replica_fetcher.h"

#include <optional>
#include <set>

#include "base/logging.h"
#include "broker/fetch_session_cache.h"
#include "broker/call_on.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/offset_for_leader_epoch.h"

namespace sluice::broker {

using protocol::error_code;
using namespace std::chrono_literals;

namespace {
constexpr int16_t fetch_version = 12;                    // topic names, flexible (KIP-482), leader epochs
constexpr int16_t offset_for_leader_epoch_version = 4;  // replica_id, current leader epoch
}  // namespace

replica_fetcher::replica_fetcher(asio::any_io_executor executor, const broker_config& config, int32_t leader_id,
                                 sluice::clock& clock, follower_throttle throttle)
    : strand_(asio::make_strand(executor)), config_(config), leader_id_(leader_id), clock_(clock), throttle_(std::move(throttle)),
      client_(strand_, "sluice-replica-fetcher-" + std::to_string(config.broker_id)), backoff_(strand_) {}

void replica_fetcher::set_endpoint(std::string host, uint16_t port) {
  asio::post(strand_, [self = shared_from_this(), host = std::move(host), port] {
    if (self->host_ == host && self->port_ == port) return;
    self->host_ = host;
    self->port_ = port;
    self->endpoint_changed_ = true;
  });
}

void replica_fetcher::add(std::shared_ptr<partition> p, int32_t leader_epoch) {
  asio::post(strand_, [self = shared_from_this(), p = std::move(p), leader_epoch] {
    auto& e = self->partitions_[{p->topic(), p->index()}];
    if (e.p == p && e.leader_epoch == leader_epoch) return;
    e = entry{p, leader_epoch, true};
    self->backoff_.cancel();
  });
}

void replica_fetcher::remove(std::shared_ptr<partition> p) {
  asio::post(strand_, [self = shared_from_this(), p = std::move(p)] {
    auto it = self->partitions_.find({p->topic(), p->index()});
    if (it != self->partitions_.end() && it->second.p == p) self->partitions_.erase(it);
  });
}

void replica_fetcher::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->started_) return;
    self->started_ = true;
    asio::co_spawn(self->strand_, [self]() { return self->run(); }, asio::detached);
  });
}

void replica_fetcher::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->backoff_.cancel();
    self->client_.close();
  });
}

asio::awaitable<void> replica_fetcher::pause(std::chrono::milliseconds d) {
  backoff_.expires_after(d);
  co_await backoff_.async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<void> replica_fetcher::run() {
  auto keep_alive = shared_from_this();
  log::info("replica fetcher for leader {} started", leader_id_);
  while (!stopped_) {
    if (partitions_.empty() || host_.empty()) {
      auto op = pause(200ms);
      co_await std::move(op);
      continue;
    }
    if (!client_.is_open() || endpoint_changed_) {
      endpoint_changed_ = false;
      auto connect_op = client_.connect(host_, port_, 3000ms);
      auto connected = co_await std::move(connect_op);
      if (!connected) {
        log::debug("replica fetcher: leader {}: {}", leader_id_, connected.err().message);
        auto op = pause(300ms);
        co_await std::move(op);
        continue;
      }
    }
    auto work = partitions_;
    bool ok = true;
    bool any_truncation = false;
    for (const auto& [k, e] : work) any_truncation = any_truncation || e.needs_truncation;
    if (any_truncation) {
      auto truncate_op = truncate(work);
      ok = co_await std::move(truncate_op);
      for (const auto& [k, e] : work) {  // record truncations done, unless the partition changed meanwhile
        auto it = partitions_.find(k);
        if (it != partitions_.end() && it->second.p == e.p && it->second.leader_epoch == e.leader_epoch)
          it->second.needs_truncation = e.needs_truncation;
      }
    }
    if (ok) {
      auto fetch_op = fetch_once(work);
      ok = co_await std::move(fetch_op);
      for (const auto& [k, e] : work) {
        auto it = partitions_.find(k);
        if (it != partitions_.end() && it->second.p == e.p && it->second.leader_epoch == e.leader_epoch && e.needs_truncation)
          it->second.needs_truncation = true;
      }
    }
    if (!ok && !stopped_) {
      auto op = pause(200ms);
      co_await std::move(op);
    }
  }
  client_.close();
  log::info("replica fetcher for leader {} stopped", leader_id_);
}

asio::awaitable<bool> replica_fetcher::truncate(std::map<key, entry>& work) {
  using request = protocol::offset_for_leader_epoch_request;
  using response = protocol::offset_for_leader_epoch_response;
  request req;
  req.replica_id = config_.broker_id;
  for (auto& [k, e] : work) {
    if (!e.needs_truncation) continue;
    auto epoch_op = call_on(e.p->strand(), [p = e.p] { return p->latest_epoch(); });
    const int32_t latest = co_await std::move(epoch_op);
    if (latest < 0) {
      // No leader epochs known (a new replica, or a lost cache): Kafka falls back to the high watermark.
      auto op = call_on(e.p->strand(), [p = e.p, epoch = e.leader_epoch] { return p->truncate_to(p->high_watermark(), epoch); });
      auto r = co_await std::move(op);
      if (!r) log::warn("truncating {}-{}: {}", k.first, k.second, r.err().message);
      e.needs_truncation = !r;
      continue;
    }
    if (req.topics.empty() || req.topics.back().topic != k.first) req.topics.push_back({k.first, {}});
    request::offset_for_leader_partition part;
    part.partition = k.second;
    part.current_leader_epoch = e.leader_epoch;
    part.leader_epoch = latest;
    req.topics.back().partitions.push_back(part);
  }
  if (req.topics.empty()) co_return true;
  auto call_op = client_.call<request, response>(offset_for_leader_epoch_version, req, 10000ms);
  auto answer = co_await std::move(call_op);
  if (!answer) {
    log::debug("replica fetcher: OffsetForLeaderEpoch to {}: {}", leader_id_, answer.err().message);
    co_return false;
  }
  for (const auto& t : answer->topics) {
    for (const auto& r : t.partitions) {
      auto it = work.find({t.topic, r.partition});
      if (it == work.end() || !it->second.needs_truncation) continue;
      auto& e = it->second;
      if (r.error_code != error_code::none) {
        log::debug("replica fetcher: {}-{}: OffsetForLeaderEpoch error {}", t.topic, r.partition, static_cast<int>(r.error_code));
        continue;  // stale metadata on one side: retried after the next state change
      }
      const int32_t leader_epoch = r.leader_epoch;
      const int64_t end_offset = r.end_offset;
      auto op = call_on(e.p->strand(), [p = e.p, leader_epoch, end_offset, epoch = e.leader_epoch] {
        int64_t target = p->high_watermark();
        if (leader_epoch >= 0 && end_offset >= 0) {
          // KIP-279: when the leader answers an older epoch, stop where that epoch ends on our side too.
          target = end_offset;
          if (leader_epoch < p->latest_epoch()) {
            auto ours = p->end_offset_for_epoch(leader_epoch);
            if (ours.start_offset >= 0) target = std::min(target, ours.start_offset);
          }
        }
        target = std::min(target, p->log_end_offset());
        if (target < p->log_end_offset())
          log::info("{}-{}: truncating to {} (leader epoch {} ends at {}; local LEO {})", p->topic(), p->index(),
                    target, leader_epoch, end_offset, p->log_end_offset());
        return p->truncate_to(target, epoch);
      });
      auto truncated = co_await std::move(op);
      if (!truncated) log::warn("truncating {}-{}: {}", t.topic, r.partition, truncated.err().message);
      e.needs_truncation = !truncated;
    }
  }
  co_return true;
}

asio::awaitable<bool> replica_fetcher::fetch_once(std::map<key, entry>& work) {
  using request = protocol::fetch_request;
  using response = protocol::fetch_response;
  request req;
  req.replica_id = config_.broker_id;
  req.max_wait_ms = static_cast<int32_t>(config_long(config_, "replica.fetch.wait.max.ms", 500));
  req.min_bytes = static_cast<int32_t>(config_long(config_, "replica.fetch.min.bytes", 1));
  req.max_bytes = static_cast<int32_t>(config_long(config_, "replica.fetch.response.max.bytes", 10 << 20));
  req.isolation_level = 0;
  const int32_t partition_max = static_cast<int32_t>(config_long(config_, "replica.fetch.max.bytes", 1 << 20));
  // KIP-227: a full fetch (epoch 0, closing any session we had) asks for a session; then only changes are sent.
  const bool full = session_epoch_ == 0;
  req.session_id = session_id_;
  req.session_epoch = session_epoch_;
  std::map<key, sent_params> wanted;
  const int64_t now_ms = clock_.now_ms();
  std::optional<bool> throttling;  // follower.replication.throttled.rate used up: asked once, when first needed
  std::set<key> throttled;  // fetched partitions whose bytes count against follower.replication.throttled.rate
  for (const auto& [k, e] : work) {
    if (e.needs_truncation) continue;
    if (throttle_.covers && throttle_.covers(k.first, k.second)) {
      // Kafka's shouldFollowerThrottle: only a replica that is not in sync waits for the rate to fall.
      const bool in_sync = e.leader_high_watermark >= 0 && e.p->log_end_offset() >= e.leader_high_watermark;
      if (!in_sync && !throttling) throttling = throttle_.exceeded && throttle_.exceeded(now_ms);
      if (!in_sync && *throttling) continue;
      throttled.insert(k);
    }
    const sent_params now{e.p->log_end_offset(), e.p->log_start_offset(), e.leader_epoch, partition_max};
    wanted.emplace(k, now);
    if (!full) {
      auto was = session_partitions_.find(k);
      if (was != session_partitions_.end() && was->second == now) continue;  // the leader has it as it is
    }
    if (req.topics.empty() || req.topics.back().topic != k.first) req.topics.push_back({k.first, {}, {}});
    request::fetch_partition part;
    part.partition = k.second;
    part.current_leader_epoch = now.leader_epoch;
    part.fetch_offset = now.fetch_offset;
    part.log_start_offset = now.log_start_offset;
    part.partition_max_bytes = now.max_bytes;
    req.topics.back().partitions.push_back(part);
  }
  if (wanted.empty()) co_return false;
  if (!full) {
    for (const auto& [k, params] : session_partitions_) {
      if (wanted.contains(k)) continue;
      if (req.forgotten_topics_data.empty() || req.forgotten_topics_data.back().topic != k.first) {
        req.forgotten_topics_data.emplace_back();
        req.forgotten_topics_data.back().topic = k.first;
      }
      req.forgotten_topics_data.back().partitions.push_back(k.second);
    }
  }
  auto call_op = client_.call<request, response>(fetch_version, req, std::chrono::milliseconds(req.max_wait_ms + 10000));
  auto answer = co_await std::move(call_op);
  if (!answer) {
    log::debug("replica fetcher: Fetch from {}: {}", leader_id_, answer.err().message);
    session_epoch_ = 0;  // start over with a full fetch (closing the session if the leader still has it)
    co_return false;
  }
  if (answer->error_code != error_code::none) {
    log::debug("replica fetcher: Fetch from {}: session {} epoch {}: error {}", leader_id_, session_id_, session_epoch_,
               static_cast<int>(answer->error_code));
    session_id_ = 0;  // FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, ...: a new session
    session_epoch_ = 0;
    co_return false;
  }
  if (full) {
    session_id_ = answer->session_id;  // 0: the leader made none; the next request is full again
    session_epoch_ = session_id_ != 0 ? 1 : 0;
  } else {
    session_epoch_ = next_fetch_session_epoch(session_epoch_);
  }
  session_partitions_ = std::move(wanted);
  bool any_ok = false;
  for (const auto& t : answer->responses) {
    for (auto& pd : t.partitions) {
      auto it = work.find({t.topic, pd.partition_index});
      if (it == work.end()) continue;
      auto& e = it->second;
      const int64_t hw = pd.high_watermark;
      const int64_t lso = pd.log_start_offset;
      if (pd.error_code == error_code::none) {
        any_ok = true;
        if (auto live = partitions_.find(it->first); live != partitions_.end() && live->second.p == e.p)
          live->second.leader_high_watermark = hw;
        if (pd.records_ && pd.records_->size() > 0 && throttled.contains(it->first) && throttle_.record)
          throttle_.record(static_cast<int64_t>(pd.records_->size()), clock_.now_ms());
        if (pd.records_ && pd.records_->size() > 0) {
          auto op = call_on(e.p->strand(), [p = e.p, records = *pd.records_, hw, lso, epoch = e.leader_epoch] {
            return p->append_as_follower(records.bytes, hw, lso, epoch);
          });
          auto appended = co_await std::move(op);
          if (!appended) {
            log::warn("replica fetcher: appending to {}-{}: {}", t.topic, pd.partition_index, appended.err().message);
            e.needs_truncation = true;
          }
        } else {
          auto op = call_on(e.p->strand(), [p = e.p, hw, lso, epoch = e.leader_epoch] {
            p->update_follower_offsets(hw, lso, epoch);
            return true;
          });
          co_await std::move(op);
        }
      } else if (pd.error_code == error_code::offset_out_of_range) {
        const int64_t ours = e.p->log_end_offset();
        if (lso > ours) {
          auto op = call_on(e.p->strand(), [p = e.p, lso, epoch = e.leader_epoch] { return p->truncate_fully_and_start_at(lso, epoch); });
          auto r = co_await std::move(op);
          if (!r) log::warn("replica fetcher: {}-{}: {}", t.topic, pd.partition_index, r.err().message);
        } else {
          e.needs_truncation = true;  // our LEO is past the leader's: find where the logs agree
        }
      } else {
        log::debug("replica fetcher: {}-{} from leader {}: error {}", t.topic, pd.partition_index, leader_id_,
                   static_cast<int>(pd.error_code));
      }
    }
  }
  co_return any_ok;
}

}  // namespace sluice::broker
