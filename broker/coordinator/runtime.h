#pragma once
// The coordinator runtime (issue #13; Kafka's CoordinatorRuntime): one shard per partition of an internal topic,
// loaded by replaying the partition's log when leadership of it arrives here and unloaded when it leaves, with a
// timer on the injected clock and writes that complete once the high watermark passes them. The consumer group
// coordinator runs on it (broker/group_service.h); the transaction coordinator will.
#include <atomic>
#include <boost/asio.hpp>
#include <concepts>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"
#include "base/published.h"
#include "broker/coordinator/internal_log.h"
#include "broker/partition.h"
#include "broker/purgatory.h"
#include "broker/topic_registry.h"

namespace sluice::broker::coordinator {

namespace asio = boost::asio;

/// What a shard is to the runtime (Kafka's CoordinatorShard): a deterministic state machine over its partition's
/// records, with deadlines, that never writes. Its operations return the records to append with the response
/// (`write`), or queue appends of their own (`take_writes`: what timers and other members' requests started);
/// the runtime appends each, waits until it is committed, replays its records into the shard, then answers.
/// Every call is made on the partition's strand.
///
/// Optional extras, used when the shard has them (transactions, KIP-98; the group coordinator has all three):
///  - `typename S::record_context` (fields offset, producer_id, producer_epoch, transactional) and
///    `s.replay(key, value, ctx)`: records are replayed with their log offset and their batch's producer (Kafka's
///    replay(offset, producerId, producerEpoch, record)) instead of `replay(key, value)`;
///  - `s.replay_end_txn(producer_id, commit)`: a COMMIT/ABORT marker of that producer in this partition, at load
///    and through `on_txn_marker` (Kafka's replayEndTransactionMarker);
///  - a write result with `producer` (an optional with producer_id, producer_epoch): its records are appended as
///    that producer's transactional batch.
template <typename S>
concept coordinator_shard = requires(S& s, const record_bytes& key, const std::optional<record_bytes>& value) {
  typename S::error_type;  // an enum with Kafka's error numbers, for append outcomes
  s.begin_loading();
  s.replay(key, value);  // one record, in offset order; no value: a tombstone (loading, and each committed write)
  s.finish_loading();
  s.unload();  // leadership left: forget everything, answer waiting calls NOT_COORDINATOR
  { s.next_deadline() } -> std::convertible_to<std::optional<int64_t>>;  // monotonic ms of the injected clock
  s.on_timer();  // runs every expired deadline
  // Queued appends: each has `records` (each with `key`, `value`) and `done(error_type)`.
  s.take_writes();
};

/// Threading: `slot_for`/`slots` may be called from any strand (they read an immutable snapshot); loading is
/// serialized by a mutex. Everything inside a slot (shard, writer, timer) is touched only on the partition's
/// strand, so a shard's appends run synchronously on the strand that owns the log.
template <coordinator_shard Shard>
class coordinator_runtime {
 public:
  using shard_type = Shard;
  /// One partition of the internal topic and its shard (null slot: no replica of the partition here).
  struct slot {
    std::shared_ptr<partition> part;
    std::unique_ptr<internal_writer> writer;
    std::unique_ptr<Shard> shard;
    std::shared_ptr<purgatory_waiter> timer;
    std::optional<int64_t> armed;  // the deadline `timer` waits for
    /// Appends whose outcome is not delivered yet, in append (= offset) order: each is replayed and answered only
    /// after every earlier one, so the shard sees its records in log order whatever order the waits end in.
    struct in_flight {
      std::vector<internal_record> records;
      std::optional<producer_stamp> producer;       // a transactional batch of this producer
      std::function<void(typename Shard::error_type)> done;
      std::optional<protocol::error_code> outcome;  // set when its wait ended
      int64_t base_offset = -1;                     // where the batch was written
      std::optional<txn_marker_context> marker;     // no records: a marker to replay in this order (on_txn_marker)
    };
    std::deque<std::shared_ptr<in_flight>> in_flight_writes;
    partition::strand_type& strand() { return part->strand(); }
  };
  /// Builds the shard of `s` (its part and writer are set).
  using shard_factory = std::function<std::unique_ptr<Shard>(slot& s)>;

  /// `topic`: the internal topic; `commit_timeout_ms` bounds each write's wait for the ISR; `min_insync_replicas`
  /// is read at each write (the topic's current config). `before_load(partition_count)` runs once, before the
  /// shards are built (the group coordinator checks its partition count there).
  coordinator_runtime(std::string topic, topic_registry& topics, sluice::clock& clock, int64_t commit_timeout_ms,
                      std::function<int32_t()> min_insync_replicas, shard_factory make_shard,
                      std::function<void(size_t)> before_load = {})
      : topic_(std::move(topic)), topics_(topics), clock_(clock), commit_timeout_ms_(commit_timeout_ms),
        min_insync_replicas_(std::move(min_insync_replicas)), make_shard_(std::move(make_shard)),
        before_load_(std::move(before_load)) {
    slots_.store(std::make_shared<const std::vector<std::shared_ptr<slot>>>());
  }

  const std::string& topic() const { return topic_; }
  bool loaded() const { return !slots_.load()->empty(); }

  /// Builds the shards of the topic's partitions if not done yet (the topic must exist), and loads each one led
  /// here by replaying its log on its strand. Returns false when the topic does not exist (yet). Any thread.
  bool load() {
    if (loaded()) return true;
    std::lock_guard lock(mutex_);
    if (loaded()) return true;
    auto t = topics_.find(topic_);
    if (!t) return false;
    if (before_load_) before_load_(t->partitions.size());
    auto next = std::make_shared<std::vector<std::shared_ptr<slot>>>();
    for (const auto& p : t->partitions) {
      if (!p) {  // cluster mode: no replica of this partition here, so never its coordinator
        next->push_back(nullptr);
        continue;
      }
      auto s = std::make_shared<slot>();
      s->part = p;
      s->writer = std::make_unique<internal_writer>(p, clock_, commit_timeout_ms_, min_insync_replicas_);
      s->shard = make_shard_(*s);
      // Requests reaching a shard before its replay ran find it inactive (NOT_COORDINATOR: clients retry).
      next->push_back(s);
    }
    slots_.store(next);
    for (auto& s : *next) {
      if (!s) continue;
      // Single node: every shard is led here. Cluster mode: a shard loads when its partition's leadership
      // arrives (on_leadership_change), which may be now.
      asio::post(s->strand(), [this, s] {
        if (s->part->is_leader()) load_on_strand(s);
      });
    }
    return true;
  }

  /// The topic was deleted (DeleteTopics of an internal topic, which Kafka allows): every shard is unloaded on its
  /// strand (its callers get NOT_COORDINATOR) and the slots are forgotten, so that the next load() builds them for
  /// the topic created again. What the deleted topic held is gone, as in Kafka. Any thread.
  void reset() {
    std::lock_guard lock(mutex_);
    auto old = slots_.load();
    slots_.store(std::make_shared<const std::vector<std::shared_ptr<slot>>>());
    for (const auto& s : *old) {
      if (!s) continue;
      asio::post(s->strand(), [s] {
        s->shard->unload();
        s->armed.reset();
        if (s->timer) s->timer->wake();
        s->timer.reset();
      });
    }
  }

  /// A partition of the topic became led here (replayed, then active) or stopped being led here (unloaded).
  /// Other topics are ignored. Any thread.
  void on_leadership_change(const std::shared_ptr<partition>& p, bool leader) {
    if (p->topic() != topic_) return;
    if (!loaded()) {
      load();  // replays the shards led here
      return;
    }
    auto all = slots_.load();
    if (p->index() >= static_cast<int32_t>(all->size())) return;
    auto s = (*all)[static_cast<size_t>(p->index())];
    if (!s || s->part != p) return;
    asio::post(s->strand(), [this, s, leader] {
      if (leader && s->part->is_leader()) {
        log::info("coordinator {}-{}: loading", topic_, s->part->index());
        load_on_strand(s);
      } else if (!leader) {
        log::info("coordinator {}-{}: led elsewhere now, unloading", topic_, s->part->index());
        s->shard->unload();
        settle(s);  // unloading may answer and queue nothing, but keep one path
        s->armed.reset();
        if (s->timer) s->timer->wake();
      }
    });
  }

  /// The slot of partition `index`, or null (not loaded, out of range, no replica here).
  std::shared_ptr<slot> slot_for(int32_t index) const {
    auto all = slots_.load();
    if (index < 0 || index >= static_cast<int32_t>(all->size())) return nullptr;
    return (*all)[static_cast<size_t>(index)];
  }
  std::vector<std::shared_ptr<slot>> slots() const { return *slots_.load(); }
  int32_t partition_count() const { return static_cast<int32_t>(slots_.load()->size()); }

  /// On the slot's strand: waits for the shard's next deadline on the injected clock (a superseded wait is
  /// woken and ignores its end), then runs `on_timer` and re-arms.
  void arm_timer(const std::shared_ptr<slot>& s) {
    auto next = s->shard->next_deadline();
    if (next == s->armed) return;
    s->armed = next;
    if (s->timer) s->timer->wake();
    s->timer.reset();
    if (!next) return;
    auto waiter = std::make_shared<purgatory_waiter>(s->strand());
    s->timer = waiter;
    waiter->async_wait(wait_deadline{&clock_, *next}, [this, s, expected = *next, waiter] {
      if (s->timer != waiter || s->armed != expected) return;  // superseded (a newer wait replaced it) or unloaded
      s->armed.reset();
      s->timer.reset();
      s->shard->on_timer();
      settle(s);
    });
  }

  /// A COMMIT (`commit`) or ABORT marker of `producer_id` was appended to partition `index` of the topic and is
  /// committed (the transaction side writes it with partition::append_marker, then calls this). Any thread: on the
  /// slot's strand, the shard's `replay_end_txn(producer_id, commit)` runs after the outcomes of every append made
  /// before it (so a transactional write still waiting for the high watermark is replayed as pending first, as it
  /// precedes the marker in the log). No-op for shards without replay_end_txn, unknown partitions, and partitions
  /// not loaded here (a later load replays the marker from the log).
  void on_txn_marker(int32_t index, int64_t producer_id, bool commit) {
    if constexpr (requires(Shard& shard) { shard.replay_end_txn(producer_id, commit); }) {
      auto s = slot_for(index);
      if (!s) return;
      asio::post(s->strand(), [this, s, producer_id, commit] {
        auto w = std::make_shared<typename slot::in_flight>();
        w->marker = txn_marker_context{-1, producer_id, -1, commit, -1};
        w->done = [](typename Shard::error_type) {};
        w->outcome = protocol::error_code::none;
        s->in_flight_writes.push_back(w);
        deliver(s);
      });
    }
  }

  /// Runs `f(shard, reply)` on the slot's strand, where `reply(R)` may be called then or later (on that strand);
  /// resumes the calling coroutine on its own executor with the R. Re-arms the slot's timer.
  template <typename R, typename F>
  asio::awaitable<R> call(std::shared_ptr<slot> s, F f) {
    auto initiate = [this, s](auto handler, F work) mutable {
      asio::post(s->strand(), [this, s, work = std::move(work), handler = std::move(handler)]() mutable {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        std::function<void(R)> reply = [h](R value) {
          auto back = asio::get_associated_executor(*h);
          asio::post(back, [h, value = std::move(value)]() mutable { std::move (*h)(std::move(value)); });
        };
        work(*s->shard, std::move(reply));
        settle(s);
      });
    };
    co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(R)>(std::move(initiate),
                                                                                    asio::use_awaitable, std::move(f));
  }

  /// Runs `f(shard)` (returning a value) on the slot's strand and re-arms the timer.
  template <typename F>
  auto run(std::shared_ptr<slot> s, F f) -> asio::awaitable<std::invoke_result_t<F&, Shard&>> {
    using R = std::invoke_result_t<F&, Shard&>;
    // Named before co_await: GCC 12 destroys lambda temporaries of a co_await full-expression twice.
    auto work = [f = std::move(f)](Shard& shard, std::function<void(R)> reply) mutable { reply(f(shard)); };
    auto op = call<R>(std::move(s), std::move(work));
    co_return co_await std::move(op);
  }

  /// Kafka's scheduleWriteOperation: runs `op(shard)` on the slot's strand, which returns a result with
  /// `records`, `response` and `failed(error_type) -> R`; appends the records as one batch (acks=-1), and once the
  /// high watermark passed them replays each into the shard and resumes the caller with `response`. A failed
  /// append resumes it with `failed(error)` and replays nothing. No records: `response` at once. A result with a
  /// `producer` set is appended as that producer's transactional batch.
  template <typename R, typename Op>
  asio::awaitable<R> write(std::shared_ptr<slot> s, Op op) {
    auto work = [this, s, op = std::move(op)](Shard& shard, std::function<void(R)> reply) mutable {
      auto result = op(shard);
      if (result.records.empty()) {
        reply(std::move(result.response));
        return;
      }
      std::optional<producer_stamp> producer;
      if constexpr (requires { result.producer->producer_id; result.producer->producer_epoch; }) {
        if (result.producer) producer = producer_stamp{result.producer->producer_id, result.producer->producer_epoch};
      }
      append(s, std::move(result.records), std::move(producer),
             [reply = std::move(reply), response = std::move(result.response),
              failed = std::move(result.failed)](typename Shard::error_type e) mutable {
               reply(e == typename Shard::error_type{} ? std::move(response) : failed(e));
             });
    };
    auto call_op = call<R>(std::move(s), std::move(work));
    co_return co_await std::move(call_op);
  }

 private:
  /// After every call into a shard: appends what it queued, then re-arms its timer.
  void settle(const std::shared_ptr<slot>& s) {
    for (auto& w : s->shard->take_writes()) append(s, std::move(w.records), std::nullopt, std::move(w.done));
    arm_timer(s);
  }

  /// Appends `records` (each with `key`, `value`) through the slot's writer. Outcomes are delivered in append
  /// order (Kafka's runtime completes deferred events in offset order as the high watermark moves): committed ones
  /// replay their records into the shard, then `done(NONE)`; failed ones `done(error)` with nothing replayed. Then
  /// the slot settles (what `done` queued is appended).
  template <typename Records, typename Done>
  void append(const std::shared_ptr<slot>& s, Records records, std::optional<producer_stamp> producer, Done done) {
    auto w = std::make_shared<typename slot::in_flight>();
    w->records.reserve(records.size());
    for (auto& r : records) w->records.push_back({std::move(r.key), std::move(r.value)});
    w->producer = producer;
    w->done = std::move(done);
    s->in_flight_writes.push_back(w);
    s->writer->append(w->records, w->producer, [this, s, w](protocol::error_code e, int64_t base_offset) {
      w->outcome = e;
      w->base_offset = base_offset;
      deliver(s);
    });
  }

  /// One record into the shard, with its context when the shard takes one.
  static void replay_record(Shard& shard, const record_bytes& key, const std::optional<record_bytes>& value,
                            const record_context& ctx) {
    if constexpr (requires { typename Shard::record_context; }) {
      typename Shard::record_context c;
      c.offset = ctx.offset;
      c.producer_id = ctx.producer_id;
      c.producer_epoch = ctx.producer_epoch;
      c.transactional = ctx.transactional;
      shard.replay(key, value, c);
    } else {
      shard.replay(key, value);
    }
  }
  static void replay_marker(Shard& shard, const txn_marker_context& m) {
    if constexpr (requires { shard.replay_end_txn(m.producer_id, m.commit); }) shard.replay_end_txn(m.producer_id, m.commit);
  }

  /// Delivers the outcomes at the front of the slot's in-flight queue that are known, in order.
  void deliver(const std::shared_ptr<slot>& s) {
    using error_type = typename Shard::error_type;
    bool any = false;
    while (!s->in_flight_writes.empty() && s->in_flight_writes.front()->outcome) {
      auto w = std::move(s->in_flight_writes.front());
      s->in_flight_writes.pop_front();
      const auto e = *w->outcome;
      if (w->marker) {
        replay_marker(*s->shard, *w->marker);
      } else if (e == protocol::error_code::none) {
        record_context ctx;
        if (w->producer) {
          ctx.producer_id = w->producer->producer_id;
          ctx.producer_epoch = w->producer->producer_epoch;
          ctx.transactional = true;
        }
        for (size_t i = 0; i < w->records.size(); ++i) {
          ctx.offset = w->base_offset < 0 ? -1 : w->base_offset + static_cast<int64_t>(i);
          replay_record(*s->shard, w->records[i].key, w->records[i].value, ctx);
        }
      }
      w->done(static_cast<error_type>(static_cast<std::underlying_type_t<error_type>>(e)));
      any = true;
    }
    if (any) settle(s);
  }

  void load_on_strand(const std::shared_ptr<slot>& s) {
    auto& shard = *s->shard;
    shard.begin_loading();
    replay_visitor visit;
    visit.record = [&shard](const record_bytes& k, const std::optional<record_bytes>& v, const record_context& ctx) {
      replay_record(shard, k, v, ctx);
    };
    if constexpr (requires(const txn_marker_context& m) { shard.replay_end_txn(m.producer_id, m.commit); }) {
      visit.marker = [&shard](const txn_marker_context& m) { replay_marker(shard, m); };
    }
    const size_t records = replay_log(*s->part, visit);
    shard.finish_loading();
    if (records > 0) log::info("coordinator {}-{}: replayed {} records", topic_, s->part->index(), records);
    settle(s);
  }

  const std::string topic_;
  topic_registry& topics_;
  sluice::clock& clock_;
  const int64_t commit_timeout_ms_;
  std::function<int32_t()> min_insync_replicas_;
  shard_factory make_shard_;
  std::function<void(size_t)> before_load_;
  std::mutex mutex_;
  published<const std::vector<std::shared_ptr<slot>>> slots_;
};

/// From a handler's coroutine: coordinator_runtime::write on `rt` (the awaitable is built before it is awaited: GCC 12
/// destroys lambda temporaries of a co_await full-expression twice).
template <typename R, typename Runtime, typename Op>
asio::awaitable<R> write_on(Runtime& rt, std::shared_ptr<typename Runtime::slot> s, Op op) {
  auto write_op = rt.template write<R>(std::move(s), std::move(op));
  co_return co_await std::move(write_op);
}

/// From a handler's coroutine: coordinator_runtime::run on `rt` (`f(shard)` returns the value).
template <typename Runtime, typename F>
auto run_on(Runtime& rt, std::shared_ptr<typename Runtime::slot> s, F f)
    -> asio::awaitable<std::invoke_result_t<F&, typename Runtime::shard_type&>> {
  auto op = rt.run(std::move(s), std::move(f));
  co_return co_await std::move(op);
}

}  // namespace sluice::broker::coordinator
