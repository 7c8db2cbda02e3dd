#include "compat/diff/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace sluice::diff {
namespace {
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

std::string_view outcome_name(outcome o) {
  switch (o) {
    case outcome::response: return "response";
    case outcome::closed: return "<connection closed>";
    case outcome::timeout: return "<no response: timeout>";
    case outcome::connect_failed: return "<connect failed>";
  }
  return "?";
}

bool connection::connect() {
  const auto colon = address_.rfind(':');
  if (colon == std::string::npos) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address_.substr(colon + 1))));
  if (inet_pton(AF_INET, address_.substr(0, colon).c_str(), &sa.sin_addr) != 1) return false;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close();
    return false;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

void connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool connection::send(const std::vector<uint8_t>& frame) {
  if (fd_ < 0 && !connect()) return false;
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close();
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool connection::read_exact(uint8_t* out, size_t n, int64_t deadline_ms, outcome& why) {
  size_t done = 0;
  while (done < n) {
    const int64_t left = deadline_ms - now_ms();
    if (left <= 0) {
      why = outcome::timeout;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      why = outcome::timeout;
      return false;
    }
    const ssize_t r = ::recv(fd_, out + done, n - done, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      why = outcome::closed;
      return false;
    }
    done += static_cast<size_t>(r);
  }
  return true;
}

outcome connection::receive(std::vector<uint8_t>& body, int timeout_ms) {
  if (fd_ < 0) return outcome::closed;
  const int64_t deadline = now_ms() + timeout_ms;
  uint8_t size_bytes[4];
  outcome why = outcome::response;
  if (!read_exact(size_bytes, 4, deadline, why)) {
    close();
    return why;
  }
  const uint32_t size = (uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                        (uint32_t{size_bytes[2]} << 8) | uint32_t{size_bytes[3]};
  if (size > (256u << 20)) {
    close();
    return outcome::closed;
  }
  body.resize(size);
  if (!read_exact(body.data(), size, deadline, why)) {
    close();
    return why;
  }
  return outcome::response;
}

}  // namespace sluice::diff
