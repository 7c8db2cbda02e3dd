#include "broker/fetch_session_cache.h"

#include <climits>
#include <random>

namespace sluice::broker {

using protocol::error_code;

fetch_session_partition_key fetch_session_key(bool uses_topic_ids, const protocol::uuid& topic_id,
                                                  const std::string& topic, int32_t partition) {
  if (uses_topic_ids) return {std::string(topic_id.bytes.begin(), topic_id.bytes.end()), partition};
  return {topic, partition};
}

int32_t next_fetch_session_epoch(int32_t epoch) { return epoch < 0 || epoch == INT32_MAX ? 1 : epoch + 1; }

cached_fetch_partition cached_from_request(const protocol::fetch_request::fetch_topic& ft,
                                           const protocol::fetch_request::fetch_partition& fp) {
  cached_fetch_partition c;
  c.topic = ft.topic;
  c.topic_id = ft.topic_id;
  c.partition = fp.partition;
  c.max_bytes = fp.partition_max_bytes;
  c.fetch_offset = fp.fetch_offset;
  c.fetcher_log_start_offset = fp.log_start_offset;
  c.current_leader_epoch = fp.current_leader_epoch;
  c.last_fetched_epoch = fp.last_fetched_epoch;
  return c;
}

fetch_session_cache::fetch_session_cache(sluice::clock& clock, int32_t max_slots, int64_t eviction_ms)
    : clock_(clock), max_slots_(max_slots), eviction_ms_(eviction_ms), rng_state_(std::random_device{}()) {}

int32_t fetch_session_cache::new_id() {
  for (;;) {
    // splitmix64: ids are positive, unique among cached sessions, and not guessable from one another.
    uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const auto id = static_cast<int32_t>(z & 0x7fffffff);
    if (id != 0 && !sessions_.contains(id)) return id;
  }
}

void fetch_session_cache::touch(entry& e, int64_t now) {
  auto& s = *e.session;
  last_used_.erase({s.last_used_ms, s.id});
  s.last_used_ms = now;
  last_used_.insert({now, s.id});
  if (e.cached_size >= 0) {
    const evictable_key old{s.privileged, e.cached_size, s.id};
    evictable_by_all_.erase(old);
    evictable_by_privileged_.erase(old);
    partitions_ -= e.cached_size;
  }
  e.cached_size = static_cast<int64_t>(s.partitions.size());
  const evictable_key key{s.privileged, e.cached_size, s.id};
  const bool old_enough = now - s.creation_ms > eviction_ms_;
  if (!s.privileged || old_enough) evictable_by_privileged_.insert(key);
  if (old_enough) evictable_by_all_.insert(key);
  partitions_ += e.cached_size;
}

void fetch_session_cache::erase(std::map<int32_t, entry>::iterator it) {
  auto& s = *it->second.session;
  last_used_.erase({s.last_used_ms, s.id});
  if (it->second.cached_size >= 0) {
    const evictable_key key{s.privileged, it->second.cached_size, s.id};
    evictable_by_all_.erase(key);
    evictable_by_privileged_.erase(key);
    partitions_ -= it->second.cached_size;
  }
  sessions_.erase(it);
}

bool fetch_session_cache::try_evict(bool privileged, int64_t size, int64_t now) {
  if (last_used_.empty()) return false;
  const auto oldest = *last_used_.begin();
  if (now - oldest.last_used_ms > eviction_ms_) {  // stale: anyone may take its slot
    erase(sessions_.find(oldest.id));
    ++evictions_;
    return true;
  }
  auto& candidates = privileged ? evictable_by_privileged_ : evictable_by_all_;
  if (candidates.empty()) return false;
  const evictable_key least = *candidates.begin();
  // Kafka compares the new entry's key (privileged, size, id 0) with the least valuable evictable one.
  if (evictable_key{privileged, size, 0} < least) return false;
  erase(sessions_.find(least.id));
  ++evictions_;
  return true;
}

int32_t fetch_session_cache::maybe_create(bool privileged, bool uses_topic_ids,
                                          std::vector<cached_fetch_partition> partitions) {
  std::lock_guard lock(mutex_);
  const int64_t now = clock_.monotonic_ms();
  if (max_slots_ <= 0) return 0;
  if (static_cast<int64_t>(sessions_.size()) >= max_slots_ &&
      !try_evict(privileged, static_cast<int64_t>(partitions.size()), now))
    return 0;
  auto s = std::make_shared<fetch_session>();
  s->id = new_id();
  s->privileged = privileged;
  s->uses_topic_ids = uses_topic_ids;
  s->creation_ms = now;
  s->last_used_ms = now;
  s->epoch = next_fetch_session_epoch(0);
  for (auto& p : partitions) {
    auto key = fetch_session_key(uses_topic_ids, p.topic_id, p.topic, p.partition);
    if (s->index.contains(key)) continue;
    s->partitions.push_back(std::move(p));
    s->index.emplace(std::move(key), std::prev(s->partitions.end()));
  }
  auto [it, inserted] = sessions_.emplace(s->id, entry{s, -1});
  touch(it->second, now);  // indexes it by last use and evictability
  return s->id;
}

bool fetch_session_cache::remove(int32_t session_id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return false;
  erase(it);
  return true;
}

fetch_session_cache::incremental fetch_session_cache::begin_incremental(
    int32_t session_id, int32_t epoch, bool uses_topic_ids,
    const std::vector<protocol::fetch_request::fetch_topic>& topics,
    const std::vector<protocol::fetch_request::forgotten_topic>& forgotten,
    const std::function<std::string(const protocol::uuid&)>& name_of) {
  incremental out;
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) {
    out.error = error_code::fetch_session_id_not_found;
    return out;
  }
  auto& s = *it->second.session;
  if (s.epoch != epoch) {
    out.error = error_code::invalid_fetch_session_epoch;
    return out;
  }
  if (s.uses_topic_ids != uses_topic_ids) {
    out.error = error_code::fetch_session_topic_id_error;
    return out;
  }
  for (const auto& ft : topics) {
    for (const auto& fp : ft.partitions) {
      auto key = fetch_session_key(uses_topic_ids, ft.topic_id, ft.topic, fp.partition);
      if (auto found = s.index.find(key); found != s.index.end()) {
        // Kafka's updateRequestParams: the request's parameters, the last answered offsets kept.
        auto& c = *found->second;
        const int64_t hw = c.high_watermark, start = c.local_log_start_offset;
        std::string name = std::move(c.topic);
        c = cached_from_request(ft, fp);
        c.high_watermark = hw;
        c.local_log_start_offset = start;
        if (uses_topic_ids) c.topic = std::move(name);
      } else {
        s.partitions.push_back(cached_from_request(ft, fp));
        s.index.emplace(std::move(key), std::prev(s.partitions.end()));
      }
    }
  }
  for (const auto& ft : forgotten) {
    for (int32_t p : ft.partitions) {
      auto found = s.index.find(fetch_session_key(uses_topic_ids, ft.topic_id, ft.topic, p));
      if (found == s.index.end()) continue;
      s.partitions.erase(found->second);
      s.index.erase(found);
    }
  }
  if (s.partitions.empty()) {  // nothing left to fetch: the session ends (Kafka: sessionless context)
    erase(it);
    out.closed = true;
    return out;
  }
  touch(it->second, clock_.monotonic_ms());
  s.epoch = next_fetch_session_epoch(s.epoch);
  out.session = it->second.session;
  out.expected_epoch = s.epoch;
  for (auto& c : s.partitions) {
    if (s.uses_topic_ids && c.topic.empty() && name_of) c.topic = name_of(c.topic_id);
    const bool same_topic = !out.topics.empty() && (uses_topic_ids ? out.topics.back().topic_id == c.topic_id
                                                                    : out.topics.back().topic == c.topic);
    if (!same_topic) {
      protocol::fetch_request::fetch_topic ft;
      ft.topic = c.topic;
      ft.topic_id = c.topic_id;
      out.topics.push_back(std::move(ft));
    }
    protocol::fetch_request::fetch_partition fp;
    fp.partition = c.partition;
    fp.partition_max_bytes = c.max_bytes;
    fp.fetch_offset = c.fetch_offset;
    fp.log_start_offset = c.fetcher_log_start_offset;
    fp.current_leader_epoch = c.current_leader_epoch;
    fp.last_fetched_epoch = c.last_fetched_epoch;
    out.topics.back().partitions.push_back(fp);
    out.last_answered.push_back({c.high_watermark, c.local_log_start_offset});
  }
  return out;
}

void fetch_session_cache::finish(const incremental& inc, protocol::fetch_response& resp) {
  std::lock_guard lock(mutex_);
  auto& s = *inc.session;
  resp.session_id = s.id;
  if (s.epoch != inc.expected_epoch) {  // another request of this session came in meanwhile (a duplicate)
    resp.error_code = error_code::invalid_fetch_session_epoch;
    resp.responses.clear();
    return;
  }
  std::vector<std::list<cached_fetch_partition>::iterator> to_back;
  for (auto& tr : resp.responses) {
    std::erase_if(tr.partitions, [&](const protocol::fetch_response::partition_data& pd) {
      auto found = s.index.find(fetch_session_key(s.uses_topic_ids, tr.topic_id, tr.topic, pd.partition_index));
      if (found == s.index.end()) return false;  // not cached (cannot happen while the epoch matches): answer it
      auto& c = *found->second;
      const bool has_records = pd.records_ && pd.records_->size() > 0;
      bool must = has_records;
      if (c.high_watermark != pd.high_watermark) {
        must = true;
        c.high_watermark = pd.high_watermark;
      }
      if (c.local_log_start_offset != pd.log_start_offset) {
        must = true;
        c.local_log_start_offset = pd.log_start_offset;
      }
      if (pd.preferred_read_replica >= 0) must = true;
      if (pd.error_code != error_code::none) {
        c.high_watermark = -1;
        must = true;
      }
      if (pd.diverging_epoch.epoch >= 0) must = true;
      if (has_records) to_back.push_back(found->second);
      return !must;
    });
  }
  std::erase_if(resp.responses, [](const auto& tr) { return tr.partitions.empty(); });
  for (auto pos : to_back) s.partitions.splice(s.partitions.end(), s.partitions, pos);  // iterators stay valid
}

int64_t fetch_session_cache::size() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(sessions_.size());
}

int64_t fetch_session_cache::total_partitions() const {
  std::lock_guard lock(mutex_);
  return partitions_;
}

int64_t fetch_session_cache::evictions() const {
  std::lock_guard lock(mutex_);
  return evictions_;
}

}  // namespace sluice::broker
