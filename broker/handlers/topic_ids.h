#pragma once
// Topic ids between the coordination layer's form and the wire's.
#include <cstring>

#include "coordination/cluster_store.h"
#include "protocol/uuid.h"

namespace sluice::broker::handlers {

inline protocol::uuid to_wire(const coordination::topic_id& id) {
  protocol::uuid u;
  std::memcpy(u.bytes.data(), id.data(), id.size());
  return u;
}

inline coordination::topic_id from_wire(const protocol::uuid& u) {
  coordination::topic_id id{};
  std::memcpy(id.data(), u.bytes.data(), id.size());
  return id;
}

}  // namespace sluice::broker::handlers
