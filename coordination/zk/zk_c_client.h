#pragma once
// zk_connector over the ZooKeeper C client (libzookeeper-mt, Debian's libzookeeper-mt-dev).
#include <string>

#include "coordination/zk/zk_client.h"

namespace sluice::coordination::zk {

/// Connects to `connect`: Kafka's zookeeper.connect, "host:port[,host:port...][/chroot]". With a chroot,
/// the chroot path is created first when missing (as Kafka does), then every path is relative to it.
/// The C client's own log goes to stderr at ERROR level (it is loud about refused connections).
class zk_c_connector final : public zk_connector {
 public:
  explicit zk_c_connector(std::string connect);
  zk_result<std::shared_ptr<zk_session>> connect(int32_t session_timeout_ms, int32_t connection_timeout_ms,
                                                 session_fn on_event) override;

 private:
  std::string hosts_;   // host:port list
  std::string chroot_;  // "" or "/path"
};

}  // namespace sluice::coordination::zk
