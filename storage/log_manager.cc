#include "storage/log_manager.h"

#include <algorithm>
#include <random>

#include "base/logging.h"
#include "storage/errc.h"

namespace sluice::storage {

namespace {

bool valid_topic_name(const std::string& t) {
  if (t.empty() || t.size() > 249 || t == "." || t == "..") return false;
  return std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::string random_hex(size_t chars) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdef";
  std::string out;
  while (out.size() < chars) {
    uint64_t v = rng();
    for (int i = 0; i < 16 && out.size() < chars; ++i, v >>= 4) out.push_back(digits[v & 0xf]);
  }
  return out;
}

std::string dir_name(const topic_partition& tp) { return tp.first + "-" + std::to_string(tp.second); }

}  // namespace

log_manager::log_manager(std::vector<std::filesystem::path> log_dirs, log_config default_config, sluice::clock& clock)
    : log_dirs_(std::move(log_dirs)), default_config_(default_config), clock_(clock) {}

log_manager::~log_manager() {
  close_all();
  {
    std::lock_guard lock(doomed_mutex_);
    stopping_ = true;
  }
  doomed_cv_.notify_all();
  if (deleter_.joinable()) deleter_.join();  // removes what is still queued first
}

void log_manager::delete_in_background(std::filesystem::path doomed) {
  {
    std::lock_guard lock(doomed_mutex_);
    doomed_.push_back(std::move(doomed));
    if (!deleter_.joinable()) deleter_ = std::thread([this] { deleter_loop(); });
  }
  doomed_cv_.notify_all();
}

void log_manager::deleter_loop() {
  std::unique_lock lock(doomed_mutex_);
  for (;;) {
    doomed_cv_.wait(lock, [this] { return stopping_ || !doomed_.empty(); });
    if (doomed_.empty()) return;  // stopping, nothing left
    auto path = std::move(doomed_.front());
    doomed_.pop_front();
    lock.unlock();
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) sluice::log::warn("storage: delete {}: {} (the next start removes it)", path.string(), ec.message());
    lock.lock();
  }
}

std::optional<topic_partition> log_manager::parse_partition_dir(const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 >= name.size()) return std::nullopt;
  const std::string digits = name.substr(dash + 1);
  if (digits.size() > 10 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int64_t p = std::stoll(digits);
  const std::string topic = name.substr(0, dash);
  if (p > INT32_MAX || !valid_topic_name(topic)) return std::nullopt;
  return topic_partition{topic, static_cast<int32_t>(p)};
}

sluice::result<void> log_manager::load() {
  std::lock_guard lock(mutex_);
  if (log_dirs_.empty()) return make_error(errc::invalid_argument, "log.dirs is empty");
  for (size_t d = 0; d < log_dirs_.size(); ++d) {
    const auto& dir = log_dirs_[d];
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error(errc::io_error, "create log dir " + dir.string() + ": " + ec.message());
    auto recovery = read_offset_checkpoint(dir / recovery_point_checkpoint_file);
    if (!recovery) {
      sluice::log::warn("storage: {} (recovering every segment)", recovery.err().message);
      recovery = offset_checkpoint{};
    }
    auto starts = read_offset_checkpoint(dir / log_start_offset_checkpoint_file);
    if (!starts) {
      sluice::log::warn("storage: {}", starts.err().message);
      starts = offset_checkpoint{};
    }
    std::vector<std::filesystem::path> children;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.is_directory()) children.push_back(e.path());
    }
    if (ec) return make_error(errc::io_error, "list log dir " + dir.string() + ": " + ec.message());
    std::sort(children.begin(), children.end());
    for (const auto& child : children) {
      const std::string name = child.filename().string();
      if (name.size() > 7 && name.compare(name.size() - 7, 7, "-delete") == 0) {
        std::filesystem::remove_all(child, ec);  // a removal interrupted by a crash
        continue;
      }
      auto tp = parse_partition_dir(name);
      if (!tp) {
        sluice::log::debug("storage: skipping {} (not a partition directory)", child.string());
        continue;
      }
      if (logs_.count(*tp) != 0) {
        return make_error(errc::already_exists, "partition " + name + " found in two log dirs: " +
                                                    log_dirs_[logs_[*tp].dir_index].string() + " and " +
                                                    dir.string());
      }
      log_recovery_state state;
      if (auto it = recovery->find(*tp); it != recovery->end()) state.recovery_point = it->second;
      if (auto it = starts->find(*tp); it != starts->end()) state.log_start_offset = it->second;
      auto l = log::open(child, default_config_, clock_, state);
      if (!l) return l.err();
      logs_[*tp] = entry{std::move(l.value()), d};
    }
  }
  return {};
}

sluice::result<log*> log_manager::create(const std::string& topic, int32_t partition, log_config config) {
  if (!valid_topic_name(topic)) return make_error(errc::invalid_argument, "illegal topic name '" + topic + "'");
  if (partition < 0) return make_error(errc::invalid_argument, "negative partition " + std::to_string(partition));
  std::lock_guard lock(mutex_);
  if (log_dirs_.empty()) return make_error(errc::invalid_argument, "log.dirs is empty");
  const topic_partition tp{topic, partition};
  if (auto it = logs_.find(tp); it != logs_.end()) return it->second.partition_log.get();
  std::vector<size_t> counts(log_dirs_.size(), 0);
  for (const auto& [key, e] : logs_) ++counts[e.dir_index];
  const size_t d = static_cast<size_t>(std::min_element(counts.begin(), counts.end()) - counts.begin());
  auto l = log::open(log_dirs_[d] / dir_name(tp), config, clock_);
  if (!l) return l.err();
  log* raw = l.value().get();
  logs_[tp] = entry{std::move(l.value()), d};
  return raw;
}

log* log_manager::get(const std::string& topic, int32_t partition) const {
  std::lock_guard lock(mutex_);
  auto it = logs_.find({topic, partition});
  return it == logs_.end() ? nullptr : it->second.partition_log.get();
}

sluice::result<void> log_manager::remove(const std::string& topic, int32_t partition, bool rewrite_checkpoints) {
  std::lock_guard lock(mutex_);
  auto it = logs_.find({topic, partition});
  if (it == logs_.end()) return make_error(errc::not_found, "no log for " + topic + "-" + std::to_string(partition));
  const auto dir = it->second.partition_log->dir();
  it->second.partition_log->close(/*durable=*/false);  // deleted next: nothing to make durable
  logs_.erase(it);
  // Kafka's LocalLog.logDeleteDirName: "<topic>-<partition>.<32 hex>-delete", the topic cut so that the name
  // fits a 255-byte file name (a 249-character topic would not fit otherwise, and its data would stay).
  const std::string suffix = "-" + std::to_string(partition) + "." + random_hex(32) + "-delete";
  const size_t prefix = std::min(topic.size(), size_t{255} - suffix.size());
  const auto doomed = dir.parent_path() / (topic.substr(0, prefix) + suffix);
  std::error_code ec;
  std::filesystem::rename(dir, doomed, ec);
  if (ec) {
    // Deleted in place rather than left behind: a topic created again under this name must start empty.
    sluice::log::warn("storage: rename {} for deletion failed ({}); deleting it in place", dir.string(), ec.message());
    std::filesystem::remove_all(dir, ec);
    if (ec) return make_error(errc::io_error, "delete " + dir.string() + ": " + ec.message());
    return rewrite_checkpoints ? write_checkpoints_locked() : sluice::result<void>{};
  }
  delete_in_background(doomed);
  return rewrite_checkpoints ? write_checkpoints_locked() : sluice::result<void>{};
}

std::vector<std::pair<std::string, int32_t>> log_manager::partitions() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, int32_t>> out;
  out.reserve(logs_.size());
  for (const auto& [tp, e] : logs_) out.push_back(tp);
  return out;
}

sluice::result<void> log_manager::flush_all() {
  std::lock_guard lock(mutex_);
  sluice::result<void> status;
  for (auto& [tp, e] : logs_) {
    if (auto r = e.partition_log->flush(); !r && status) status = r;
  }
  if (auto r = write_checkpoints_locked(); !r && status) status = r;
  return status;
}

void log_manager::close_all() {
  std::lock_guard lock(mutex_);
  if (logs_.empty()) return;
  for (auto& [tp, e] : logs_) e.partition_log->close();
  if (auto r = write_checkpoints_locked(); !r) sluice::log::error("storage: checkpoint: {}", r.err().message);
  logs_.clear();
}

sluice::result<void> log_manager::write_checkpoints() {
  std::lock_guard lock(mutex_);
  return write_checkpoints_locked();
}

sluice::result<void> log_manager::write_checkpoints_locked() {
  std::vector<offset_checkpoint> recovery(log_dirs_.size()), starts(log_dirs_.size());
  for (const auto& [tp, e] : logs_) {
    const auto s = e.partition_log->checkpoint_state();
    recovery[e.dir_index][tp] = s.recovery_point;
    starts[e.dir_index][tp] = s.log_start_offset;
  }
  for (size_t d = 0; d < log_dirs_.size(); ++d) {
    if (auto r = write_offset_checkpoint(log_dirs_[d] / recovery_point_checkpoint_file, recovery[d]); !r) return r;
    if (auto r = write_offset_checkpoint(log_dirs_[d] / log_start_offset_checkpoint_file, starts[d]); !r) return r;
  }
  return {};
}

}  // namespace sluice::storage
