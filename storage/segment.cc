#include "storage/segment.h"

#include <chrono>

#include "base/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

#include "base/logging.h"
#include "storage/byte_order.h"
#include "storage/compression.h"
#include "storage/crc32c.h"
#include "storage/errc.h"
#include "storage/log_dir_failure.h"
#include "storage/scan_reader.h"

namespace sluice::storage {


const char* to_suffix(segment_suffix s) {
  switch (s) {
    case segment_suffix::none: return "";
    case segment_suffix::cleaned: return ".cleaned";
    case segment_suffix::swap: return ".swap";
  }
  return "";
}

std::filesystem::path segment::file_path(const char* extension) const {
  return dir_ / (detail::segment_file_name(base_offset_, extension) + to_suffix(suffix_));
}

std::filesystem::path segment::log_path() const { return file_path(".log"); }

sluice::result<void> segment::rename_files(const std::filesystem::path& dir, int64_t base_offset, segment_suffix from,
                                           segment_suffix to) {
  std::error_code ec;
  for (const char* extension : {".index", ".timeindex", ".txnindex", ".log"}) {
    const auto name = detail::segment_file_name(base_offset, extension);
    const auto source = dir / (name + to_suffix(from));
    if (std::string_view(extension) != ".log" && !std::filesystem::exists(source)) continue;
    std::filesystem::rename(source, dir / (name + to_suffix(to)), ec);
    if (ec) return make_error(errc::io_error, "rename " + source.string() + ": " + ec.message());
  }
  return {};
}

void segment::remove_files_of(const std::filesystem::path& dir, int64_t base_offset, segment_suffix suffix) {
  std::error_code ec;
  for (const char* extension : {".index", ".timeindex", ".txnindex", ".log"}) {
    std::filesystem::remove(dir / (detail::segment_file_name(base_offset, extension) + to_suffix(suffix)), ec);
  }
}

sluice::result<std::unique_ptr<segment>> segment::open_files(const std::filesystem::path& dir, int64_t base_offset,
                                                             int32_t index_interval_bytes, int64_t now_ms,
                                                             bool truncate, segment_suffix suffix) {
  std::unique_ptr<segment> s(new segment());
  s->dir_ = dir;
  s->suffix_ = suffix;
  s->base_offset_ = base_offset;
  s->next_offset_ = base_offset;
  s->index_interval_bytes_ = index_interval_bytes;
  s->created_ms_ = now_ms;
  const auto log_file = s->log_path();
  const int flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0);
  const int fd = ::open(log_file.c_str(), flags, 0644);
  if (fd < 0) return detail::io_error("open", log_file);
  s->file_ = std::make_shared<file_handle>(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return detail::io_error("fstat", log_file);
  s->size_ = st.st_size;
  auto oi = offset_index::open(s->file_path(".index"), base_offset);
  if (!oi) return oi.err();
  s->offset_index_ = std::move(oi.value());
  auto ti = time_index::open(s->file_path(".timeindex"), base_offset);
  if (!ti) return ti.err();
  s->time_index_ = std::move(ti.value());
  if (truncate) {
    if (auto r = s->offset_index_.reset(); !r) return r.err();
    if (auto r = s->time_index_.reset(); !r) return r.err();
    std::error_code ec;
    std::filesystem::remove(s->txn_index_path(), ec);
  } else if (std::filesystem::exists(s->txn_index_path())) {
    auto xi = transaction_index::open(s->txn_index_path());
    if (!xi) {
      // Rebuilt from the markers the log replays after its producer snapshot (older entries are lost).
      sluice::log::warn("storage: removing unreadable {}: {}", s->txn_index_path().string(), xi.err().message);
      std::error_code ec;
      std::filesystem::remove(s->txn_index_path(), ec);
    } else {
      s->txn_index_ = std::move(*xi);
    }
  }
  return s;
}

sluice::result<std::unique_ptr<segment>> segment::create(const std::filesystem::path& dir, int64_t base_offset,
                                                         int32_t index_interval_bytes, int64_t now_ms,
                                                         segment_suffix suffix) {
  return open_files(dir, base_offset, index_interval_bytes, now_ms, true, suffix);
}

sluice::result<std::unique_ptr<segment>> segment::open(const std::filesystem::path& dir, int64_t base_offset,
                                                       int32_t index_interval_bytes, int64_t now_ms,
                                                       segment_suffix suffix) {
  return open_files(dir, base_offset, index_interval_bytes, now_ms, false, suffix);
}

sluice::result<void> segment::pread_exact(uint8_t* buf, size_t n, int64_t position) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(file_->fd(), buf + done, n - done, static_cast<off_t>(position + done));
    if (r < 0 && errno == EINTR) continue;
    // A failed read fails the log dir (Kafka: an IOException while reading takes the dir offline).
    if (r < 0) return detail::io_failure("read", log_path());
    if (r == 0) return make_error(errc::corrupt_message, "unexpected end of " + log_path().string());
    done += static_cast<size_t>(r);
  }
  return {};
}

sluice::result<record_batch_header> segment::read_header(int64_t position) const {
  uint8_t buf[record_batch_header_size];
  if (position + record_batch_header_size > size_) {
    return make_error(errc::corrupt_message, "batch header past the end of " + log_path().string());
  }
  if (auto r = pread_exact(buf, sizeof buf, position); !r) return r.err();
  auto h = decode_record_batch_header(buf);
  if (h.batch_length < record_batch_header_size - log_overhead || position + h.size_bytes() > size_) {
    return make_error(errc::corrupt_message,
                      "bad batch length at position " + std::to_string(position) + " of " + log_path().string());
  }
  return h;
}

sluice::result<void> segment::account_batch(const record_batch_header& h, int64_t position) {
  if (first_batch_timestamp_ < 0 && position == 0) first_batch_timestamp_ = h.max_timestamp;
  if (h.max_timestamp > max_timestamp_) {
    max_timestamp_ = h.max_timestamp;
    offset_of_max_timestamp_ = h.last_offset();
  }
  next_offset_ = h.last_offset() + 1;
  sluice::result<void> status;
  // Kafka's rule: index the batch once more than index.interval.bytes were written since the last entry.
  // A batch that already has an entry (a scan resumed at an indexed position) is not indexed twice.
  const auto& entries = offset_index_.entries();
  if (bytes_since_last_index_entry_ > index_interval_bytes_ &&
      (entries.empty() || entries.back().position < position)) {
    status = offset_index_.append(h.last_offset(), position);
    if (status) status = time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_);
    bytes_since_last_index_entry_ = 0;
  }
  bytes_since_last_index_entry_ += h.size_bytes();
  return status;
}

sluice::result<void> segment::truncate_file(int64_t size) {
  // A truncation that fails leaves records the log no longer owns (a follower's diverging tail): fail the dir.
  if (::ftruncate(file_->fd(), static_cast<off_t>(size)) != 0) return detail::io_failure("truncate", log_path());
  size_ = size;
  return {};
}

sluice::result<int64_t> segment::recover(int64_t from_position) {
  struct stat st {};
  if (::fstat(file_->fd(), &st) != 0) return detail::io_error("fstat", log_path());
  size_ = st.st_size;

  // State at `from_position`: it is either 0 or the position of an offset index entry.
  const auto& entries = offset_index_.entries();
  auto at = std::find_if(entries.begin(), entries.end(),
                         [&](const offset_position& e) { return e.position == from_position; });
  if (from_position != 0 && at == entries.end()) from_position = 0;
  if (from_position == 0) {
    if (auto r = offset_index_.reset(); !r) return r.err();
    if (auto r = time_index_.reset(); !r) return r.err();
    first_batch_timestamp_ = -1;
  } else {
    const int64_t keep_through = at->offset;
    if (auto r = offset_index_.truncate_to(keep_through + 1); !r) return r.err();
    if (auto r = time_index_.truncate_to(keep_through + 1); !r) return r.err();
    if (first_batch_timestamp_ < 0) {
      if (auto h = read_header(0); h) first_batch_timestamp_ = h->max_timestamp;
    }
  }
  const auto last_time = time_index_.last_entry();
  max_timestamp_ = last_time.timestamp;
  offset_of_max_timestamp_ = last_time.timestamp >= 0 ? last_time.offset : -1;
  next_offset_ = base_offset_;
  bytes_since_last_index_entry_ = 0;

  detail::scan_reader reader(file_->fd(), size_);
  // A read that fails (EIO) is not a torn write: the bytes may all be there. Cutting the file there would
  // destroy acknowledged records, so the scan stops, the dir fails and nothing is truncated.
  auto unreadable = [&](int error, int64_t at) -> sluice::error {
    errno = error;
    return detail::io_failure("read at position " + std::to_string(at) + " of", log_path());
  };
  int64_t pos = from_position;
  std::string problem;
  while (pos < size_) {
    const int64_t remaining = size_ - pos;
    const uint8_t* hp = reader.get(pos, static_cast<size_t>(std::min<int64_t>(remaining, record_batch_header_size)));
    if (hp == nullptr && reader.error() != 0) return unreadable(reader.error(), pos);
    if (hp == nullptr || remaining < record_batch_header_size) {
      problem = "torn batch header";
      break;
    }
    auto parsed = parse_record_batch_header(std::span<const uint8_t>(hp, record_batch_header_size));
    const record_batch_header h = decode_record_batch_header(hp);
    if (!parsed && parsed.err().code == errc::unsupported_magic) {
      problem = "bad magic";
      break;
    }
    if (h.batch_length < record_batch_header_size - log_overhead || h.size_bytes() > remaining) {
      problem = "torn or bad batch length";
      break;
    }
    const uint8_t* bp = reader.get(pos, static_cast<size_t>(h.size_bytes()));
    if (bp == nullptr && reader.error() != 0) return unreadable(reader.error(), pos);
    if (bp == nullptr) {
      problem = "read failed";
      break;
    }
    const auto batch = std::span<const uint8_t>(bp, static_cast<size_t>(h.size_bytes()));
    if (compute_record_batch_crc(batch) != h.crc) {
      problem = "CRC32C mismatch";
      break;
    }
    if (h.base_offset < next_offset_ || h.last_offset_delta < 0 || h.last_offset() - base_offset_ > INT32_MAX) {
      problem = "offsets out of order";
      break;
    }
    if (auto r = account_batch(h, pos); !r) return r.err();
    pos += h.size_bytes();
  }
  const int64_t cut = size_ - pos;
  if (cut > 0) {
    sluice::log::warn("storage: {}: {} at position {}, truncating {} bytes (recovered up to offset {})",
                      log_path().string(), problem, pos, cut, next_offset_);
    if (auto r = truncate_file(pos); !r) return r.err();
    if (next_offset_ == base_offset_) {
      if (auto r = offset_index_.reset(); !r) return r.err();
      if (auto r = time_index_.reset(); !r) return r.err();
    }
  }
  // Aborted transactions whose markers were cut off (or never made it to the file) go too.
  if (txn_index_) {
    if (auto r = txn_index_->truncate_to(next_offset_); !r) return r.err();
  }
  return cut;
}

sluice::result<int64_t> segment::recover_from_offset(int64_t offset) {
  // The last index entry wholly below `offset` starts a batch that was flushed: resume from it.
  const auto& entries = offset_index_.entries();
  int64_t from = 0;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->offset < offset) {
      from = it->position;
      break;
    }
  }
  if (!offset_index_.sane(INT64_MAX) || !time_index_.sane()) from = 0;
  return recover(from);
}

sluice::result<void> segment::load(bool index_files_existed) {
  if (!index_files_existed || !offset_index_.sane(size_) || !time_index_.sane()) {
    sluice::log::info("storage: {}: index missing or invalid, rebuilding", log_path().string());
    auto r = recover(0);
    if (!r) return r.err();
    return {};
  }
  // Trusted data: walk headers only, from the last index entry, to learn the tail and fill in entries.
  const auto& entries = offset_index_.entries();
  const int64_t from = entries.empty() ? 0 : entries.back().position;
  const auto last_time = time_index_.last_entry();
  max_timestamp_ = last_time.timestamp;
  offset_of_max_timestamp_ = last_time.timestamp >= 0 ? last_time.offset : -1;
  next_offset_ = base_offset_;
  bytes_since_last_index_entry_ = 0;
  if (from > 0) {
    auto h0 = read_header(0);
    if (!h0 && h0.err().code == errc::io_error) return h0.err();
    if (!h0) return recover(0).ok() ? sluice::result<void>() : sluice::result<void>(h0.err());
    first_batch_timestamp_ = h0->max_timestamp;
  }
  int64_t pos = from;
  while (pos < size_) {
    auto h = read_header(pos);
    if (!h && h.err().code == errc::io_error) return h.err();
    if (!h || h->magic != record_batch_magic_v2 || h->base_offset < next_offset_) {
      sluice::log::warn("storage: {}: bad batch header at {}, running full recovery", log_path().string(), pos);
      auto r = recover(0);
      if (!r) return r.err();
      return {};
    }
    if (auto r = account_batch(*h, pos); !r) return r;
    pos += h->size_bytes();
  }
  return {};
}

sluice::result<void> segment::append(std::span<const uint8_t> batches) {
  const int64_t start = size_;
  size_t done = 0;
  while (done < batches.size()) {
    const ssize_t n = ::write(file_->fd(), batches.data() + done, batches.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // A full disk is cut back and answered (KAFKA_STORAGE_ERROR): appends work again once space returns. Any
      // other write error, or a cut-back that fails (a partial batch stays), fails the log dir.
      const bool full = errno == ENOSPC || errno == EDQUOT;
      auto err = detail::io_error("write", log_path());
      if (::ftruncate(file_->fd(), static_cast<off_t>(start)) != 0) {
        sluice::log::error("storage: {}: cannot cut back a failed write", log_path().string());
        report_log_dir_failure(log_path(), err.message + "; the write could not be cut back");
      } else if (!full) {
        report_log_dir_failure(log_path(), err.message);
      }
      return err;
    }
    done += static_cast<size_t>(n);
  }
  size_ = start + static_cast<int64_t>(batches.size());
  for (size_t pos = 0; pos < batches.size();) {
    const auto h = decode_record_batch_header(batches.data() + pos);
    if (auto r = account_batch(h, start + static_cast<int64_t>(pos)); !r) {
      // The .log is the truth; a missing index entry only costs a longer scan and is rebuilt on recovery.
      sluice::log::warn("storage: {}: index append failed: {}", log_path().string(), r.err().message);
    }
    pos += static_cast<size_t>(h.size_bytes());
  }
  return {};
}

sluice::result<std::optional<batch_position>> segment::find_batch(int64_t offset) const {
  if (offset >= next_offset_) return std::optional<batch_position>();
  int64_t pos = offset_index_.lookup(offset).position;
  while (pos < size_) {
    auto h = read_header(pos);
    if (!h) return h.err();
    if (h->last_offset() >= offset) return std::optional<batch_position>(batch_position{*h, pos});
    pos += h->size_bytes();
  }
  return std::optional<batch_position>();
}

std::filesystem::path segment::txn_index_path() const { return file_path(".txnindex"); }

sluice::result<void> segment::for_each_batch_header(int64_t from_offset,
                                                    const std::function<void(const record_batch_header&)>& fn) const {
  return for_each_batch_header(from_offset, [&](const record_batch_header& h, int64_t) { fn(h); });
}

sluice::result<std::vector<uint8_t>> segment::read_batch(int64_t position, int64_t size) const {
  std::vector<uint8_t> out(static_cast<size_t>(size));
  if (auto r = pread_exact(out.data(), out.size(), position); !r) return r.err();
  return out;
}

sluice::result<void> segment::append_aborted(const aborted_txn& txn) {
  if (!txn_index_) {
    auto xi = transaction_index::open(txn_index_path());
    if (!xi) return xi.err();
    txn_index_ = std::move(*xi);
  }
  return txn_index_->append(txn);
}

bool segment::collect_aborted(int64_t fetch_offset, int64_t upper_bound, std::vector<aborted_txn>& out) const {
  return txn_index_ && txn_index_->collect_aborted(fetch_offset, upper_bound, out);
}

int64_t segment::last_aborted_offset() const {
  return txn_index_ && !txn_index_->entries().empty() ? txn_index_->entries().back().last_offset : -1;
}

sluice::result<void> segment::for_each_batch_header(
    int64_t from_offset, const std::function<void(const record_batch_header&, int64_t position)>& fn) const {
  auto first = find_batch(from_offset);
  if (!first) return first.err();
  if (!first.value()) return {};
  for (int64_t pos = first.value()->position; pos < size_;) {
    auto h = read_header(pos);
    if (!h) return h.err();
    fn(*h, pos);
    pos += h->size_bytes();
  }
  return {};
}

sluice::result<std::optional<read_result>> segment::read(int64_t offset, int32_t max_bytes, int64_t max_offset,
                                                         bool min_one_batch) const {
  auto first = find_batch(offset);
  if (!first) return first.err();
  if (!first.value()) return std::optional<read_result>();
  const batch_position& fb = *first.value();
  read_result out;
  if (fb.header.base_offset >= max_offset) return std::optional<read_result>(out);

  const int64_t start = fb.position;
  const int64_t byte_limit = start + std::max<int32_t>(max_bytes, 0);
  // Every batch before an index entry whose position <= byte_limit and offset < max_offset is included:
  // jump to the last such entry, then walk headers (at most about index.interval.bytes of batches).
  const auto& entries = offset_index_.entries();
  auto it = std::partition_point(entries.begin(), entries.end(), [&](const offset_position& e) {
    return e.position <= byte_limit && e.offset < max_offset;
  });
  int64_t end = start;
  if (it != entries.begin() && std::prev(it)->position > start) end = std::prev(it)->position;
  while (end < size_) {
    auto h = read_header(end);
    if (!h) return h.err();
    if (h->base_offset >= max_offset || end + h->size_bytes() > byte_limit) break;
    end += h->size_bytes();
  }
  if (end == start && min_one_batch) end = start + fb.header.size_bytes();  // KIP-74: first batch whole
  if (end > start) {
    out.region = sluice::file_region{file_, start, end - start};
    out.first_offset = fb.header.base_offset;
  }
  return std::optional<read_result>(out);
}

sluice::result<std::optional<batch_position>> segment::find_batch_by_timestamp(int64_t timestamp) const {
  if (max_timestamp_ < timestamp) return std::optional<batch_position>();
  const auto t = time_index_.lookup(timestamp);
  int64_t pos = t.timestamp < 0 ? 0 : offset_index_.lookup(t.offset).position;
  while (pos < size_) {
    auto h = read_header(pos);
    if (!h) return h.err();
    if (h->max_timestamp >= timestamp) return std::optional<batch_position>(batch_position{*h, pos});
    pos += h->size_bytes();
  }
  return std::optional<batch_position>();
}

sluice::result<void> segment::truncate_to(int64_t offset) {
  auto found = find_batch(offset);
  if (!found) return found.err();
  if (!found.value()) return {};
  const auto& fb = *found.value();
  if (auto r = offset_index_.truncate_to(fb.header.base_offset); !r) return r;
  if (auto r = time_index_.truncate_to(fb.header.base_offset); !r) return r;
  if (txn_index_) {
    if (auto r = txn_index_->truncate_to(fb.header.base_offset); !r) return r;
  }
  if (auto r = truncate_file(fb.position); !r) return r;
  if (fb.position == 0) first_batch_timestamp_ = -1;
  return load(true);
}

sluice::result<void> segment::on_become_inactive() {
  if (auto r = become_inactive_without_sync(); !r) return r.err();
  return flush();
}

sluice::result<segment_sync_target> segment::become_inactive_without_sync() {
  if (max_timestamp_ >= 0) {
    if (auto r = time_index_.maybe_append(max_timestamp_, offset_of_max_timestamp_); !r) return r.err();
  }
  if (auto r = write_indexes(); !r) return r.err();
  segment_sync_target target{file_, log_path(), {file_path(".index"), file_path(".timeindex")}, std::nullopt};
  if (txn_index_) target.paths.push_back(txn_index_->path());
  return target;
}

namespace {

// fdatasync(fd), timed as Kafka's kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs (the JMX exporter's name).
sluice::result<void> timed_fdatasync(int fd, const std::filesystem::path& path) {
  static metrics::histogram& flush_ms = metrics::process_registry().histogram(
      "kafka_log_logflushstats_logflushrateandtimems", "Time of one segment fsync (fdatasync), ms", {},
      metrics::latency_ms_buckets());
  const bool timed = metrics::enabled();
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (::fdatasync(fd) != 0) return detail::io_failure("fsync", path);
  if (timed) flush_ms.observe(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return {};
}

}  // namespace

sluice::result<void> segment_sync_target::sync() const {
  if (file) {
    if (auto r = timed_fdatasync(file->fd(), log_path); !r) return r;
  }
  for (const auto& p : paths) {
    if (auto r = detail::fsync_path_if_exists(p); !r) return r;
  }
  if (directory) return detail::fsync_path_if_exists(*directory);
  return {};
}

sluice::result<void> segment::flush() {
  if (file_) {
    if (auto r = timed_fdatasync(file_->fd(), log_path()); !r) return r;
  }
  if (auto r = offset_index_.flush(); !r) return r;
  if (txn_index_) {
    if (auto r = txn_index_->flush(); !r) return r;
  }
  return time_index_.flush();
}

sluice::result<void> segment::write_indexes() {
  if (auto r = offset_index_.write_pending(); !r) return r;
  return time_index_.write_pending();
}

void segment::close() {
  offset_index_.close();
  time_index_.close();
  if (txn_index_) txn_index_->close();
  file_.reset();
}

sluice::result<void> segment::remove_files() {
  const auto log_file = log_path();
  close();
  std::error_code ec;
  for (const char* extension : {".index", ".timeindex", ".txnindex"}) std::filesystem::remove(file_path(extension), ec);
  if (!std::filesystem::remove(log_file, ec) && ec) {
    return make_error(errc::io_error, "remove " + log_file.string() + ": " + ec.message());
  }
  return {};
}

}  // namespace sluice::storage

namespace sluice::storage {

namespace {

// The first record of the one whole batch `batch` (header `h`) whose timestamp >= `timestamp` and offset >=
// `starting_offset`, in offset order, or -1. A compressed batch is decompressed here (bounded by
// max_decompressed_batch_bytes); its records then go through the same walk as an uncompressed batch's.
sluice::result<int64_t> first_record_at_or_after(std::span<const uint8_t> batch, const record_batch_header& h,
                                                 int64_t timestamp, int64_t starting_offset,
                                                 int64_t* found_timestamp) {
  const auto payload = batch.subspan(record_batch_header_size, static_cast<size_t>(h.size_bytes()) - record_batch_header_size);
  std::vector<uint8_t> decompressed;
  std::span<const uint8_t> records = payload;
  if (h.compression() != compression_codec::none) {
    auto d = decompress(h.compression(), payload);
    if (!d) return d.err();
    decompressed = std::move(d.value());
    records = decompressed;
  }
  auto it = record_iterator::over_records(h, records);
  record_view rec;
  while (it.next(rec)) {
    if (rec.timestamp >= timestamp && rec.offset >= starting_offset) {
      if (found_timestamp) *found_timestamp = rec.timestamp;
      return rec.offset;
    }
  }
  if (it.error()) return *it.error();
  return int64_t{-1};
}

}  // namespace

sluice::result<int64_t> segment::offset_for_timestamp(int64_t timestamp, int64_t starting_offset,
                                                      int64_t* found_timestamp) const {
  if (max_timestamp_ < timestamp || starting_offset >= next_offset_) return int64_t{-1};
  const auto t = time_index_.lookup(timestamp);
  int64_t pos = t.timestamp < 0 ? 0 : offset_index_.lookup(t.offset).position;
  if (starting_offset > base_offset_) {
    auto sp = find_batch(starting_offset);
    if (!sp) return sp.err();
    if (!sp.value()) return int64_t{-1};
    pos = std::max(pos, sp.value()->position);
  }
  // Kafka's FileRecords.searchForTimestamp: the batches from that position; in each batch whose max
  // timestamp reaches the target, its records in offset order (a compressed batch is decompressed, one
  // batch at a time), and the first record with timestamp >= target and offset >= starting_offset wins.
  // Timestamps may go backwards inside a batch: the answer is the first in offset order, not the smallest.
  std::vector<uint8_t> bytes;
  while (pos < size_) {
    auto h = read_header(pos);
    if (!h) return h.err();
    if (h->max_timestamp >= timestamp && h->last_offset() >= starting_offset) {
      if (h->ts_type() == timestamp_type::log_append_time) {
        // Every record of a LogAppendTime batch reads as the batch's max timestamp (Kafka's
        // DefaultRecordBatch), so its first record >= starting_offset is the answer: no need to decompress
        // (stored batches have the offset deltas 0..n-1: the log renumbers any other).
        if (found_timestamp) *found_timestamp = h->max_timestamp;
        return std::max(h->base_offset, starting_offset);
      }
      bytes.resize(static_cast<size_t>(h->size_bytes()));
      if (auto r = pread_exact(bytes.data(), bytes.size(), pos); !r) return r.err();
      auto found = first_record_at_or_after(bytes, *h, timestamp, starting_offset, found_timestamp);
      if (!found) return found.err();
      if (found.value() >= 0) return found;
    }
    pos += h->size_bytes();
  }
  return int64_t{-1};
}

}  // namespace sluice::storage
