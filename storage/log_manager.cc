#include "storage/log_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "base/logging.h"
#include "storage/errc.h"
#include "storage/index_file.h"

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

sluice::result<void> fsync_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return detail::io_error("open", path);
  const int r = ::fsync(fd);
  ::close(fd);
  if (r != 0) return detail::io_error("fsync", path);
  return {};
}

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
  std::vector<std::pair<std::filesystem::path, size_t>> futures;  // "-future" directories and their log dir
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
      if (name.size() > future_suffix_bytes && name.compare(name.size() - 7, 7, "-future") == 0) {
        futures.push_back({child, d});  // after every log dir is listed (move())
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
      auto l = open_log(child, default_config_, state);
      if (!l) return l.err();
      logs_[*tp] = entry{std::move(l.value()), d};
    }
  }
  // A move (move()) cut short by a crash: the future copy of a partition that still has its log is dropped; one
  // whose old log was already renamed for deletion is complete, and finishes the move.
  for (const auto& [future, d] : futures) {
    const std::string name = future.filename().string();
    auto tp = parse_partition_dir(name.substr(0, name.size() - future_suffix_bytes));
    std::error_code ec;
    if (!tp || logs_.count(*tp) != 0) {
      sluice::log::info("storage: dropping {} (a log dir move that did not finish)", future.string());
      std::filesystem::remove_all(future, ec);
      continue;
    }
    const auto live = future.parent_path() / dir_name(*tp);
    std::filesystem::rename(future, live, ec);
    if (ec) return make_error(errc::io_error, "rename " + future.string() + ": " + ec.message());
    sluice::log::info("storage: finished moving {} to {}", dir_name(*tp), log_dirs_[d].string());
    auto l = open_log(live, default_config_);  // its offsets are not in this dir's checkpoints yet
    if (!l) return l.err();
    logs_[*tp] = entry{std::move(l.value()), d};
  }
  return {};
}

std::optional<size_t> log_manager::dir_index_of(const std::string& topic, int32_t partition) const {
  std::lock_guard lock(mutex_);
  auto it = logs_.find({topic, partition});
  if (it == logs_.end()) return std::nullopt;
  return it->second.dir_index;
}

std::optional<size_t> log_manager::find_log_dir(const std::string& path) const {
  for (size_t d = 0; d < log_dirs_.size(); ++d) {
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(log_dirs_[d], ec);
    // As DescribeLogDirs shows it (normalised), or as configured.
    if (absolute.lexically_normal().string() == path || absolute.string() == path) return d;
  }
  return std::nullopt;
}

void log_manager::set_preferred_dir(const std::string& topic, int32_t partition, size_t dir_index) {
  std::lock_guard lock(mutex_);
  preferred_dirs_[{topic, partition}] = dir_index;
}

sluice::result<log*> log_manager::move(const std::string& topic, int32_t partition, size_t dest_index) {
  if (dest_index >= log_dirs_.size())
    return make_error(errc::invalid_argument, "no log dir " + std::to_string(dest_index));
  const topic_partition tp{topic, partition};
  log* source = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = logs_.find(tp);
    if (it == logs_.end()) return make_error(errc::not_found, "no log for " + dir_name(tp));
    if (it->second.dir_index == dest_index) return it->second.partition_log.get();
    source = it->second.partition_log.get();
  }
  // The copy runs without the lock: only this partition's strand uses the log.
  if (auto r = source->flush(); !r) return r.err();
  const auto from = source->dir();
  const auto future = log_dirs_[dest_index] / (dir_name(tp) + "." + random_hex(32) + "-future");
  auto fail = [&](const std::string& why) -> sluice::error {
    std::error_code ignored;
    std::filesystem::remove_all(future, ignored);
    return make_error(errc::io_error, "move " + dir_name(tp) + ": " + why);
  };
  std::error_code ec;
  std::filesystem::create_directories(future, ec);
  if (ec) return fail("create " + future.string() + ": " + ec.message());
  for (const auto& e : std::filesystem::directory_iterator(from, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".cleaned") == 0) continue;  // a compaction under way
    std::filesystem::copy_file(e.path(), future / name, ec);
    if (ec) return fail("copy " + e.path().string() + ": " + ec.message());
    if (auto r = fsync_file(future / name); !r) return fail(r.err().message);
  }
  if (ec) return fail("list " + from.string() + ": " + ec.message());
  if (auto r = detail::fsync_directory(future); !r) return fail(r.err().message);
  if (auto r = detail::fsync_directory(log_dirs_[dest_index]); !r) return fail(r.err().message);

  std::lock_guard lock(mutex_);
  auto it = logs_.find(tp);
  const log_config config = source->config();
  const log_recovery_state state = source->checkpoint_state();
  source->close(/*durable=*/true);
  // The commit point: once the old directory is gone, the future copy is the partition's log (see load()).
  const auto doomed = from.parent_path() / (dir_name(tp) + "." + random_hex(32) + "-delete");
  std::filesystem::rename(from, doomed, ec);
  if (ec) {
    // The old log stays: reopen it where it is.
    auto back = open_log(from, config, state);
    std::error_code ignored;
    std::filesystem::remove_all(future, ignored);
    if (!back) return back.err();
    it->second.partition_log = std::move(back.value());
    return make_error(errc::io_error, "rename " + from.string() + ": " + ec.message());
  }
  (void)detail::fsync_directory(from.parent_path());
  const auto live = log_dirs_[dest_index] / dir_name(tp);
  std::filesystem::rename(future, live, ec);
  if (ec) return make_error(errc::io_error, "rename " + future.string() + ": " + ec.message() + " (the next start finishes the move)");
  (void)detail::fsync_directory(log_dirs_[dest_index]);
  auto moved = open_log(live, config, state);
  if (!moved) return moved.err();
  it->second = entry{std::move(moved.value()), dest_index};
  delete_in_background(doomed);
  if (auto r = write_checkpoints_locked(); !r) sluice::log::warn("storage: checkpoint after a move: {}", r.err().message);
  return it->second.partition_log.get();
}

sluice::result<std::unique_ptr<log>> log_manager::open_log(const std::filesystem::path& dir, const log_config& config,
                                                          log_recovery_state state) {
  auto l = log::open(dir, config, clock_, state);
  if (l) l.value()->set_background_flusher(&flusher_);
  return l;
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
  size_t d = static_cast<size_t>(std::min_element(counts.begin(), counts.end()) - counts.begin());
  if (auto it = preferred_dirs_.find(tp); it != preferred_dirs_.end()) {
    if (it->second < log_dirs_.size()) d = it->second;
    preferred_dirs_.erase(it);
  }
  const auto dir = log_dirs_[d] / dir_name(tp);
  std::error_code ec;
  const bool existed = std::filesystem::exists(dir, ec);
  auto l = open_log(dir, config);
  if (!l) {
    // A log that could not be opened (EMFILE, ENOSPC, ...) leaves no directory behind that this call made: the
    // next start would otherwise load it as a partition of a topic that does not exist.
    if (!existed) std::filesystem::remove_all(dir, ec);
    return l.err();
  }
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
