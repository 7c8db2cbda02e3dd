#include "coordination/embedded_store.h"

#include "coordination/replica_assignment.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <climits>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace sluice::coordination {
namespace json = boost::json;
namespace {

constexpr std::string_view kFileName = "__cluster_metadata.json";
constexpr std::string_view kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

error io_failure(const std::string& what) { return error{errc::io_error, what}; }

json::value to_json(const topic_assignment& t) {
  json::array replicas;
  for (const auto& r : t.replicas) {
    json::array ids;
    for (int32_t b : r) ids.push_back(b);
    replicas.push_back(std::move(ids));
  }
  json::object configs;
  for (const auto& [k, v] : t.configs) configs[k] = v;
  return json::object{{"name", t.name}, {"id", to_base64(t.id)}, {"replicas", std::move(replicas)},
                      {"configs", std::move(configs)}};
}

topic_assignment from_json(const json::object& o) {
  topic_assignment t;
  t.name = json::value_to<std::string>(o.at("name"));
  auto id = topic_id_from_base64(json::value_to<std::string>(o.at("id")));
  if (!id) throw std::runtime_error("bad topic id for " + t.name);
  t.id = *id;
  for (const auto& r : o.at("replicas").as_array()) {
    std::vector<int32_t> ids;
    for (const auto& b : r.as_array()) ids.push_back(static_cast<int32_t>(b.to_number<int64_t>()));
    t.replicas.push_back(std::move(ids));
  }
  for (const auto& [k, v] : o.at("configs").as_object()) t.configs[std::string(k)] = json::value_to<std::string>(v);
  return t;
}

}  // namespace

topic_id random_topic_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  topic_id id{};
  do {
    for (size_t i = 0; i < id.size(); i += 8) {
      uint64_t v = rng();
      for (size_t j = 0; j < 8; ++j) id[i + j] = static_cast<uint8_t>(v >> (8 * j));
    }
  } while (id == topic_id{});
  return id;
}

std::string to_base64(const topic_id& id) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : id) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kB64[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kB64[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::optional<topic_id> topic_id_from_base64(const std::string& text) {
  if (text.size() != 22) return std::nullopt;
  topic_id id{};
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : text) {
    auto pos = kB64.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < id.size()) id[n++] = static_cast<uint8_t>(acc >> bits);
    }
  }
  if (n != id.size()) return std::nullopt;
  return id;
}

std::filesystem::path embedded_store::file_in(const std::filesystem::path& dir) { return dir / kFileName; }

result<std::unique_ptr<embedded_store>> embedded_store::open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_failure("cannot create " + dir.string() + ": " + ec.message());
  std::unique_ptr<embedded_store> store(new embedded_store(dir / kFileName));
  if (!std::filesystem::exists(store->file_)) {
    store->cluster_id_ = to_base64(random_topic_id());
    if (auto r = store->persist(); !r) return r.err();
    store->publish();  // registered=false until start()
    return store;
  }
  std::ifstream in(store->file_);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return io_failure("cannot read " + store->file_.string());
  try {
    auto root = json::parse(text.str()).as_object();
    store->cluster_id_ = json::value_to<std::string>(root.at("cluster_id"));
    for (const auto& t : root.at("topics").as_array()) {
      auto topic = from_json(t.as_object());
      store->topics_.emplace(topic.name, std::move(topic));
    }
    if (const auto* b = root.if_contains("latest_producer_id_block")) {
      const auto& o = b->as_object();
      producer_id_block block;
      block.broker_id = static_cast<int32_t>(o.at("broker").to_number<int64_t>());
      block.first = std::stoll(json::value_to<std::string>(o.at("block_start")));
      block.last = std::stoll(json::value_to<std::string>(o.at("block_end")));
      if (block.first < 0 || block.last < block.first) throw std::runtime_error("bad latest_producer_id_block");
      store->latest_producer_id_block_ = block;
    }
    if (const auto* e = root.if_contains("entity_configs")) {
      for (const auto& [type, entities] : e->as_object())
        for (const auto& [name, configs] : entities.as_object())
          for (const auto& [k, v] : configs.as_object())
            store->entity_configs_[std::string(type)][std::string(name)][std::string(k)] = json::value_to<std::string>(v);
    }
    if (const auto* a = root.if_contains("acls")) {
      for (const auto& n : a->as_array()) {
        const auto& o = n.as_object();
        acl_node_key key{json::value_to<std::string>(o.at("pattern_type")), json::value_to<std::string>(o.at("resource_type")),
                         json::value_to<std::string>(o.at("name"))};
        store->acl_nodes_[std::move(key)] = json::value_to<std::string>(o.at("data"));
      }
    }
  } catch (const std::exception& e) {
    return io_failure("corrupt " + store->file_.string() + ": " + e.what());
  }
  store->publish();  // registered=false until start()
  return store;
}

result<void> embedded_store::persist() const {
  json::array topics;
  for (const auto& [name, t] : topics_) topics.push_back(to_json(t));
  json::object root{{"version", 1}, {"cluster_id", cluster_id_}, {"topics", std::move(topics)}};
  if (latest_producer_id_block_) {
    root["latest_producer_id_block"] =
        json::object{{"version", 1}, {"broker", latest_producer_id_block_->broker_id},
                     {"block_start", std::to_string(latest_producer_id_block_->first)},
                     {"block_end", std::to_string(latest_producer_id_block_->last)}};
  }
  if (!entity_configs_.empty()) {
    json::object types;
    for (const auto& [type, entities] : entity_configs_) {
      json::object named;
      for (const auto& [name, configs] : entities) {
        json::object kv;
        for (const auto& [k, v] : configs) kv[k] = v;
        named[name] = std::move(kv);
      }
      types[type] = std::move(named);
    }
    root["entity_configs"] = std::move(types);
  }
  if (!acl_nodes_.empty()) {
    json::array acls;
    for (const auto& [key, data] : acl_nodes_)
      acls.push_back(json::object{{"pattern_type", key.pattern_type}, {"resource_type", key.resource_type},
                                  {"name", key.name}, {"data", data}});
    root["acls"] = std::move(acls);
  }
  std::string text = json::serialize(root);
  auto tmp = file_;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_failure("cannot write " + tmp.string());
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      return io_failure("write failed on " + tmp.string());
    }
    done += static_cast<size_t>(n);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), file_.c_str()) != 0) return io_failure("cannot replace " + file_.string());
  int dfd = ::open(file_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

std::string embedded_store::cluster_id() const {
  std::lock_guard lock(mutex_);
  return cluster_id_;
}

std::vector<topic_assignment> embedded_store::topics() const {
  std::lock_guard lock(mutex_);
  std::vector<topic_assignment> out;
  out.reserve(topics_.size());
  for (const auto& [name, t] : topics_) out.push_back(t);
  return out;
}

result<void> embedded_store::create_topic(const topic_assignment& topic) {
  auto r = do_create_topic(topic);
  if (r) publish();
  return r;
}

result<void> embedded_store::delete_topic(const std::string& name) {
  auto r = do_delete_topic(name);
  if (r) publish();
  return r;
}

result<void> embedded_store::set_topic_configs(const std::string& name, std::map<std::string, std::string> configs) {
  auto r = do_set_topic_configs(name, std::move(configs));
  if (r) publish();
  return r;
}

result<void> embedded_store::add_partitions(const std::string& name,
                                            const std::vector<std::vector<int32_t>>& replicas) {
  auto r = do_add_partitions(name, replicas);
  if (r) publish();
  return r;
}

result<void> embedded_store::do_create_topic(const topic_assignment& topic) {
  std::lock_guard lock(mutex_);
  if (topics_.contains(topic.name)) return error{errc::topic_exists, topic.name};
  topics_.emplace(topic.name, topic);
  if (auto r = persist(); !r) {
    topics_.erase(topic.name);
    return r;
  }
  return {};
}

result<void> embedded_store::do_delete_topic(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return error{errc::unknown_topic, name};
  auto saved = std::move(it->second);
  topics_.erase(it);
  if (auto r = persist(); !r) {
    topics_.emplace(name, std::move(saved));
    return r;
  }
  return {};
}

result<void> embedded_store::do_set_topic_configs(const std::string& name,
                                                 std::map<std::string, std::string> configs) {
  std::lock_guard lock(mutex_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return error{errc::unknown_topic, name};
  std::swap(it->second.configs, configs);
  if (auto r = persist(); !r) {
    std::swap(it->second.configs, configs);
    return r;
  }
  return {};
}

result<void> embedded_store::do_add_partitions(const std::string& name,
                                               const std::vector<std::vector<int32_t>>& replicas) {
  std::lock_guard lock(mutex_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return error{errc::unknown_topic, name};
  size_t before = it->second.replicas.size();
  it->second.replicas.insert(it->second.replicas.end(), replicas.begin(), replicas.end());
  if (auto r = persist(); !r) {
    it->second.replicas.resize(before);
    return r;
  }
  return {};
}

}  // namespace sluice::coordination

namespace sluice::coordination {

result<producer_id_block> embedded_store::allocate_producer_id_block(int32_t broker_id, int64_t size) {
  std::lock_guard lock(mutex_);
  if (size <= 0) return error{errc::io_error, "producer id block size must be positive"};
  const int64_t first = latest_producer_id_block_ ? latest_producer_id_block_->last + 1 : 0;
  if (first > INT64_MAX - size) return error{errc::io_error, "producer ids exhausted"};
  auto previous = latest_producer_id_block_;
  latest_producer_id_block_ = producer_id_block{broker_id, first, first + size - 1};
  if (auto r = persist(); !r) {
    latest_producer_id_block_ = previous;
    return r.err();
  }
  return *latest_producer_id_block_;
}

}  // namespace sluice::coordination

namespace sluice::coordination {

result<void> embedded_store::start(const broker_registration& self) {
  {
    std::lock_guard lock(view_mutex_);
    self_ = self;
    started_ = true;
  }
  publish();
  return {};
}

std::shared_ptr<const cluster_snapshot> embedded_store::snapshot() const {
  std::lock_guard lock(view_mutex_);
  return snapshot_;
}

void embedded_store::subscribe(std::function<void(std::shared_ptr<const cluster_snapshot>)> on_change) {
  std::lock_guard lock(view_mutex_);
  subscribers_.push_back(std::move(on_change));
}

void embedded_store::publish() {
  std::lock_guard order(publish_mutex_);
  auto snap = std::make_shared<cluster_snapshot>();
  std::optional<broker_registration> self;
  {
    std::lock_guard lock(view_mutex_);
    self = self_;
    snap->registered = started_;
  }
  const int32_t id = self ? self->id : -1;
  {
    std::lock_guard lock(mutex_);
    snap->cluster_id = cluster_id_;
    for (const auto& [name, t] : topics_) {
      snap->topics.emplace(name, t);
      snap->states.emplace(name, std::vector<partition_state>(t.replicas.size(), partition_state{id, 0, {id}, 0, 0}));
    }
  }
  if (self) {
    snap->brokers[id] = *self;
    snap->controller_id = id;
  }
  std::vector<std::function<void(std::shared_ptr<const cluster_snapshot>)>> subscribers;
  {
    std::lock_guard lock(view_mutex_);
    snap->sequence = ++sequence_;
    snapshot_ = snap;
    subscribers = subscribers_;
  }
  for (const auto& f : subscribers) f(snap);
}

result<partition_state> embedded_store::update_isr(const std::string& topic, int32_t partition,
                                                   const partition_state& next) {
  auto snap = snapshot();
  const partition_state* current = snap ? snap->state(topic, partition) : nullptr;
  if (current == nullptr) return error{view_errc::version_conflict, "unknown partition"};
  if (next.version != current->version || next.leader != current->leader || next.isr != current->isr ||
      next.leader_epoch != current->leader_epoch)
    return error{view_errc::version_conflict, "single node: the ISR is always [self]"};
  return *current;
}

result<void> embedded_store::controlled_shutdown(int64_t) { return {}; }

result<void> embedded_store::request_leader_move(const std::string&, int32_t, int32_t) {
  return error{view_errc::not_supported, "a single node leads every partition: leader moves need cluster mode"};
}

result<std::vector<partition_outcome>> embedded_store::alter_reassignments(const std::vector<reassignment_request>& requests,
                                                                           bool allow_rf_change) {
  auto snap = snapshot();
  const int32_t self = broker_id_.load(std::memory_order_relaxed);
  std::vector<partition_outcome> out;
  for (const auto& r : requests) {
    if (!snap || !snap->state(r.topic, r.partition)) {
      out.push_back(unknown_reassignment_partition(r.topic, r.partition, snap && snap->topics.contains(r.topic)));
      continue;
    }
    partition_outcome o{r.topic, r.partition, admin_outcome::ok, {}};
    if (!r.target) {
      o.outcome = admin_outcome::no_reassignment;  // Kafka sends no message with it
    } else if (auto bad = check_reassignment_target(*r.target, [&](int32_t b) { return b == self; }, 1, allow_rf_change)) {
      o.outcome = bad->first;
      o.message = std::move(bad->second);
    }
    out.push_back(std::move(o));
  }
  return out;
}

result<std::vector<partition_outcome>> embedded_store::elect_leaders(
    bool, const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions) {
  std::vector<partition_outcome> out;
  if (!partitions) return out;
  auto snap = snapshot();
  for (const auto& [topic, p] : *partitions)
    out.push_back(snap && snap->state(topic, p) ? election_not_needed(topic, p)
                                                : unknown_election_partition(topic, p, snap && snap->topics.contains(topic)));
  return out;
}

void embedded_store::stop() {
  std::lock_guard lock(view_mutex_);
  started_ = false;
}

result<std::map<std::string, std::map<std::string, std::string>>> embedded_store::entity_configs(
    const std::string& entity_type) const {
  std::lock_guard lock(mutex_);
  auto it = entity_configs_.find(entity_type);
  if (it == entity_configs_.end()) return std::map<std::string, std::map<std::string, std::string>>{};
  return it->second;
}

result<void> embedded_store::set_entity_configs(const std::string& entity_type, const std::string& name,
                                                std::map<std::string, std::string> configs) {
  std::lock_guard lock(mutex_);
  auto saved = entity_configs_;
  if (configs.empty()) {
    if (auto it = entity_configs_.find(entity_type); it != entity_configs_.end()) {
      it->second.erase(name);
      if (it->second.empty()) entity_configs_.erase(it);
    }
  } else {
    entity_configs_[entity_type][name] = std::move(configs);
  }
  if (auto r = persist(); !r) {
    entity_configs_ = std::move(saved);
    return r;
  }
  return {};
}

result<std::vector<std::string>> embedded_store::entity_names(const std::string& entity_type) const {
  std::lock_guard lock(mutex_);
  std::set<std::string> names;
  if (auto it = entity_configs_.find(entity_type); it != entity_configs_.end())
    for (const auto& [name, configs] : it->second) names.insert(name);
  // A nested type "users/<name>/clients" makes <name> an entity of "users" too.
  const std::string prefix = entity_type + "/";
  for (auto it = entity_configs_.lower_bound(prefix); it != entity_configs_.end() && it->first.starts_with(prefix); ++it) {
    const std::string rest = it->first.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

result<std::map<acl_node_key, std::string>> embedded_store::acl_nodes() const {
  std::lock_guard lock(mutex_);
  return acl_nodes_;
}

result<void> embedded_store::set_acl_node(const acl_node_key& key, const std::optional<std::string>& data) {
  std::lock_guard lock(mutex_);
  auto saved = acl_nodes_;
  if (data) acl_nodes_[key] = *data;
  else acl_nodes_.erase(key);
  if (auto r = persist(); !r) {
    acl_nodes_ = std::move(saved);
    return r;
  }
  return {};
}

}  // namespace sluice::coordination
