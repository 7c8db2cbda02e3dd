#include "broker/replication/replica_manager.h"

#include <future>
#include <set>

#include "base/logging.h"
#include "base/metrics.h"
#include "broker/topic_registry.h"

namespace sluice::broker {

using namespace std::chrono_literals;

replica_manager::replica_manager(const broker_config& config, coordination::cluster_view& view, topic_registry& topics,
                                 asio::any_io_executor executor, sluice::clock& clock)
    : config_(config), view_(view), topics_(topics), executor_(executor), clock_(clock),
      strand_(asio::make_strand(executor)), shrink_timer_(strand_), isr_work_(asio::make_work_guard(isr_io_)) {
  isr_thread_ = std::thread([this] { isr_io_.run(); });
}

replica_manager::~replica_manager() {
  stop();
  if (isr_thread_.joinable()) isr_thread_.join();
}

void replica_manager::start() {
  view_.subscribe([this](std::shared_ptr<const coordination::cluster_snapshot> s) {
    asio::post(strand_, [this, s = std::move(s)] { apply(s); });
  });
  asio::post(strand_, [this] { apply(view_.snapshot()); });
  asio::co_spawn(strand_, shrink_loop(), asio::detached);
}

void replica_manager::stop() {
  asio::post(strand_, [this] {
    stopped_ = true;
    shrink_timer_.cancel();
    for (auto& [id, f] : fetchers_) f->stop();
    fetchers_.clear();
  });
  isr_work_.reset();
  // The ISR thread ends once the changes already submitted are stored (each bounded by the store's timeouts); join
  // it here, as the broker object is never destroyed (main.cc), so that no thread is left unjoined at exit (TSan's
  // "thread leak", which also turned the exit status into 66).
  if (isr_thread_.joinable() && isr_thread_.get_id() != std::this_thread::get_id()) isr_thread_.join();
}

void replica_manager::stop_following() {
  std::promise<void> done;
  asio::post(strand_, [this, &done] {
    following_stopped_ = true;
    for (auto& [id, f] : fetchers_) f->stop();
    fetchers_.clear();
    done.set_value();
  });
  done.get_future().wait_for(std::chrono::seconds(5));
}

std::shared_ptr<replica_fetcher> replica_manager::fetcher_for(int32_t leader_id, const coordination::cluster_snapshot& s) {
  auto& f = fetchers_[leader_id];
  if (!f) {
    f = std::make_shared<replica_fetcher>(executor_, config_, leader_id, clock_, throttle_);
    f->start();
  }
  if (auto b = s.brokers.find(leader_id); b != s.brokers.end())
    f->set_endpoint(b->second.host, static_cast<uint16_t>(b->second.port));
  return f;
}

void replica_manager::apply(std::shared_ptr<const coordination::cluster_snapshot> s) {
  if (stopped_ || !s) return;
  const int32_t self = config_.broker_id;
  topics_.set_cluster(s);
  topics_.sync(*s, self);
  std::set<std::pair<std::string, int32_t>> present;
  for (const auto& t : topics_.all()) {
    for (const auto& p : t->partitions) {
      if (!p) continue;
      present.insert({t->name, p->index()});
      const coordination::partition_state* st = s->state(t->name, p->index());
      applied want;
      want.p = p;
      if (!s->registered || st == nullptr || st->leader < 0) {
        want.role = replica_role::offline;
      } else if (st->leader == self) {
        want.role = replica_role::leader;
      } else {
        want.role = replica_role::follower;
      }
      want.leader = (s->registered && st) ? st->leader : -1;
      want.leader_epoch = st ? st->leader_epoch : 0;
      want.version = st ? st->version : -1;
      if (want.role == replica_role::leader)
        if (auto a = s->topics.find(t->name); a != s->topics.end() && p->index() < a->second.partition_count())
          for (int32_t r : a->second.replicas[static_cast<size_t>(p->index())]) {
            // A replica a reassignment is removing is never added back to the ISR once out of it (Kafka's
            // controller sends the leader the target set for this): the controller drops it from the ISR at a
            // new leader epoch before it rewrites the replica list, and between the two writes its fetches
            // must not re-admit it.
            const auto removing = a->second.removing_replicas.find(p->index());
            const bool leaving = removing != a->second.removing_replicas.end() &&
                                 std::find(removing->second.begin(), removing->second.end(), r) != removing->second.end() &&
                                 std::find(st->isr.begin(), st->isr.end(), r) == st->isr.end();
            if (!leaving) want.replicas.push_back(r);
          }
      auto& had = applied_[{t->name, p->index()}];
      const bool same_partition = had.p.lock() == p;
      if (same_partition && had.role == want.role && had.leader == want.leader && had.leader_epoch == want.leader_epoch &&
          had.version == want.version && had.replicas == want.replicas)
        continue;
      const bool was_leader = same_partition && had.role == replica_role::leader;
      const applied had_before = had;
      had = want;
      // Detach from any fetcher first; a follower is attached to its leader's fetcher below.
      for (auto& [id, f] : fetchers_)
        if (want.role != replica_role::follower || id != want.leader) f->remove(p);
      if (want.role == replica_role::leader) {
        auto replicas = want.replicas;
        auto isr = st->isr;
        const int32_t epoch = st->leader_epoch;
        const int32_t version = st->version;
        const int64_t now = clock_.now_ms();
        asio::post(p->strand(), [p, self, epoch, replicas, isr, version, now] {
          if (p->is_leader() && p->leader_epoch() == epoch && p->replicas() == replicas) p->apply_isr({epoch, isr, version});
          else p->become_leader(self, epoch, replicas, isr, version, now);
        });
        if (!was_leader) {
          log::info("{}-{}: leader at epoch {} (isr {})", t->name, p->index(), epoch, isr.size());
          if (leadership_) leadership_(p, true);
        }
      } else {
        const int32_t leader = want.leader;
        const int32_t epoch = want.leader_epoch;
        asio::post(p->strand(), [p, leader, epoch] { p->become_follower(leader, epoch); });
        if (was_leader && leadership_) leadership_(p, false);
        const bool changed = !same_partition || had_before.leader != leader || had_before.leader_epoch != epoch;
        if (want.role == replica_role::follower && !following_stopped_) {
          fetcher_for(leader, *s)->add(p, epoch);
          if (changed) log::info("{}-{}: follower of {} at epoch {}", t->name, p->index(), leader, epoch);
        }
      }
    }
  }
  // Partitions this broker no longer holds (a reassignment moved them away; their logs are being deleted): no
  // fetcher keeps them, and a led one hands its coordinator shard over.
  for (auto it = applied_.begin(); it != applied_.end();) {
    if (present.contains(it->first)) {
      ++it;
      continue;
    }
    if (auto p = it->second.p.lock()) {
      for (auto& [id, f] : fetchers_) f->remove(p);
      if (it->second.role == replica_role::leader && leadership_) leadership_(p, false);
    }
    it = applied_.erase(it);
  }
  // Endpoints may have changed; idle fetchers (no partition left) stay until stop: cheap, and a leader
  // often comes back.
  for (auto& [id, f] : fetchers_)
    if (auto b = s->brokers.find(id); b != s->brokers.end()) f->set_endpoint(b->second.host, static_cast<uint16_t>(b->second.port));
}

metrics::counter& isr_shrinks_counter() {
  return metrics::process_registry().counter("kafka_server_replicamanager_isrshrinks_total",
                                             "ISR changes stored by this leader that removed replicas");
}

metrics::counter& isr_expands_counter() {
  return metrics::process_registry().counter("kafka_server_replicamanager_isrexpands_total",
                                             "ISR changes stored by this leader that added replicas");
}

void replica_manager::submit_isr_change(std::shared_ptr<partition> p, isr_change change) {
  asio::post(isr_io_, [this, p = std::move(p), change = std::move(change)] {
    coordination::partition_state next;
    next.leader = config_.broker_id;
    next.leader_epoch = change.leader_epoch;
    next.isr = change.isr;
    next.version = change.version;
    if (auto c = view_.snapshot(); c)
      if (auto* st = c->state(p->topic(), p->index())) next.controller_epoch = st->controller_epoch;
    auto stored = view_.update_isr(p->topic(), p->index(), next);
    if (!stored) {
      log::info("{}-{}: ISR change to {} members not stored: {}", p->topic(), p->index(), change.isr.size(),
                stored.err().message);
      asio::post(p->strand(), [p] { p->clear_pending_isr(); });
      return;
    }
    log::info("{}-{}: ISR now {} members (epoch {}, version {})", p->topic(), p->index(), stored->isr.size(),
              stored->leader_epoch, stored->version);
    if (stored->isr.size() < static_cast<size_t>(p->isr_size())) isr_shrinks_counter().add();
    else if (stored->isr.size() > static_cast<size_t>(p->isr_size())) isr_expands_counter().add();
    isr_change applied{stored->leader_epoch, stored->isr, stored->version};
    asio::post(p->strand(), [p, applied] { p->apply_isr(applied); });
  });
}

asio::awaitable<void> replica_manager::shrink_loop() {
  const int64_t lag_max_ms = config_long(config_, "replica.lag.time.max.ms", 30000);
  const auto period = std::chrono::milliseconds(std::max<int64_t>(lag_max_ms / 2, 50));
  while (!stopped_) {
    shrink_timer_.expires_after(period);
    co_await shrink_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (stopped_) break;
    const int64_t now = clock_.now_ms();
    for (const auto& t : topics_.all()) {
      for (const auto& p : t->partitions) {
        if (!p || !p->is_leader()) continue;
        asio::post(p->strand(), [this, p, now, lag_max_ms] {
          if (auto change = p->propose_isr_shrink(now, lag_max_ms)) submit_isr_change(p, std::move(*change));
        });
      }
    }
  }
}

}  // namespace sluice::broker
