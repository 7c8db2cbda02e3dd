// Cluster coordination against a REAL ZooKeeper (Debian's `zookeeper` package): the test starts a
// standalone server on a free loopback port (temp data dir, zoo.cfg written here, java QuorumPeerMain),
// runs three zk_cluster instances (brokers 1, 2, 3) in this process under a chroot, creates a 12-partition
// RF-3 topic, closes the controller's session and checks that another broker takes over and re-elects the
// leaders it had. Finally zkCli.sh prints the znodes, showing Kafka's JSON fields. Bounded waits; the
// server is stopped by its PID.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "broker_process.h"  // pick_free_port, port_accepts
#include "coordination/replica_assignment.h"
#include "coordination/zk/zk_cluster.h"

extern char** environ;

namespace sluice::coordination::zk {
namespace {

constexpr const char* kZkJar = "/usr/share/java/zookeeper.jar";
constexpr const char* kZkCli = "/usr/share/zookeeper/bin/zkCli.sh";

template <typename P>
bool eventually(P pred, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// A standalone ZooKeeper server in a temp dir, on 127.0.0.1:port.
class zookeeper_server {
 public:
  zookeeper_server() {
    char tmpl[] = "/tmp/sluice-zk-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    port_ = itest::pick_free_port();
    std::ofstream cfg(dir_ / "zoo.cfg");
    cfg << "tickTime=500\n"  // sessions of 1 to 10 s
        << "dataDir=" << (dir_ / "data").string() << "\n"
        << "clientPort=" << port_ << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "admin.enableServer=false\n"
        << "maxClientCnxns=0\n";
  }
  ~zookeeper_server() {
    stop();
    if (std::getenv("SLUICE_KEEP_DATA") == nullptr) std::filesystem::remove_all(dir_);
  }

  bool start() {
    const std::string cfg = (dir_ / "zoo.cfg").string();
    const std::string log = (dir_ / "zookeeper.log").string();
    std::vector<std::string> args = {"java", "-Xmx256m", "-cp", kZkJar,
                                     "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(&pid_, "java", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return false;
    return eventually([&] { return itest::port_accepts(port_); }, 60000);
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Runs zkCli.sh with `commands` on stdin; returns its output (bounded by `timeout`).
std::string zkcli(int port, const std::vector<std::string>& commands, const std::filesystem::path& dir) {
  auto script = dir / "zkcli.txt";
  {
    std::ofstream out(script);
    for (const auto& c : commands) out << c << "\n";
    out << "quit\n";
  }
  std::string cmd = "timeout 60 " + std::string(kZkCli) + " -server 127.0.0.1:" + std::to_string(port) + " < " +
                    script.string() + " 2>&1";
  std::string output;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    ::pclose(p);
  }
  return output;
}

class zookeeper_cluster_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kZkJar) || std::system("command -v java >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "ZooKeeper server not installed (Debian packages zookeeper, default-jre)";
    ASSERT_TRUE(server.start()) << "ZooKeeper did not start; see " << server.dir() / "zookeeper.log";
    opts.connect = "127.0.0.1:" + std::to_string(server.port()) + "/sluice";
    opts.session_timeout_ms = 4000;
    opts.connection_timeout_ms = 20000;
    opts.auto_leader_rebalance = false;
  }

  zk_cluster& start_broker(int32_t id) {
    auto c = zk_cluster::open(opts);
    if (!c.ok()) throw std::runtime_error(c.err().message);
    auto r = (*c)->start(broker_registration{id, "127.0.0.1", 9090 + id, "PLAINTEXT", {}, std::nullopt});
    if (!r.ok()) throw std::runtime_error(r.err().message);
    brokers[id] = std::move(*c);
    return *brokers[id];
  }

  template <typename P>
  bool all_see(P pred, int ms = 20000) {
    return eventually([&] {
      for (auto& [id, b] : brokers)
        if (!pred(*b->snapshot())) return false;
      return true;
    }, ms);
  }

  int32_t controller_id() {
    for (auto& [id, b] : brokers)
      if (b->is_controller()) return id;
    return -1;
  }

  zookeeper_server server;
  zk_options opts;
  std::map<int32_t, std::unique_ptr<zk_cluster>> brokers;
};

TEST_F(zookeeper_cluster_test, three_brokers_elect_a_controller_and_fail_over) {
  start_broker(1);
  start_broker(2);
  start_broker(3);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3 && s.controller_id >= 0; }));
  const int32_t first = controller_id();
  ASSERT_GE(first, 1);
  EXPECT_EQ(brokers[first]->controller_epoch(), 1);
  EXPECT_EQ(brokers[1]->cluster_id(), brokers[3]->cluster_id());

  // A 12-partition RF-3 topic assigned as Kafka does: preferred leaders 4/4/4.
  std::vector<broker_rack> live;
  for (const auto& [id, b] : brokers[1]->snapshot()->brokers) live.push_back({id, b.rack});
  auto replicas = assign_replicas(live, 12, 3);
  ASSERT_TRUE(replicas.ok()) << replicas.err().message;
  ASSERT_TRUE(brokers[2]->create_topic({"orders", random_topic_id(), *replicas, {{"min.insync.replicas", "2"}}}).ok());
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    for (int32_t p = 0; p < 12; ++p) {
      auto* st = s.state("orders", p);
      if (st == nullptr || st->version < 0 || st->isr.size() != 3) return false;
    }
    return true;
  })) << "partition states were not created";
  std::map<int32_t, int> leaders;
  auto snap = brokers[3]->snapshot();
  for (int32_t p = 0; p < 12; ++p) leaders[snap->state("orders", p)->leader]++;
  EXPECT_EQ(leaders, (std::map<int32_t, int>{{1, 4}, {2, 4}, {3, 4}}));
  ASSERT_TRUE(brokers[1]->allocate_producer_id_block(1).ok());

  // Print the znodes as Kafka tooling would see them (issue 6, acceptance 3).
  auto shown = zkcli(server.port(),
                     {"get /sluice/brokers/ids/1", "get /sluice/controller", "get /sluice/controller_epoch",
                      "get /sluice/brokers/topics/orders", "get /sluice/brokers/topics/orders/partitions/0/state",
                      "get /sluice/config/topics/orders", "get /sluice/cluster/id", "get /sluice/latest_producer_id_block",
                      "ls /sluice", "ls /sluice/brokers/ids"},
                     server.dir());
  std::printf("---- zkCli.sh -server 127.0.0.1:%d ----\n", server.port());
  for (std::string::size_type pos = 0, nl; pos < shown.size(); pos = nl + 1) {
    nl = shown.find('\n', pos);
    if (nl == std::string::npos) nl = shown.size();
    std::string line = shown.substr(pos, nl - pos);
    if (line.find("get /") != std::string::npos || line.find("ls /") != std::string::npos || line.starts_with("{") ||
        line.starts_with("[") || (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))))
      std::printf("%s\n", line.c_str());
  }
  std::printf("----\n");
  for (const char* field : {"\"listener_security_protocol_map\"", "\"endpoints\":[\"PLAINTEXT://127.0.0.1:9091\"]",
                            "\"jmx_port\":-1", "\"kraftControllerEpoch\":-1", "\"brokerid\"", "\"topic_id\"",
                            "\"adding_replicas\":{}", "\"leader_epoch\":0", "\"controller_epoch\":1",
                            "\"min.insync.replicas\":\"2\"", "\"block_end\":\"999\"", "\"version\":\"1\""})
    EXPECT_NE(shown.find(field), std::string::npos) << "zkCli output lacks " << field << ":\n" << shown;

  // The controller's session is closed: another broker wins /controller with the next epoch and moves
  // every leadership of the stopped broker to the next ISR member.
  brokers[first]->stop();
  brokers.erase(first);
  ASSERT_TRUE(eventually([&] { return controller_id() >= 0; }, 20000)) << "no new controller";
  const int32_t second = controller_id();
  EXPECT_NE(second, first);
  EXPECT_EQ(brokers[second]->controller_epoch(), 2);
  ASSERT_TRUE(all_see([&](const cluster_snapshot& s) {
    if (s.controller_id != second || s.brokers.size() != 2) return false;
    for (int32_t p = 0; p < 12; ++p) {
      auto* st = s.state("orders", p);
      if (st == nullptr || st->leader == first || st->leader < 0 || st->isr.size() != 2) return false;
    }
    return true;
  })) << "leaders were not moved off broker " << first;
  snap = brokers[second]->snapshot();
  for (int32_t p = 0; p < 12; ++p) {
    const auto& r = snap->topics.at("orders").replicas[static_cast<size_t>(p)];
    auto* st = snap->state("orders", p);
    EXPECT_EQ(st->leader_epoch, 1) << "partition " << p;
    // The new leader is the first replica in assignment order that survived.
    int32_t expected = r[0] != first ? r[0] : r[1];
    EXPECT_EQ(st->leader, expected) << "partition " << p;
  }

  // The stopped broker comes back: it registers again and leads nothing until elected.
  start_broker(first);
  EXPECT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 3 && s.registered; }));
}

// The server freezes (SIGSTOP) for longer than the session timeout: every broker gives its session up
// (registered=false at once), then, when the server is back, opens a new one, registers again and a
// controller is elected again.
TEST_F(zookeeper_cluster_test, brokers_register_again_after_losing_their_sessions) {
  start_broker(1);
  start_broker(2);
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) { return s.brokers.size() == 2 && s.controller_id >= 0; }));
  // Outlives the test body: the brokers (fixture members) call the subscriber until they stop.
  auto seen = std::make_shared<std::pair<std::mutex, std::vector<bool>>>();
  auto& m = seen->first;
  auto& registered = seen->second;
  brokers[1]->subscribe([seen](std::shared_ptr<const cluster_snapshot> s) {
    std::lock_guard lock(seen->first);
    seen->second.push_back(s->registered);
  });
  const int64_t old_session = brokers[1]->session_id();
  ::kill(server.pid(), SIGSTOP);
  bool unregistered = eventually([&] { return !brokers[1]->snapshot()->registered; }, opts.session_timeout_ms + 5000);
  ::kill(server.pid(), SIGCONT);
  ASSERT_TRUE(unregistered) << "no registered=false while ZooKeeper was unreachable";
  ASSERT_TRUE(all_see([](const cluster_snapshot& s) {
    return s.registered && s.brokers.size() == 2 && s.controller_id >= 0;
  }, 30000)) << "brokers did not register again";
  EXPECT_NE(brokers[1]->session_id(), old_session);
  int controllers = 0;
  for (auto& [id, b] : brokers) controllers += b->is_controller() ? 1 : 0;
  EXPECT_EQ(controllers, 1);
  std::lock_guard lock(m);
  ASSERT_FALSE(registered.empty());
  EXPECT_FALSE(registered.front());
  EXPECT_TRUE(registered.back());
}

}  // namespace
}  // namespace sluice::coordination::zk
