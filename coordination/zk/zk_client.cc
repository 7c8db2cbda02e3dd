#include "coordination/zk/zk_client.h"

namespace sluice::coordination::zk {

const char* to_string(zk_code c) {
  switch (c) {
    case zk_code::ok: return "OK";
    case zk_code::no_node: return "NONODE";
    case zk_code::node_exists: return "NODEEXISTS";
    case zk_code::bad_version: return "BADVERSION";
    case zk_code::not_empty: return "NOTEMPTY";
    case zk_code::no_children_for_ephemerals: return "NOCHILDRENFOREPHEMERALS";
    case zk_code::session_expired: return "SESSIONEXPIRED";
    case zk_code::connection_loss: return "CONNECTIONLOSS";
    case zk_code::closed: return "CLOSED";
    case zk_code::other: return "ZOOKEEPER_ERROR";
  }
  return "?";
}

zk_code create_recursive(zk_session& s, const std::string& path) {
  if (path.empty() || path == "/") return zk_code::ok;
  auto r = s.create(path, "", create_mode::persistent);
  if (r.code == zk_code::ok || r.code == zk_code::node_exists) return zk_code::ok;
  if (r.code != zk_code::no_node) return r.code;
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return r.code;
  if (auto c = create_recursive(s, path.substr(0, slash)); c != zk_code::ok) return c;
  r = s.create(path, "", create_mode::persistent);
  return r.code == zk_code::node_exists ? zk_code::ok : r.code;
}

zk_code remove_recursive(zk_session& s, const std::string& path) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto children = s.get_children(path, nullptr);
    if (children.code == zk_code::no_node) return zk_code::ok;
    if (!children.ok()) return children.code;
    for (const auto& c : children.value) {
      if (auto r = remove_recursive(s, path + "/" + c); r != zk_code::ok) return r;
    }
    auto r = s.remove(path, -1);
    if (r == zk_code::ok || r == zk_code::no_node) return zk_code::ok;
    if (r != zk_code::not_empty) return r;  // a child appeared meanwhile: go again
  }
  return zk_code::not_empty;
}

}  // namespace sluice::coordination::zk
