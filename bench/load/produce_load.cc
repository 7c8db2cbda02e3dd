// The produce workload of sluice_load: one produce_connection per connection (load_run.h).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <array>
#include <cstring>
#include <deque>
#include <memory>

#include "bench/load/kafka_connection.h"
#include "bench/load/load_run.h"
#include "protocol/messages/produce.h"

namespace sluice::bench {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

/// How long a connection waits for its last responses after it stopped sending.
constexpr auto drain_timeout = 10s;
/// Byte offset of the correlation id in a request frame: size (4), api key (2), api version (2).
constexpr size_t correlation_id_offset = 8;

int64_t micros(load_clock::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }

/// One produce connection: a writer coroutine (run) sending pre-encoded requests and, unless acks=0, a reader
/// coroutine (read_responses) matching responses to the requests in flight, in order. Lives on its thread's
/// io_context, owned by shared_ptr copies held by both coroutines.
class produce_connection : public std::enable_shared_from_this<produce_connection> {
 public:
  produce_connection(load_thread& thread, shared_run& run, const topic_layout& layout, std::span<const uint8_t> batch,
                     connection_plan plan, int index, int total)
      : thread_(thread),
        run_(run),
        opts_(run.opts),
        layout_(layout),
        batch_(batch),
        plan_(std::move(plan)),
        index_(index),
        total_(total),
        conn_(thread.io, plan_.broker, run.opts.client_id),
        wake_(thread.io),
        pace_(thread.io) {}

  asio::awaitable<void> run() {
    auto self = shared_from_this();
    try {
      // GCC 12: each awaitable is built before its co_await (temporaries of a co_await full-expression are
      // destroyed twice).
      auto connecting = conn_.connect();
      co_await std::move(connecting);
      auto negotiating = conn_.negotiate();
      co_await std::move(negotiating);
      prepare();
    } catch (const std::exception& e) {
      run_.note_failure(e.what());
      co_return;
    }
    run_.ready.fetch_add(1);
    auto starting = thread_.wait_start();
    co_await std::move(starting);
    if (opts_.acks != 0) asio::co_spawn(thread_.io, read_responses(), asio::detached);
    try {
      auto sending = send_loop();
      co_await std::move(sending);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    sending_done_ = true;
    if (opts_.acks != 0) {
      auto draining = drain();
      co_await std::move(draining);
    }
    conn_.close();
  }

 private:
  struct in_flight {
    int32_t correlation_id;
    load_clock::time_point intended;  // max rate: the actual send time
  };
  struct request_bytes {
    std::vector<uint8_t> prefix;  // size, header, body up to the records length
    std::vector<uint8_t> suffix;  // what follows the batch (tagged-field sections of flexible versions)
  };

  // Chooses the Produce version and encodes one request per partition with the codec, then splits each frame
  // around the batch: the batch bytes are shared by all requests, only the prefix (with the correlation id) is
  // per partition.
  void prepare() {
    // Produce v3 is Kafka 4.0's oldest (KIP-896); v13 names topics by id (KIP-516).
    auto v = conn_.pick(protocol::api_key::produce, 3, 13);
    if (v && *v >= 13 && layout_.topic_id.is_zero()) v = 12;
    if (!v) conn_.fail("the broker serves no Produce version in 3-13");
    version_ = *v;
    run_.api_version.store(version_);
    for (int32_t p : plan_.partitions) {
      protocol::produce_request req;
      req.acks = opts_.acks;
      req.timeout_ms = opts_.timeout_ms;
      auto& t = req.topic_data.emplace_back();
      t.name = layout_.topic;
      t.topic_id = layout_.topic_id;
      auto& pd = t.partition_data.emplace_back();
      pd.index = p;
      pd.records_ = protocol::records::from_memory(batch_);
      auto frame = protocol::encode_request(0, version_, opts_.client_id, req).bytes;
      // Flexible versions end with three empty tagged-field sections: partition, topic, request.
      const size_t suffix = version_ >= protocol::produce_request::first_flexible_version ? 3 : 0;
      if (frame.size() < suffix + batch_.size()) conn_.fail("Produce request shorter than its batch");
      const size_t at = frame.size() - suffix - batch_.size();
      if (std::memcmp(frame.data() + at, batch_.data(), batch_.size()) != 0)
        conn_.fail("Produce request: batch not where expected");
      request_bytes rb;
      rb.prefix.assign(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(at));
      rb.suffix.assign(frame.end() - static_cast<std::ptrdiff_t>(suffix), frame.end());
      requests_.push_back(std::move(rb));
    }
  }

  asio::awaitable<void> wait_wake(load_clock::time_point until) {
    wake_.expires_at(until);
    boost::system::error_code ec;
    co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  asio::awaitable<void> send_loop() {
    const auto& times = run_.times;
    const bool fixed_rate = opts_.rate > 0;
    // Fixed rate: this connection's share of the rate, one batch every `interval`, connections' schedules offset
    // evenly within one interval.
    load_clock::duration interval{};
    load_clock::time_point intended = times.start;
    if (fixed_rate) {
      const double seconds = opts_.batch_records * static_cast<double>(total_) / opts_.rate;
      interval = std::chrono::duration_cast<load_clock::duration>(std::chrono::duration<double>(seconds));
      intended += interval * index_ / total_;
    }
    size_t next = 0;
    const size_t window = static_cast<size_t>(opts_.inflight);
    while (!broken_) {
      if (fixed_rate) {
        if (intended >= times.deadline) break;
        if (load_clock::now() < intended) {
          pace_.expires_at(intended);
          boost::system::error_code ec;
          co_await pace_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
      } else if (load_clock::now() >= times.deadline) {
        break;
      }
      if (opts_.acks != 0)
        while (pending_.size() >= window && !broken_) {
          auto waiting = wait_wake(load_clock::time_point::max());
          co_await std::move(waiting);
        }
      if (broken_) break;
      const auto now = load_clock::now();
      if (!fixed_rate && now >= times.deadline) break;
      if (!run_.claim(opts_.batch_records)) break;
      if (fixed_rate && now - intended > 1ms && intended >= times.warmup_end) ++thread_.counters.late_sends;
      const size_t i = next++ % requests_.size();
      auto& rb = requests_[i];
      const int32_t corr = conn_.next_correlation_id();
      for (int b = 0; b < 4; ++b) rb.prefix[correlation_id_offset + b] = static_cast<uint8_t>(corr >> (24 - 8 * b));
      const auto sent_for = fixed_rate ? intended : now;
      if (opts_.acks != 0) pending_.push_back({corr, sent_for});
      std::array<asio::const_buffer, 3> bufs{asio::buffer(rb.prefix), asio::buffer(batch_.data(), batch_.size()),
                                             asio::buffer(rb.suffix)};
      boost::system::error_code ec;
      co_await asio::async_write(conn_.socket(), bufs, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) conn_.fail("write: " + ec.message());
      if (opts_.acks == 0) {
        // acks=0: Kafka sends no response; a request counts once written (no latency).
        const auto done = load_clock::now();
        if (done >= times.warmup_end) count_ok(done);
      }
      if (fixed_rate) intended += interval;
    }
  }

  void count_ok(load_clock::time_point done) {
    auto& c = thread_.counters;
    ++c.requests;
    c.records += opts_.batch_records;
    c.value_bytes += int64_t{opts_.batch_records} * opts_.record_size;
    c.batch_bytes += static_cast<int64_t>(batch_.size());
    c.last_completion = std::max(c.last_completion, done);
  }

  asio::awaitable<void> read_responses() {
    auto self = shared_from_this();
    try {
      while (!(sending_done_ && pending_.empty())) {
        auto reading = conn_.read_frame();
        auto body = co_await std::move(reading);
        const auto done = load_clock::now();
        if (pending_.empty()) conn_.fail("a Produce response without a request in flight");
        const in_flight req = pending_.front();
        pending_.pop_front();
        auto resp = conn_.decode_response<protocol::produce_response>(body, req.correlation_id, version_);
        auto& c = thread_.counters;
        bool ok = true;
        for (const auto& t : resp.responses)
          for (const auto& p : t.partition_responses)
            if (p.error_code != protocol::error_code::none) {
              ok = false;
              if (done >= run_.times.warmup_end) ++c.errors[static_cast<int16_t>(p.error_code)];
            }
        if (done >= run_.times.warmup_end) {
          if (ok)
            count_ok(done);
          else
            ++c.requests;
        }
        if (req.intended >= run_.times.warmup_end)
          c.latency.record(static_cast<uint64_t>(std::max<int64_t>(0, micros(done - req.intended))));
        wake_.cancel();
      }
    } catch (const std::exception& e) {
      if (!closing_) fail(e.what());
    }
    reader_done_ = true;
    wake_.cancel();
  }

  // Waits for the responses still in flight, up to drain_timeout.
  asio::awaitable<void> drain() {
    const auto until = load_clock::now() + drain_timeout;
    while (!reader_done_ && !pending_.empty() && load_clock::now() < until) {
      auto waiting = wait_wake(until);
      co_await std::move(waiting);
    }
    if (!pending_.empty()) {
      thread_.counters.unanswered += static_cast<int64_t>(pending_.size());
      pending_.clear();
    }
    closing_ = true;
    conn_.close();
    while (!reader_done_) {
      auto waiting = wait_wake(load_clock::now() + 100ms);
      co_await std::move(waiting);
    }
  }

  void fail(const std::string& what) {
    if (broken_) return;
    broken_ = true;
    run_.note_failure(what);
    thread_.counters.unanswered += static_cast<int64_t>(pending_.size());
    pending_.clear();
    wake_.cancel();
    pace_.cancel();
    // Aborts a write blocked on a broker that stopped reading; the reader then ends (its error is not counted again).
    closing_ = true;
    conn_.close();
  }

  load_thread& thread_;
  shared_run& run_;
  const load_options& opts_;
  const topic_layout& layout_;
  std::span<const uint8_t> batch_;
  connection_plan plan_;
  int index_;
  int total_;
  kafka_connection conn_;
  asio::steady_timer wake_;  // the writer waits on it; the reader cancels it after each response
  asio::steady_timer pace_;  // fixed rate: the next intended send time
  int16_t version_ = 3;
  std::vector<request_bytes> requests_;  // one per partition of plan_.partitions
  std::deque<in_flight> pending_;
  bool sending_done_ = false;
  bool broken_ = false;
  bool closing_ = false;
  bool reader_done_ = false;
};

}  // namespace

void spawn_produce_connection(load_thread& thread, shared_run& run, const topic_layout& layout,
                              std::span<const uint8_t> batch, connection_plan plan, int index, int total) {
  auto c = std::make_shared<produce_connection>(thread, run, layout, batch, std::move(plan), index, total);
  asio::co_spawn(thread.io, [c]() { return c->run(); }, asio::detached);
}

}  // namespace sluice::bench
