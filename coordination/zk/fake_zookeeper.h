#pragma once
// An in-memory ZooKeeper for unit tests: one "server" shared by many sessions, with ZooKeeper's semantics
// (versions, czxid, ephemerals owned by sessions, sequential nodes, one-shot data/exists/child watches,
// atomic multi, NODEEXISTS/NONODE/BADVERSION/NOTEMPTY). Tests expire a session at will: its ephemeral
// nodes go, watches on them fire for the other sessions, and the session's own callback gets `expired`.
//
// Thread-safe (one mutex). Watch and session callbacks run on the thread that made the change, after the
// mutex is released.
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "coordination/zk/zk_client.h"

namespace sluice::coordination::zk {

class fake_zookeeper final : public zk_connector {
 public:
  fake_zookeeper();
  ~fake_zookeeper() override;

  zk_result<std::shared_ptr<zk_session>> connect(int32_t session_timeout_ms, int32_t connection_timeout_ms,
                                                 session_fn on_event) override;

  /// Expires a session as the server would after its timeout: ephemerals removed, watches fired,
  /// the session's callback told `expired`. Later operations of that session return session_expired.
  void expire(int64_t session_id);
  /// The ephemeralOwner of `path` (0 when persistent or absent): finds the session to expire.
  int64_t ephemeral_owner(const std::string& path) const;
  /// While set, connect() fails with connection_loss (a server that is down).
  void set_unreachable(bool unreachable);
  /// The data of a node, or nullopt. For test assertions (no watch).
  std::optional<std::string> data(const std::string& path) const;
  /// Number of open (not expired, not closed) sessions.
  size_t live_sessions() const;

  struct state;  // shared with the sessions

 private:
  std::shared_ptr<state> state_;
};

}  // namespace sluice::coordination::zk
