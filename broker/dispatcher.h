#pragma once
// From a request frame to a response frame (issue #13): header, handler lookup, version check, the session's
// and the hooks' say, decode, handler, throttle time, encode. The connection only moves bytes.
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <optional>
#include <span>
#include <string>

#include "base/metrics.h"
#include "broker/request_context.h"
#include "protocol/writer.h"

namespace sluice::broker {

/// What the dispatcher calls around every request. The default does nothing: authorization (ACLs, issue #17)
/// and quotas (KIP-13, KIP-124) and per-API metrics (issue #18) implement it. Called on the connection's strand.
class request_hooks {
 public:
  virtual ~request_hooks() = default;
  /// Before decoding the body: std::nullopt admits the request; a reason closes the connection (Kafka closes a
  /// connection whose client sends a request its session does not allow, e.g. before SASL authentication).
  virtual std::optional<std::string> admit(const session& s, const protocol::request_header& h) { return std::nullopt; }
  /// The throttle time (ms, >= 0) to report in the response; 0: not throttled.
  virtual int32_t throttle_time_ms(const session& s, const protocol::request_header& h) { return 0; }
  /// After the handler: the request's start and end on the broker's monotonic clock (ms) and whether a
  /// response is sent.
  virtual void completed(const session& s, const protocol::request_header& h, int64_t start_ms, int64_t end_ms,
                         bool responded) {}
};

/// One per broker, shared by every connection (stateless between requests; per-connection state is the
/// session's).
class dispatcher {
 public:
  /// `hooks` null: the no-op hooks (tests, and the security and metrics features, pass theirs here).
  explicit dispatcher(broker_services& services, request_hooks* hooks = nullptr);
  ~dispatcher();
  dispatcher(const dispatcher&) = delete;
  dispatcher& operator=(const dispatcher&) = delete;

  /// What the connection does with a request: send `frame`, send nothing (Produce acks=0), or close (`reason`
  /// already logged, naming the client, the API and version, and for a malformed body the field and byte
  /// offset).
  struct outcome {
    /// respond_then_close: a failed SASL authentication's answer, after which the connection goes (KIP-152).
    enum class kind { respond, no_response, close, respond_then_close } what = kind::respond;
    protocol::encoded_frame frame;
    int32_t mute_ms = 0;  // quota throttling: read nothing on the connection for this long after answering
  };

  /// Handles one request frame (the bytes after the 4-byte size). `frame` must stay valid until the returned
  /// awaitable completes. Runs on the connection's strand `executor`.
  boost::asio::awaitable<outcome> dispatch(session& s, std::span<const uint8_t> frame,
                                           boost::asio::any_io_executor executor);

 private:
  /// Per-API metrics in the process registry (Kafka's kafka.network:type=RequestMetrics as the JMX exporter
  /// names it): kafka_network_requestmetrics_requests_total{request,version} and the histogram
  /// kafka_network_requestmetrics_totaltimems{request} (ms, from the decoded header to the handler's end), and
  /// the bytes of request and response frames per API, sluice_network_request_bytes_total{request} and
  /// sluice_network_response_bytes_total{request} (Kafka's RequestBytes histogram as sums: divided by the request
  /// count they give the mean sizes). Series are made at the first request of each API/version; afterwards one
  /// relaxed load finds them.
  void observe(int16_t api_key, int16_t version, int64_t elapsed_us, size_t request_bytes, size_t response_bytes);

  static constexpr size_t kMaxKey = 128, kMaxVersion = 32;
  broker_services& services_;
  request_hooks* hooks_;
  std::unique_ptr<std::array<std::atomic<metrics::counter*>, kMaxKey * kMaxVersion>> requests_;
  std::unique_ptr<std::array<std::atomic<metrics::histogram*>, kMaxKey>> total_time_;
  struct byte_counters {
    metrics::counter* request;
    metrics::counter* response;
  };
  std::unique_ptr<std::array<std::atomic<byte_counters*>, kMaxKey>> bytes_;
};

}  // namespace sluice::broker
