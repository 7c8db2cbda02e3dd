#pragma once
// connection: one blocking TCP client connection to a broker (loopback), frames out, frames in.
// Used by sluice_diff only; no Asio, a poll(2) deadline per read so every wait is bounded.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::diff {

/// What a round trip ended with: a response frame, the broker closed the connection, or no answer
/// within the deadline.
enum class outcome { response, closed, timeout, connect_failed };

std::string_view outcome_name(outcome o);

class connection {
 public:
  /// `address`: "HOST:PORT" (numeric IPv4, e.g. 127.0.0.1:9092).
  explicit connection(std::string address) : address_(std::move(address)) {}
  ~connection() { close(); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  const std::string& address() const { return address_; }
  /// Sends one complete frame (size prefix included). Connects first when not connected.
  /// false: connect or write failed (the connection is closed).
  bool send(const std::vector<uint8_t>& frame);
  /// Reads one response frame (without its size prefix) within `timeout_ms`. On closed/timeout the
  /// connection is closed, so the next send reconnects.
  outcome receive(std::vector<uint8_t>& body, int timeout_ms);
  void close();
  bool connected() const { return fd_ >= 0; }

 private:
  bool connect();
  bool read_exact(uint8_t* out, size_t n, int64_t deadline_ms, outcome& why);

  std::string address_;
  int fd_ = -1;
};

}  // namespace sluice::diff
