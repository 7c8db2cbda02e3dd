#pragma once
// The thin ZooKeeper client layer: one session with synchronous operations and one-shot watches.
// Two implementations: zk_c_client (libzookeeper-mt, a real server) and fake_zookeeper (in memory, for
// unit tests). Both have ZooKeeper's semantics: versions, ephemerals owned by a session, one-shot watches,
// NODEEXISTS / NONODE / BADVERSION / NOTEMPTY errors, session expiry.
//
// Threads: every operation may be called from any thread and blocks the caller until the server answered
// (a round trip on loopback: well under a millisecond; bounded by the session timeout when the server is
// unreachable). Watch and session callbacks run on a client thread (the C client's completion thread, or
// the thread that made the change in the fake): they must only enqueue work, never call back into the
// session (the C client would deadlock).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::coordination::zk {

/// Outcome of one operation (ZooKeeper's ZOK, ZNONODE, ...).
enum class zk_code : int {
  ok = 0,
  no_node,          // ZNONODE: the node (or the parent of a node to create) does not exist
  node_exists,      // ZNODEEXISTS
  bad_version,      // ZBADVERSION: the expected version does not match
  not_empty,        // ZNOTEMPTY: delete of a node with children
  no_children_for_ephemerals,  // ZNOCHILDRENFOREPHEMERALS
  session_expired,  // ZSESSIONEXPIRED / ZINVALIDSTATE: the session is gone; open a new one
  connection_loss,  // ZCONNECTIONLOSS / ZOPERATIONTIMEOUT: outcome unknown, the session may still live
  closed,           // the session was closed by us
  other,            // anything else (bad arguments, marshalling, auth)
};

/// Short name for logs: "NONODE", "BADVERSION", ...
const char* to_string(zk_code c);

/// The parts of ZooKeeper's Stat that Sluice uses.
struct zk_stat {
  int64_t czxid = 0;            // zxid of the creation: tells a re-created node from the old one
  int32_t version = 0;          // data version, +1 per set
  int32_t cversion = 0;         // children version
  int64_t ephemeral_owner = 0;  // session id owning an ephemeral node, 0 for persistent nodes
  int32_t num_children = 0;
};

enum class create_mode { persistent, ephemeral, persistent_sequential, ephemeral_sequential };

/// A watch notification (one-shot: a watch fires once, then must be set again).
enum class watch_event { created, deleted, changed, child };
using watch_fn = std::function<void(watch_event, const std::string& path)>;

/// Session state changes, reported to the callback given when connecting.
enum class session_event { connected, disconnected, expired };
using session_fn = std::function<void(session_event)>;

template <typename T>
struct zk_result {
  zk_code code = zk_code::ok;
  T value{};
  bool ok() const { return code == zk_code::ok; }
};

struct zk_node {
  std::string data;
  zk_stat stat;
};

/// One operation of an atomic multi (ZooKeeper's multi: all or nothing).
struct zk_op {
  enum class kind { create, set, remove, check } type = kind::check;
  std::string path;
  std::string data;      // create, set
  int32_t version = -1;  // set, remove, check (-1: any version)
  create_mode mode = create_mode::persistent;

  static zk_op create(std::string p, std::string d, create_mode m = create_mode::persistent) {
    return {kind::create, std::move(p), std::move(d), -1, m};
  }
  static zk_op set(std::string p, std::string d, int32_t v) { return {kind::set, std::move(p), std::move(d), v}; }
  static zk_op remove(std::string p, int32_t v = -1) { return {kind::remove, std::move(p), {}, v}; }
  static zk_op check(std::string p, int32_t v) { return {kind::check, std::move(p), {}, v}; }
};

/// One ZooKeeper session. Paths are absolute within the session's chroot. Watches passed as nullptr are
/// not set. Destroying the session closes it (its ephemeral nodes disappear at once).
class zk_session {
 public:
  virtual ~zk_session() = default;
  /// The server-assigned session id (the ephemeralOwner of the nodes this session creates).
  virtual int64_t session_id() const = 0;
  /// Creates a node; returns its actual path (differs for sequential nodes).
  virtual zk_result<std::string> create(const std::string& path, const std::string& data, create_mode mode) = 0;
  /// Reads a node. With `watch`: fires on change or deletion (not set when the node does not exist).
  virtual zk_result<zk_node> get(const std::string& path, watch_fn watch) = 0;
  /// Writes a node if its version equals `version` (-1: any); returns the new stat.
  virtual zk_result<zk_stat> set(const std::string& path, const std::string& data, int32_t version) = 0;
  /// Deletes a node if its version equals `version` (-1: any).
  virtual zk_code remove(const std::string& path, int32_t version) = 0;
  /// Children names (not paths), unsorted. With `watch`: fires on a child added or removed, or deletion.
  virtual zk_result<std::vector<std::string>> get_children(const std::string& path, watch_fn watch) = 0;
  /// The stat if the node exists, else nullopt (code ok). With `watch`: fires on creation, change or
  /// deletion, and is set also when the node does not exist.
  virtual zk_result<std::optional<zk_stat>> exists(const std::string& path, watch_fn watch) = 0;
  /// All or nothing. On failure, the code is the first failing op's; `failed_index` (when given) its index.
  virtual zk_code multi(const std::vector<zk_op>& ops, size_t* failed_index = nullptr) = 0;
  /// Closes the session (idempotent). Later operations return zk_code::closed.
  virtual void close() = 0;
};

/// Opens sessions. `on_event` receives this session's state changes (never the initial connected).
class zk_connector {
 public:
  virtual ~zk_connector() = default;
  /// Opens a session and waits until it is connected, at most `connection_timeout_ms`. Errors:
  /// connection_loss when no server answered in time.
  virtual zk_result<std::shared_ptr<zk_session>> connect(int32_t session_timeout_ms,
                                                         int32_t connection_timeout_ms, session_fn on_event) = 0;
};

/// Helpers on any session.
/// Creates `path` and its missing ancestors as persistent nodes with empty data; NODEEXISTS is success.
zk_code create_recursive(zk_session& s, const std::string& path);
/// Deletes `path` and everything below it (any version). NONODE is success.
zk_code remove_recursive(zk_session& s, const std::string& path);

}  // namespace sluice::coordination::zk
