#pragma once
// The byte stream under a connection: plain TCP today, TLS next (issue #17), behind one interface so that the
// connection, the session and the dispatcher never know which.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "base/file_region.h"
#include "protocol/writer.h"

namespace sluice::broker::net {

namespace asio = boost::asio;

/// One client's stream. Every member runs on `executor()` (the connection's strand); none is thread-safe.
///
/// Reads are exact (`read` fills the whole buffer or reports why not); writes throw
/// boost::system::system_error when the peer is gone, which ends the connection. File regions (fetched
/// record batches) go out with sendfile(2) where the transport allows zero-copy sends (plain TCP), and through
/// a copying path (pread(2) into a buffer, then `write`) otherwise.
class transport {
 public:
  virtual ~transport() = default;

  /// Runs before the first read: the TLS handshake for TLS transports (nothing for plain TCP). An error ends the
  /// connection (logged by the caller with the peer).
  virtual asio::awaitable<boost::system::error_code> start() { co_return boost::system::error_code{}; }
  /// The subject (RFC 2253) of the client's verified certificate: TLS with a client certificate only.
  virtual std::optional<std::string> peer_subject() const { return std::nullopt; }

  /// Reads exactly `buffer.size()` bytes. Returns the error (eof when the client closed) and how many bytes
  /// arrived before it.
  virtual asio::awaitable<std::pair<boost::system::error_code, size_t>> read(std::span<uint8_t> buffer) = 0;
  /// Writes every byte of `bytes`. Throws boost::system::system_error on failure.
  virtual asio::awaitable<void> write(std::span<const uint8_t> bytes) = 0;
  /// Sends `region` of its file: zero-copy when `zero_copy()`, else through `copy_file`. Throws on failure,
  /// including a file shorter than the region (eof).
  virtual asio::awaitable<void> send_file(const sluice::file_region& region) { return copy_file(region); }
  /// Whether `send_file` hands file pages to the kernel without copying them through user space.
  virtual bool zero_copy() const { return false; }
  /// Closes the stream (idempotent; errors ignored).
  virtual void close() = 0;
  /// The connection's strand: where every member must be called.
  virtual asio::any_io_executor executor() = 0;
  /// "address:port" of the client ("[v6]:port" for IPv6), for logs and Kafka's client host.
  virtual std::string peer() const = 0;

  /// Writes a response frame: its memory bytes and its file regions in order (DESIGN.md §3: a fetched batch
  /// is never copied into the response buffer).
  asio::awaitable<void> write_frame(const protocol::encoded_frame& frame);

 protected:
  /// The copying path: reads `region` with pread(2) in chunks of at most `copy_chunk_bytes` and writes them.
  asio::awaitable<void> copy_file(const sluice::file_region& region);
  static constexpr size_t copy_chunk_bytes = 64 * 1024;
};

/// Plain TCP (security protocols PLAINTEXT and SASL_PLAINTEXT). `zero_copy` false forces the copying path
/// (tests compare both paths byte for byte).
class plain_transport final : public transport {
 public:
  explicit plain_transport(asio::ip::tcp::socket socket, bool zero_copy = true);

  asio::awaitable<std::pair<boost::system::error_code, size_t>> read(std::span<uint8_t> buffer) override;
  asio::awaitable<void> write(std::span<const uint8_t> bytes) override;
  asio::awaitable<void> send_file(const sluice::file_region& region) override;
  bool zero_copy() const override { return zero_copy_; }
  void close() override;
  asio::any_io_executor executor() override { return socket_.get_executor(); }
  std::string peer() const override { return peer_; }

 private:
  asio::ip::tcp::socket socket_;
  bool zero_copy_;
  std::string peer_;
};

/// TLS over TCP (security protocols SSL and SASL_SSL), through Asio's OpenSSL stream. File regions go through
/// the copying path: the kernel cannot encrypt sendfile(2) pages here (no kTLS).
class tls_transport final : public transport {
 public:
  tls_transport(asio::ip::tcp::socket socket, std::shared_ptr<asio::ssl::context> context);

  asio::awaitable<boost::system::error_code> start() override;
  std::optional<std::string> peer_subject() const override { return subject_; }
  asio::awaitable<std::pair<boost::system::error_code, size_t>> read(std::span<uint8_t> buffer) override;
  asio::awaitable<void> write(std::span<const uint8_t> bytes) override;
  void close() override;
  asio::any_io_executor executor() override { return stream_.get_executor(); }
  std::string peer() const override { return peer_; }

 private:
  std::shared_ptr<asio::ssl::context> context_;  // outlives stream_
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
  std::string peer_;
  std::optional<std::string> subject_;
};

}  // namespace sluice::broker::net
