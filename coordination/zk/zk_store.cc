#include "coordination/zk/zk_store.h"

#include <algorithm>

#include "base/logging.h"
#include "coordination/zk/zk_cluster_util.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination::zk {

using detail::view_fail;

namespace {

error io_fail(const std::string& what, zk_code c) {
  return error{errc::io_error, what + ": ZooKeeper " + to_string(c)};
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// top-level paths and the cluster id (coordination thread, in open)

result<void> zk_store::init_paths_and_cluster_id() {
  auto s = session_.current();
  for (const char* p : {kBrokerIdsPath, kTopicsPath, "/brokers/seqid", kConfigTopicsPath, "/config/changes",
                        kDeleteTopicsPath, kControlledShutdownPath, "/cluster"}) {
    if (auto c = create_recursive(*s, p); c != zk_code::ok)
      return view_fail(view_errc::unavailable, std::string("cannot create ") + p + ": " + to_string(c));
  }
  if (auto c = s->create(producer_id_block_znode::path(), "", create_mode::persistent).code;
      c != zk_code::ok && c != zk_code::node_exists)
    return view_fail(view_errc::unavailable, std::string("cannot create /latest_producer_id_block: ") + to_string(c));
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto g = s->get(cluster_id_znode::path(), nullptr);
    if (g.ok()) {
      auto id = cluster_id_znode::decode(g.value.data);
      if (!id) return id.err();
      std::lock_guard lock(mutex_);
      cluster_id_ = *id;
      return {};
    }
    if (g.code != zk_code::no_node) return view_fail(view_errc::unavailable, std::string("/cluster/id: ") + to_string(g.code));
    // Created once: a concurrent creator wins with NODEEXISTS and we read its id.
    auto c = s->create(cluster_id_znode::path(), cluster_id_znode::encode(to_base64(random_topic_id())),
                       create_mode::persistent);
    if (!c.ok() && c.code != zk_code::node_exists)
      return view_fail(view_errc::unavailable, std::string("cannot create /cluster/id: ") + to_string(c.code));
  }
  return view_fail(view_errc::unavailable, "cannot read /cluster/id");
}

std::string zk_store::cluster_id() const {
  std::lock_guard lock(mutex_);
  return cluster_id_;
}

// ---------------------------------------------------------------------------------------------------------
// cluster_store (caller's thread)

std::vector<topic_assignment> zk_store::topics() const {
  std::vector<topic_assignment> out;
  auto s = session_.current();
  if (!s) return out;
  auto names = s->get_children(kTopicsPath, nullptr);
  if (!names.ok()) {
    log::error("zookeeper: cannot list topics: {}", to_string(names.code));
    return out;
  }
  std::sort(names.value.begin(), names.value.end());
  for (const auto& n : names.value) {
    auto node = s->get(topic_znode::path(n), nullptr);
    if (!node.ok()) continue;
    auto t = topic_znode::decode(n, node.value.data);
    if (!t) {
      log::error("zookeeper: ignoring topic {}: {}", n, t.err().message);
      continue;
    }
    auto config = s->get(topic_config_znode::path(n), nullptr);
    if (config.ok()) {
      auto c = topic_config_znode::decode(config.value.data);
      if (c) t->configs = std::move(*c);
      else log::error("zookeeper: ignoring config of {}: {}", n, c.err().message);
    }
    out.push_back(std::move(*t));
  }
  return out;
}

result<void> zk_store::create_topic(const topic_assignment& topic) {
  auto s = session_.current();
  if (!s) return io_fail("create topic " + topic.name, zk_code::closed);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto marker = s->exists(delete_topic_znode::path(topic.name), nullptr);
    if (!marker.ok()) return io_fail("create topic " + topic.name, marker.code);
    if (marker.value)
      return error{errc::topic_exists, "topic " + topic.name + " is marked for deletion"};
    auto config = s->exists(topic_config_znode::path(topic.name), nullptr);
    if (!config.ok()) return io_fail("create topic " + topic.name, config.code);
    const std::string config_data = topic_config_znode::encode(topic.configs);
    size_t failed = 0;
    // Config first, then the assignment, in one multi (Kafka writes them in this order).
    auto rc = s->multi({config.value ? zk_op::set(topic_config_znode::path(topic.name), config_data, -1)
                                     : zk_op::create(topic_config_znode::path(topic.name), config_data),
                        zk_op::create(topic_znode::path(topic.name), topic_znode::encode(topic))},
                       &failed);
    if (rc == zk_code::ok) return {};
    if (failed == 1 && rc == zk_code::node_exists) return error{errc::topic_exists, topic.name};
    if (failed == 0 && (rc == zk_code::node_exists || rc == zk_code::no_node)) continue;  // config raced
    return io_fail("create topic " + topic.name, rc);
  }
  return io_fail("create topic " + topic.name, zk_code::bad_version);
}

result<void> zk_store::delete_topic(const std::string& name) {
  auto s = session_.current();
  if (!s) return io_fail("delete topic " + name, zk_code::closed);
  auto e = s->exists(topic_znode::path(name), nullptr);
  if (!e.ok()) return io_fail("delete topic " + name, e.code);
  if (!e.value) return error{errc::unknown_topic, name};
  auto r = s->create(delete_topic_znode::path(name), "", create_mode::persistent);
  if (!r.ok() && r.code != zk_code::node_exists) return io_fail("delete topic " + name, r.code);
  return {};
}

result<void> zk_store::set_topic_configs(const std::string& name, const std::map<std::string, std::string>& configs) {
  auto s = session_.current();
  if (!s) return io_fail("alter configs of " + name, zk_code::closed);
  auto e = s->exists(topic_znode::path(name), nullptr);
  if (!e.ok()) return io_fail("alter configs of " + name, e.code);
  if (!e.value) return error{errc::unknown_topic, name};
  const std::string data = topic_config_znode::encode(configs);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = s->set(topic_config_znode::path(name), data, -1);
    if (r.ok()) return {};
    if (r.code != zk_code::no_node) return io_fail("alter configs of " + name, r.code);
    auto c = s->create(topic_config_znode::path(name), data, create_mode::persistent);
    if (c.ok()) return {};
    if (c.code != zk_code::node_exists) return io_fail("alter configs of " + name, c.code);
  }
  return io_fail("alter configs of " + name, zk_code::node_exists);
}

result<void> zk_store::add_partitions(const std::string& name, const std::vector<std::vector<int32_t>>& replicas) {
  auto s = session_.current();
  if (!s) return io_fail("add partitions to " + name, zk_code::closed);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto node = s->get(topic_znode::path(name), nullptr);
    if (node.code == zk_code::no_node) return error{errc::unknown_topic, name};
    if (!node.ok()) return io_fail("add partitions to " + name, node.code);
    auto t = topic_znode::decode(name, node.value.data);
    if (!t) return error{errc::io_error, t.err().message};
    t->replicas.insert(t->replicas.end(), replicas.begin(), replicas.end());
    auto r = s->set(topic_znode::path(name), topic_znode::encode(*t), node.value.stat.version);
    if (r.ok()) return {};
    if (r.code == zk_code::no_node) return error{errc::unknown_topic, name};
    if (r.code != zk_code::bad_version) return io_fail("add partitions to " + name, r.code);
  }
  return io_fail("add partitions to " + name, zk_code::bad_version);
}

result<producer_id_block> zk_store::allocate_producer_id_block(int32_t broker_id, int64_t size) {
  if (size <= 0) return error{errc::io_error, "producer id block size must be positive"};
  auto s = session_.current();
  if (!s) return io_fail("allocate producer ids", zk_code::closed);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto node = s->get(producer_id_block_znode::path(), nullptr);
    if (node.code == zk_code::no_node) {
      auto c = s->create(producer_id_block_znode::path(), "", create_mode::persistent);
      if (!c.ok() && c.code != zk_code::node_exists) return io_fail("allocate producer ids", c.code);
      continue;
    }
    if (!node.ok()) return io_fail("allocate producer ids", node.code);
    int64_t first = 0;
    if (!node.value.data.empty()) {
      auto previous = producer_id_block_znode::decode(node.value.data);
      if (!previous) return error{errc::io_error, previous.err().message};
      if (previous->last > INT64_MAX - size) return error{errc::io_error, "producer ids exhausted"};
      first = previous->last + 1;
    }
    producer_id_block block{broker_id, first, first + size - 1};
    auto r = s->set(producer_id_block_znode::path(), producer_id_block_znode::encode(block), node.value.stat.version);
    if (r.ok()) return block;
    if (r.code != zk_code::bad_version) return io_fail("allocate producer ids", r.code);
  }
  return io_fail("allocate producer ids", zk_code::bad_version);
}

// ---------------------------------------------------------------------------------------------------------
// cluster_view: a leader's ISR update (caller's thread)

result<partition_state> zk_store::update_isr(const std::string& topic, int32_t partition, const partition_state& next) {
  if (!session_.registered()) return view_fail(view_errc::not_registered, "not registered with ZooKeeper");
  auto s = session_.current();
  if (!s) return view_fail(view_errc::not_registered, "no ZooKeeper session");
  if (next.version < 0) return view_fail(view_errc::version_conflict, "the partition state has not been written yet");
  auto r = s->set(partition_state_znode::path(topic, partition), partition_state_znode::encode(next), next.version);
  if (r.ok()) {
    partition_state stored = next;
    stored.version = r.value.version;
    return stored;
  }
  if (r.code == zk_code::bad_version || r.code == zk_code::no_node)
    return view_fail(view_errc::version_conflict, topic + "-" + std::to_string(partition) + ": state changed (" +
                                                      to_string(r.code) + ")");
  return view_fail(view_errc::unavailable, std::string("ISR update failed: ") + to_string(r.code));
}

// ---------------------------------------------------------------------------------------------------------
// cluster_view: a leader move, as a preferred replica election (caller's thread)

result<void> zk_store::request_leader_move(const std::string& topic, int32_t partition, int32_t broker) {
  if (!session_.registered()) return view_fail(view_errc::not_registered, "not registered with ZooKeeper");
  auto s = session_.current();
  if (!s) return view_fail(view_errc::not_registered, "no ZooKeeper session");
  const std::string tp = topic + "-" + std::to_string(partition);
  auto zk_fail = [&](const std::string& what, zk_code c) {
    return view_fail(view_errc::unavailable, what + " for " + tp + ": ZooKeeper " + to_string(c));
  };
  auto marker = s->exists(delete_topic_znode::path(topic), nullptr);
  if (!marker.ok()) return zk_fail("reading the deletion marker", marker.code);
  if (marker.value) return error{errc::unknown_topic, "topic " + topic + " is marked for deletion"};
  // 1. The target becomes the first replica, the others keep their order (the replica set is unchanged).
  bool reordered = false;
  for (int attempt = 0; attempt < 10 && !reordered; ++attempt) {
    auto node = s->get(topic_znode::path(topic), nullptr);
    if (node.code == zk_code::no_node) return error{errc::unknown_topic, "topic " + topic + " does not exist"};
    if (!node.ok()) return zk_fail("reading the assignment", node.code);
    auto t = topic_znode::decode(topic, node.value.data);
    if (!t) return t.err();
    if (partition < 0 || partition >= t->partition_count())
      return error{errc::unknown_topic, "topic " + topic + " has no partition " + std::to_string(partition)};
    auto& replicas = t->replicas[static_cast<size_t>(partition)];
    auto it = std::find(replicas.begin(), replicas.end(), broker);
    if (it == replicas.end()) {
      std::string list;
      for (int32_t b : replicas) list += (list.empty() ? "" : ",") + std::to_string(b);
      return error{view_errc::not_a_replica,
                   "broker " + std::to_string(broker) + " is not a replica of " + tp + " (replicas [" + list + "])"};
    }
    if (it == replicas.begin()) break;
    std::rotate(replicas.begin(), it, it + 1);
    auto r = s->set(topic_znode::path(topic), topic_znode::encode(*t), node.value.stat.version);
    if (r.ok()) reordered = true;
    else if (r.code == zk_code::no_node) return error{errc::unknown_topic, "topic " + topic + " does not exist"};
    else if (r.code != zk_code::bad_version) return zk_fail("writing the assignment", r.code);
  }
  // 2. The election request: merged with one still pending (Kafka's tool refuses while one is; merging on the
  //    version read loses nothing, and the controller deletes the znode on the version it handled).
  const std::string path = preferred_replica_election_znode::path();
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto node = s->get(path, nullptr);
    if (node.code == zk_code::no_node) {
      auto c = s->create(path, preferred_replica_election_znode::encode({{topic, partition}}), create_mode::persistent);
      if (c.ok()) return {};
      if (c.code != zk_code::node_exists) return zk_fail("creating " + path, c.code);
      continue;
    }
    if (!node.ok()) return zk_fail("reading " + path, node.code);
    auto pending = preferred_replica_election_znode::decode(node.value.data);
    preferred_replica_election_znode::partitions ps = pending ? std::move(*pending) : preferred_replica_election_znode::partitions{};
    ps.insert({topic, partition});  // written even when named already: a controller handling the version read
                                    // before the reorder above fails to delete it and handles it again
    auto r = s->set(path, preferred_replica_election_znode::encode(ps), node.value.stat.version);
    if (r.ok()) return {};
    if (r.code != zk_code::bad_version && r.code != zk_code::no_node) return zk_fail("writing " + path, r.code);
  }
  return zk_fail("writing " + path, zk_code::bad_version);
}

// ---------------------------------------------------------------------------------------------------------
// entity configs: /config/users/<name>, /config/clients/<name>

result<std::map<std::string, std::map<std::string, std::string>>> zk_store::entity_configs(const std::string& type) const {
  auto s = session_.current();
  if (!s) return io_fail("read /config/" + type, zk_code::closed);
  const std::string parent = "/config/" + type;
  auto names = s->get_children(parent, nullptr);
  std::map<std::string, std::map<std::string, std::string>> out;
  if (names.code == zk_code::no_node) return out;
  if (!names.ok()) return io_fail("read " + parent, names.code);
  for (const auto& name : names.value) {
    auto node = s->get(parent + "/" + name, nullptr);
    if (node.code == zk_code::no_node) continue;  // deleted between the two reads
    if (!node.ok()) return io_fail("read " + parent + "/" + name, node.code);
    if (node.value.data.empty()) continue;  // a parent made without data (only nested entities)
    auto configs = topic_config_znode::decode(node.value.data);  // the same {"version":1,"config":{..}} shape
    if (!configs) return error{errc::io_error, parent + "/" + name + ": " + configs.err().message};
    if (!configs->empty()) out[name] = std::move(*configs);
  }
  return out;
}

result<std::vector<std::string>> zk_store::entity_names(const std::string& type) const {
  auto s = session_.current();
  if (!s) return io_fail("read /config/" + type, zk_code::closed);
  auto names = s->get_children("/config/" + type, nullptr);
  if (names.code == zk_code::no_node) return std::vector<std::string>{};
  if (!names.ok()) return io_fail("read /config/" + type, names.code);
  std::sort(names.value.begin(), names.value.end());
  return names.value;
}

result<void> zk_store::set_entity_configs(const std::string& type, const std::string& name,
                                          const std::map<std::string, std::string>& configs) {
  auto s = session_.current();
  const std::string path = "/config/" + type + "/" + name;
  if (!s) return io_fail("write " + path, zk_code::closed);
  // The parents, outermost first: /config/<type>, and for a nested type ("users/<user>/clients") each level,
  // an entity level holding an empty config as Kafka's nodes do.
  {
    std::string parent = "/config";
    size_t from = 0;
    int level = 0;
    while (from <= type.size()) {
      const size_t slash = std::min(type.find('/', from), type.size());
      parent += "/" + type.substr(from, slash - from);
      const std::string data = level % 2 == 1 ? topic_config_znode::encode({}) : std::string();
      if (auto c = s->create(parent, data, create_mode::persistent).code; c != zk_code::ok && c != zk_code::node_exists)
        return io_fail("create " + parent, c);
      from = slash + 1;
      ++level;
    }
  }
  // Kafka keeps the znode with an empty config map rather than deleting it.
  const std::string data = topic_config_znode::encode(configs);
  bool written = false;
  for (int attempt = 0; attempt < 3 && !written; ++attempt) {
    auto r = s->set(path, data, -1);
    if (r.ok()) { written = true; break; }
    if (r.code != zk_code::no_node) return io_fail("write " + path, r.code);
    auto c = s->create(path, data, create_mode::persistent);
    if (c.ok()) { written = true; break; }
    if (c.code != zk_code::node_exists) return io_fail("write " + path, c.code);
  }
  if (!written) return io_fail("write " + path, zk_code::node_exists);
  const std::string change = R"({"version":2,"entity_path":")" + type + "/" + name + R"("})";
  if (auto c = s->create("/config/changes/config_change_", change, create_mode::persistent_sequential); !c.ok())
    log::warn("config change notification for {}: ZooKeeper {}", path, to_string(c.code));
  return {};
}

}  // namespace sluice::coordination::zk

namespace sluice::coordination::zk {
namespace {

const char* const kAclResourceTypes[] = {"Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"};

/// Kafka's parents: /kafka-acl for LITERAL patterns, /kafka-acl-extended/prefixed for PREFIXED (KIP-290).
std::string acl_root(const std::string& pattern_type) {
  return pattern_type == "PREFIXED" ? "/kafka-acl-extended/prefixed" : "/kafka-acl";
}

}  // namespace

result<std::map<acl_node_key, std::string>> zk_store::acl_nodes() const {
  auto s = session_.current();
  if (!s) return io_fail("read /kafka-acl", zk_code::closed);
  std::map<acl_node_key, std::string> out;
  for (const char* pattern : {"LITERAL", "PREFIXED"}) {
    for (const char* type : kAclResourceTypes) {
      const std::string parent = acl_root(pattern) + "/" + type;
      auto names = s->get_children(parent, nullptr);
      if (names.code == zk_code::no_node) continue;
      if (!names.ok()) return io_fail("read " + parent, names.code);
      for (const auto& name : names.value) {
        auto node = s->get(parent + "/" + name, nullptr);
        if (node.code == zk_code::no_node) continue;  // deleted between the two reads
        if (!node.ok()) return io_fail("read " + parent + "/" + name, node.code);
        out[acl_node_key{pattern, type, name}] = node.value.data;
      }
    }
  }
  return out;
}

result<void> zk_store::set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) {
  auto s = session_.current();
  const std::string parent = acl_root(key.pattern_type) + "/" + key.resource_type;
  const std::string path = parent + "/" + key.name;
  if (!s) return io_fail("write " + path, zk_code::closed);
  if (key.name.empty() || key.name.find('/') != std::string::npos)
    return error{std::make_error_code(std::errc::invalid_argument), "ACL resource name '" + key.name + "' cannot be a ZooKeeper node name"};
  if (!data) {
    if (auto c = s->remove(path, -1); c != zk_code::ok && c != zk_code::no_node) return io_fail("delete " + path, c);
  } else {
    // Parents first (/kafka-acl-extended, /kafka-acl-extended/prefixed, then the type).
    std::string at;
    for (size_t i = 1; i <= parent.size(); ++i) {
      if (i != parent.size() && parent[i] != '/') continue;
      at = parent.substr(0, i);
      if (auto c = s->create(at, "", create_mode::persistent).code; c != zk_code::ok && c != zk_code::node_exists)
        return io_fail("create " + at, c);
    }
    bool written = false;
    for (int attempt = 0; attempt < 3 && !written; ++attempt) {
      auto r = s->set(path, *data, -1);
      if (r.ok()) { written = true; break; }
      if (r.code != zk_code::no_node) return io_fail("write " + path, r.code);
      auto c = s->create(path, *data, create_mode::persistent);
      if (c.ok()) { written = true; break; }
      if (c.code != zk_code::node_exists) return io_fail("write " + path, c.code);
    }
    if (!written) return io_fail("write " + path, zk_code::node_exists);
  }
  // Kafka's change notifications: "Type:name" under /kafka-acl-changes for literal patterns, a JSON resource
  // under /kafka-acl-extended-changes for the others.
  std::string changes = "/kafka-acl-changes";
  std::string change = key.resource_type + ":" + key.name;
  if (key.pattern_type != "LITERAL") {
    changes = "/kafka-acl-extended-changes";
    change = R"({"version":1,"resourceType":")" + key.resource_type + R"(","name":")" + key.name +
             R"(","patternType":"Prefixed"})";
  }
  if (auto c = s->create(changes, "", create_mode::persistent).code; c != zk_code::ok && c != zk_code::node_exists)
    log::warn("ACL change notification for {}: ZooKeeper {}", path, to_string(c));
  else if (auto n = s->create(changes + "/acl_changes_", change, create_mode::persistent_sequential); !n.ok())
    log::warn("ACL change notification for {}: ZooKeeper {}", path, to_string(n.code));
  return {};
}

}  // namespace sluice::coordination::zk
