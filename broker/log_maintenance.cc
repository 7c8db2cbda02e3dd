#include "broker/log_maintenance.h"

#include <charconv>

#include "base/logging.h"
#include "broker/call_on.h"
#include "broker/topic_config.h"

namespace sluice::broker {

namespace asio = boost::asio;

namespace {

int64_t topic_long(const topic& t, const char* key, int64_t fallback) {
  return topic_config_long(t.configs, key).value_or(fallback);
}

bool deletes_by_retention(const topic& t, const broker_config& config) {
  auto it = t.configs.find("cleanup.policy");
  const std::string policy = it != t.configs.end() ? it->second : config.values.at("log.cleanup.policy");
  return policy.find("delete") != std::string::npos;
}

int64_t config_long(const broker_config& config, const char* key, int64_t fallback) {
  auto it = config.values.find(key);
  if (it == config.values.end()) return fallback;
  int64_t v = fallback;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

}  // namespace

log_maintenance::log_maintenance(asio::any_io_executor executor, const broker_config& config, topic_registry& topics,
                                 sluice::clock& clock)
    : executor_(executor), config_(config), topics_(topics), clock_(clock), timer_(executor) {}

void log_maintenance::start() { asio::co_spawn(executor_, run(), asio::detached); }

void log_maintenance::stop() {
  asio::post(executor_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

asio::awaitable<void> log_maintenance::run() {
  const int64_t retention_interval = config_.log_retention_check_interval_ms;
  const int64_t checkpoint_interval = config_long(config_, "log.flush.offset.checkpoint.interval.ms", 60000);
  const int64_t tick = std::min<int64_t>(1000, retention_interval);
  int64_t last_retention = clock_.monotonic_ms();
  int64_t last_checkpoint = last_retention;
  while (!stopped_) {
    timer_.expires_after(std::chrono::milliseconds(tick));
    auto [ec] = co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || stopped_) co_return;
    const int64_t now = clock_.monotonic_ms();
    const bool retention_due = now - last_retention >= retention_interval;
    if (retention_due) last_retention = now;
    int deleted = 0;
    for (const auto& t : topics_.all()) {
      const bool retain = retention_due && deletes_by_retention(*t, config_);
      const int64_t retention_ms = topic_long(*t, "retention.ms", config_.log_retention_ms);
      const int64_t retention_bytes = topic_long(*t, "retention.bytes", config_.log_retention_bytes);
      for (const auto& p : t->partitions) {
        if (!p) continue;  // cluster mode: no replica here
        auto op = call_on(p->strand(), [p, retain, retention_ms, retention_bytes] {
          int n = 0;
          if (retain) {
            auto r = p->enforce_retention(retention_ms, retention_bytes);
            if (r) n = *r;
            else log::warn("retention of {}-{}: {}", p->topic(), p->index(), r.err().message);
          }
          if (auto f = p->flush_if_needed(); !f) log::warn("flush of {}-{}: {}", p->topic(), p->index(), f.err().message);
          return n;
        });
        int n = co_await std::move(op);
        if (n > 0) log::info("retention: deleted {} segment(s) of {}-{}, log start offset now {}", n, p->topic(),
                             p->index(), p->log_start_offset());
        deleted += n;
      }
    }
    if (deleted > 0 || now - last_checkpoint >= checkpoint_interval) {
      topics_.write_checkpoints();
      last_checkpoint = now;
    }
  }
}

}  // namespace sluice::broker
