#include "broker/http/admin_kafka.h"

#include <openssl/evp.h>

#include "broker/handlers/handlers.h"
#include "broker/partition.h"
#include "broker/topic_registry.h"

namespace sluice::broker::http {

using protocol::error_code;

unsigned http_status_of(error_code e) {
  switch (e) {
    case error_code::none:
      return 200;
    case error_code::unknown_topic_or_partition:
    case error_code::unknown_topic_id:
    case error_code::group_id_not_found:
    case error_code::resource_not_found:
    case error_code::transactional_id_not_found:
      return 404;
    case error_code::topic_already_exists:
    case error_code::non_empty_group:
    case error_code::rebalance_in_progress:
    case error_code::unknown_member_id:
    case error_code::illegal_generation:
    case error_code::reassignment_in_progress:
    case error_code::duplicate_resource:
      return 409;
    case error_code::topic_authorization_failed:
    case error_code::group_authorization_failed:
    case error_code::cluster_authorization_failed:
    case error_code::transactional_id_authorization_failed:
    case error_code::topic_deletion_disabled:
      return 403;
    case error_code::not_leader_or_follower:
    case error_code::not_coordinator:
      return 421;
    case error_code::leader_not_available:
    case error_code::coordinator_load_in_progress:
    case error_code::coordinator_not_available:
    case error_code::not_controller:
    case error_code::not_enough_replicas:
    case error_code::not_enough_replicas_after_append:
    case error_code::broker_not_available:
    case error_code::replica_not_available:
    case error_code::preferred_leader_not_available:
    case error_code::throttling_quota_exceeded:
      return 503;
    case error_code::request_timed_out:
      return 504;
    case error_code::unknown_server_error:
    case error_code::kafka_storage_error:
    case error_code::log_dir_not_found:
      return 500;
    default:
      return 400;
  }
}

reply kafka_error_reply(error_code e, std::string_view message) {
  const std::string_view name = protocol::error_name(e);
  return json_reply(http_status_of(e), json::object{{"error", name},
                                                    {"error_code", static_cast<int>(e)},
                                                    {"message", message.empty() ? name : message}});
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// %XX decoding ('+' stays '+': paths and our query values never use form encoding). `ok` becomes false for a
/// '%' not followed by two hex digits.
std::string percent_decode(std::string_view s, bool* ok = nullptr) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const int hi = i + 1 < s.size() ? hex_digit(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
      if (ok) *ok = false;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::string leader_hint(broker_services& svc, const std::string& topic, int32_t partition) {
  if (svc.replicas == nullptr) return {};
  const auto snapshot = svc.cluster.snapshot();
  if (!snapshot) return {};
  const auto* st = snapshot->state(topic, partition);
  if (!st || st->leader < 0) return " (no leader now)";
  std::string where = " (led by broker " + std::to_string(st->leader);
  if (auto b = snapshot->brokers.find(st->leader); b != snapshot->brokers.end())
    where += " at " + b->second.host + ":" + std::to_string(b->second.port);
  return where + ": ask its HTTP side)";
}

boost::asio::awaitable<std::map<topic_partition, listed_offset>> list_offsets(kafka_caller& kc, const std::set<topic_partition>& which,
                                                                              int64_t timestamp, int8_t isolation) {
  protocol::list_offsets_request lo;
  lo.replica_id = -1;
  lo.isolation_level = isolation;
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& [t, p] : which) by_topic[t].push_back(p);
  for (const auto& [t, ps] : by_topic) {
    auto& lt = lo.topics.emplace_back();
    lt.name = t;
    for (int32_t p : ps) {
      auto& lp = lt.partitions.emplace_back();
      lp.partition_index = p;
      lp.timestamp = timestamp;
    }
  }
  std::map<topic_partition, listed_offset> out;
  if (lo.topics.empty()) co_return out;
  auto op = kc.call(&handlers::list_offsets, lo, 8);
  auto resp = co_await std::move(op);
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) out[{t.name, p.partition_index}] = {p.error_code, p.offset};
  if (isolation == 0 && (timestamp == -1 || timestamp == -2))
    for (auto& [tp, listed] : out) {
      if (listed.error != error_code::not_leader_or_follower) continue;
      auto t = kc.services().topics.find(tp.first);
      if (!t || tp.second < 0 || tp.second >= static_cast<int32_t>(t->partitions.size())) continue;
      const auto& replica = t->partitions[static_cast<size_t>(tp.second)];
      if (!replica) continue;
      listed = {error_code::none, timestamp == -1 ? replica->high_watermark() : replica->log_start_offset()};
    }
  co_return out;
}

target_parts split_target(std::string_view target) {
  target_parts out;
  std::string_view path = target, query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const size_t end = std::min(path.find('/', i), path.size());
    bool ok = true;
    out.segments.push_back(percent_decode(path.substr(i, end - i), &ok));
    if (!ok || !valid_utf8(out.segments.back())) out.valid = false;
    i = end;
  }
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view item = query.substr(0, amp);
    if (!item.empty()) {
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) out.query.emplace_back(percent_decode(item), "");
      else out.query.emplace_back(percent_decode(item.substr(0, eq)), percent_decode(item.substr(eq + 1)));
    }
    query = amp < query.size() ? query.substr(amp + 1) : std::string_view{};
  }
  return out;
}

std::optional<json::object> parse_object(std::string_view body, reply& error) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    error = error_reply(400, "INVALID_REQUEST", "the body must be a JSON object");
    return std::nullopt;
  }
  return std::move(v.as_object());
}

std::string sanitize_utf8(std::string s) {
  if (valid_utf8(s)) return s;
  std::string out;
  out.reserve(s.size() + 16);
  size_t i = 0;
  while (i < s.size()) {
    // The longest valid sequence starting here (1..4 bytes), else one byte replaced.
    size_t len = 0;
    for (size_t n = 1; n <= 4 && i + n <= s.size(); ++n)
      if (valid_utf8(std::string_view(s).substr(i, n))) {
        len = n;
        break;
      }
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values beyond U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

json::value bytes_json(std::string_view bytes, std::string_view encoding, std::string& used) {
  if (encoding == "hex") {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
    used = "hex";
    return json::string(out);
  }
  if (encoding != "base64" && valid_utf8(bytes)) {
    used = "utf8";
    return json::string(bytes);
  }
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  used = "base64";
  return json::string(out);
}

std::optional<std::string> bytes_from(std::string_view text, std::string_view encoding) {
  if (encoding == "utf8" || encoding.empty()) return std::string(text);
  if (encoding == "hex") {
    if (text.size() % 2 != 0) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < text.size(); i += 2) {
      const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
    }
    return out;
  }
  if (encoding != "base64" || text.size() % 4 != 0) return std::nullopt;
  // Strict RFC 4648: the alphabet, and '=' only as the last one or two characters (EVP_DecodeBlock takes more).
  const size_t pads = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  for (size_t i = 0; i < text.size() - pads; ++i) {
    const char c = text[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
      return std::nullopt;
  }
  if (pads > 0 && text.size() < 4) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') ++pad;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace sluice::broker::http
