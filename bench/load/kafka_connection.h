#pragma once
// kafka_connection: one client TCP connection to a Kafka broker on Boost.Asio coroutines, as sluice_load uses
// it: connect, ApiVersions first (what every Kafka client sends before anything else), then framed requests and
// responses. Requests may be pipelined: writes and reads are independent, and the caller matches responses to
// requests by correlation id (Kafka answers a connection's requests in order).
//
// Owned by one io_context thread; not thread-safe.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/load/load_options.h"
#include "protocol/api_key.h"
#include "protocol/header.h"
#include "protocol/reader.h"

namespace sluice::bench {

/// A failure of a connection or of a protocol exchange (connect refused, closed by the broker, a response that
/// does not decode, a Kafka error code where none is allowed). The message names the broker and the step.
class load_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class kafka_connection {
 public:
  kafka_connection(boost::asio::io_context& io, broker_address address, std::string client_id)
      : socket_(io), address_(std::move(address)), client_id_(std::move(client_id)) {}

  const broker_address& address() const { return address_; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  const std::string& client_id() const { return client_id_; }

  /// Resolves and connects (TCP_NODELAY, as Kafka clients set it). Throws load_error naming the address.
  boost::asio::awaitable<void> connect();

  /// ApiVersions (v3, as the Java client 4.x and librdkafka send it; a broker that does not know v3 answers in v0
  /// with UNSUPPORTED_VERSION and its full list, KIP-511) and records the broker's [min, max] per API key.
  /// Throws load_error on a closed connection, a malformed response or an error code.
  boost::asio::awaitable<void> negotiate();

  /// The highest version of `key` within [lo, hi] (the client's range) that the broker advertised; nullopt when
  /// the ranges do not overlap or the broker did not list the API.
  std::optional<int16_t> pick(protocol::api_key key, int16_t lo, int16_t hi) const;

  /// Next correlation id (1, 2, ...).
  int32_t next_correlation_id() { return ++correlation_id_; }

  /// Writes all of `frame` (size prefix included). Throws load_error on a write error.
  boost::asio::awaitable<void> write(const std::vector<uint8_t>& frame);

  /// Reads one response frame into an internal buffer (reused: valid until the next read_frame) and returns a
  /// view of it without the 4-byte size prefix. Throws load_error on EOF, a read error or a size over 1 GiB.
  boost::asio::awaitable<std::span<const uint8_t>> read_frame();

  /// One request/response round trip, not pipelined: encodes `request` at `version` with this connection's
  /// client id, reads the response, checks the correlation id and decodes Resp at `version`. Records in the
  /// response view the internal buffer (valid until the next read). Throws load_error naming the API.
  template <class Resp, class Req>
  boost::asio::awaitable<Resp> call(const Req& request, int16_t version) {
    const int32_t corr = next_correlation_id();
    const auto frame = protocol::encode_request(corr, version, client_id_, request);
    auto writing = write(frame.bytes);  // GCC 12: awaitables built before their co_await
    co_await std::move(writing);
    auto reading = read_frame();
    auto body = co_await std::move(reading);
    co_return decode_response<Resp>(body, corr, version);
  }

  /// Decodes a response frame `body` (no size prefix) of API Resp::key at `version`, checking `correlation_id`.
  /// Throws load_error on a mismatch or a malformed body.
  template <class Resp>
  Resp decode_response(std::span<const uint8_t> body, int32_t correlation_id, int16_t version) const {
    protocol::reader r(body);
    int32_t got = 0;
    protocol::decode_response_header(r, protocol::response_header_version(static_cast<int16_t>(Resp::key), version),
                                     got);
    r.set_context(protocol::api_name(Resp::key), version, "response");
    Resp resp;
    if (r.ok()) resp.decode(r, version);
    if (!r.ok()) fail(r.error_message());
    if (got != correlation_id)
      fail("correlation id " + std::to_string(got) + ", expected " + std::to_string(correlation_id));
    return resp;
  }

  void close();

  /// Throws load_error("<host:port>: <what>").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  boost::asio::ip::tcp::socket socket_;
  broker_address address_;
  std::string client_id_;
  int32_t correlation_id_ = 0;
  std::map<int16_t, std::pair<int16_t, int16_t>> versions_;
  std::vector<uint8_t> buffer_;
};

}  // namespace sluice::bench
