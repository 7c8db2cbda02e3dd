#pragma once
// Background work on every partition log, as Kafka's LogManager schedules it: retention (time and
// size), time-based flushes (flush.ms), and the recovery-point / log-start-offset checkpoints.
#include <boost/asio.hpp>

#include "base/clock.h"
#include "broker/config.h"
#include "broker/topic_registry.h"

namespace sluice::broker {

/// One coroutine on the io_context. Every tick (at most 1 s, or log.retention.check.interval.ms if
/// smaller) it visits each partition on that partition's strand: flush_if_needed() always, retention every
/// log.retention.check.interval.ms (topics whose cleanup.policy includes "delete"; retention.ms and
/// retention.bytes per topic, else the broker's log.retention.* values). Checkpoints are written after a
/// deletion and every log.flush.offset.checkpoint.interval.ms. Appends never wait for it.
class log_maintenance {
 public:
  log_maintenance(boost::asio::any_io_executor executor, const broker_config& config, topic_registry& topics,
                  sluice::clock& clock);
  void start();
  void stop();

 private:
  boost::asio::awaitable<void> run();

  boost::asio::any_io_executor executor_;
  const broker_config& config_;
  topic_registry& topics_;
  sluice::clock& clock_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
};

}  // namespace sluice::broker
