// broker_process: starts the real `sluice` executable for integration tests.
//
// - Port: chosen free at run time (bind 127.0.0.1:0, read it back, close), kept across restarts.
// - Data: a fresh temporary directory (mkdtemp under $TMPDIR or /tmp) holding server.properties,
//   the log dir `data/` and the broker's stderr/stdout in `broker.log` (appended across restarts).
// - start(): posix_spawn `sluice --config DIR/server.properties [--override k=v]...`, then waits
//   (bounded, 10 s by default) until the port accepts a TCP connection. Throws std::runtime_error
//   on failure (gtest reports an exception thrown in a test body as a failure).
// - stop(): SIGTERM + waitpid (bounded); returns the exit status (tests assert it is 0).
// - kill9(): SIGKILL + waitpid. restart(): start again on the same data dir and port.
// - The destructor SIGKILLs a still running child and removes the directory unless keep() was called
//   or SLUICE_KEEP_DATA is set in the environment.
//
// The binary comes from $SLUICE_BINARY, else the compile-time SLUICE_BINARY_PATH (CMake passes
// $<TARGET_FILE:sluice>). Only loopback addresses are ever used.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace sluice::itest {

// Path of the broker executable, or "" when none is known (tests then skip).
inline std::string broker_binary() {
  if (const char* env = std::getenv("SLUICE_BINARY"); env != nullptr && *env != '\0') return env;
#ifdef SLUICE_BINARY_PATH
  return SLUICE_BINARY_PATH;
#else
  return "";
#endif
}

// A loopback port that was free a moment ago (bind port 0, getsockname, close).
inline int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// True when a TCP connect to 127.0.0.1:port succeeds.
inline bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class broker_process {
 public:
  // overrides: extra server.properties keys passed as --override key=value (after the defaults,
  // so they win). Defaults: listeners/advertised.listeners on 127.0.0.1:<port>, log.dirs, broker.id.
  explicit broker_process(std::map<std::string, std::string> overrides = {})
      : overrides_(std::move(overrides)) {
    binary_ = broker_binary();
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/sluice-itest-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr)
      throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    dir_ = buf.data();
    std::filesystem::create_directories(data_dir());
    port_ = pick_free_port();
    // The kernel may hand out the port it just released again (it did: both listeners on 54369, "Address already in
    // use"); a bounded retry keeps the two apart.
    http_port_ = pick_free_port();
    for (int tries = 0; http_port_ == port_ && tries < 16; ++tries) http_port_ = pick_free_port();
    if (const char* k = std::getenv("SLUICE_KEEP_DATA"); k && *k) keep_ = true;
  }

  broker_process(const broker_process&) = delete;
  broker_process& operator=(const broker_process&) = delete;

  ~broker_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
    if (!keep_ && !dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  int port() const { return port_; }
  /// The broker's HTTP side (http.listeners; broker/http/README.md).
  int http_port() const { return http_port_; }

  /// One HTTP/1.1 request to the broker's HTTP side (Connection: close); returns the status code and sets
  /// `body` to the response body. -1: no connection or no answer within 10 s.
  int http(const std::string& method, const std::string& path, const std::string& request_body, std::string* body) const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(http_port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: " + std::to_string(request_body.size()) +
                      "\r\n\r\n" + request_body;
    for (size_t off = 0; off < req.size();) {
      const ssize_t n = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
      if (n <= 0) {
        ::close(fd);
        return -1;
      }
      off += static_cast<size_t>(n);
    }
    std::string in;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    if (in.rfind("HTTP/1.1 ", 0) != 0 || in.size() < 12) return -1;
    if (body) {
      const auto end = in.find("\r\n\r\n");
      *body = end == std::string::npos ? std::string() : in.substr(end + 4);
    }
    return std::stoi(in.substr(9, 3));
  }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_; }
  std::string data_dir() const { return dir_ + "/data"; }
  std::string log_path() const { return dir_ + "/broker.log"; }
  const std::string& binary() const { return binary_; }
  pid_t pid() const { return pid_; }
  int broker_id() const {
    auto it = overrides_.find("broker.id");
    return it == overrides_.end() ? 0 : std::stoi(it->second);
  }
  void keep() { keep_ = true; }

  // Everything the broker wrote to stderr/stdout so far (all runs).
  std::string log_text() const {
    std::ifstream in(log_path());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // True while the child has not exited (reaps it if it has).
  bool running() {
    if (pid_ <= 0) return false;
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      last_status_ = st;
      pid_ = -1;
      return false;
    }
    return true;
  }

  void start(std::chrono::milliseconds ready_timeout = std::chrono::seconds(10)) {
    if (binary_.empty()) throw std::runtime_error("no broker binary (set SLUICE_BINARY)");
    if (pid_ > 0) throw std::runtime_error("broker already running");
    write_config();

    std::vector<std::string> args{binary_, "--config", dir_ + "/server.properties"};
    for (const auto& [k, v] : overrides_) {
      args.push_back("--override");
      args.push_back(k + "=" + v);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    {
      std::ofstream marker(log_path(), std::ios::app);
      marker << "==== itest: starting broker (run " << ++runs_ << ") on port " << port_ << " ====\n";
    }
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, binary_.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("posix_spawn " + binary_ + ": " + std::strerror(rc));
    pid_ = pid;

    auto deadline = std::chrono::steady_clock::now() + ready_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!running()) {
        throw std::runtime_error("broker exited before accepting connections, status " +
                                 describe_status(last_status_) + "\n--- broker log ---\n" +
                                 log_text());
      }
      if (port_accepts(port_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("broker did not accept on port " + std::to_string(port_) + " within " +
                             std::to_string(ready_timeout.count()) + " ms");
  }

  // SIGTERM, wait up to `timeout`; returns the raw waitpid status (SIGKILLs and throws on timeout).
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    if (pid_ <= 0) throw std::runtime_error("stop(): broker not running");
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        last_status_ = st;
        return st;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    last_status_ = st;
    throw std::runtime_error("broker did not exit within " + std::to_string(timeout.count()) +
                             " ms of SIGTERM (killed)");
  }

  void kill9() {
    if (pid_ <= 0) throw std::runtime_error("kill9(): broker not running");
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    last_status_ = st;
    pid_ = -1;
  }

  void restart(std::chrono::milliseconds ready_timeout = std::chrono::seconds(10)) {
    if (pid_ > 0) stop();
    start(ready_timeout);
  }

  static bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

  static std::string describe_status(int st) {
    if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) return std::string("signal ") + strsignal(WTERMSIG(st));
    return "status " + std::to_string(st);
  }

 private:
  void write_config() {
    std::ofstream f(dir_ + "/server.properties", std::ios::trunc);
    f << "# written by tests/integration/broker_process.h\n"
      << "broker.id=0\n"
      << "listeners=PLAINTEXT://127.0.0.1:" << port_ << "\n"
      << "advertised.listeners=PLAINTEXT://127.0.0.1:" << port_ << "\n"
      << "http.listeners=http://127.0.0.1:" << http_port_ << "\n"
      << "log.dirs=" << data_dir() << "\n";
  }

  std::map<std::string, std::string> overrides_;
  std::string binary_;
  std::string dir_;
  int http_port_ = 0;
  int port_ = 0;
  pid_t pid_ = -1;
  int last_status_ = 0;
  int runs_ = 0;
  bool keep_ = false;
};

}  // namespace sluice::itest
