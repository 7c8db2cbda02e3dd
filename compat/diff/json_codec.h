#pragma once
// json_codec: generated message structs <-> JSON, walking protocol/messages/fields.h (generated field
// lists), so that no API needs code of its own. to_json() lists the fields on the wire at a version
// (error codes as Kafka names, uuids in Kafka's base64 text, records as described batches, bytes as
// hex); from_json() fills a request from a scenario's object, whose keys are member names
// (lower_snake_case) or Kafka field names; fields the object does not name keep their defaults.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/json.hpp>

#include "compat/diff/record_batch.h"
#include "protocol/messages/fields.h"

namespace sluice::diff {

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

std::string to_hex(const uint8_t* data, size_t n);
std::vector<uint8_t> from_hex(std::string_view text);

/// What from_json needs beyond the JSON: the base of relative timestamps in record specs, and the
/// buffers that keep built record batches alive until the request is encoded.
struct build_context {
  int64_t base_ms = 0;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> keep;
};

template <typename T>
boost::json::value to_json(const T& x, int16_t version) {
  if constexpr (protocol::has_field_list<T>) {
    boost::json::object o;
    protocol::field_list<T>::each(x, [&](const auto& member, const protocol::field_info& info) {
      if (info.present(version)) o[info.name] = to_json(member, version);
    });
    if constexpr (requires { x.unknown_tagged_fields; }) {
      if (!x.unknown_tagged_fields.empty()) {
        boost::json::array tags;
        for (const auto& t : x.unknown_tagged_fields) tags.push_back(static_cast<int64_t>(t.tag));
        o["_unknown_tags"] = std::move(tags);
      }
    }
    return o;
  } else if constexpr (is_optional<T>::value) {
    if (!x) return nullptr;
    return to_json(*x, version);
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    return boost::json::string(to_hex(x.data(), x.size()));
  } else if constexpr (is_vector<T>::value) {
    boost::json::array a;
    for (const auto& e : x) a.push_back(to_json(e, version));
    return a;
  } else if constexpr (std::is_same_v<T, protocol::error_code>) {
    return boost::json::string(protocol::error_name(x));
  } else if constexpr (std::is_same_v<T, protocol::uuid>) {
    return boost::json::string(x.to_string());
  } else if constexpr (std::is_same_v<T, protocol::records>) {
    return describe_batches(x.bytes);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return boost::json::string(x);
  } else if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else if constexpr (std::is_same_v<T, double>) {
    return x;
  } else {
    static_assert(std::is_integral_v<T>, "unhandled field type");
    return static_cast<int64_t>(x);
  }
}

/// Finds the value for a field: by member name, then by Kafka name; nullptr when absent.
const boost::json::value* find_field(const boost::json::object& o, const protocol::field_info& info);

template <typename T>
void from_json(T& x, const boost::json::value& v, int16_t version, build_context& ctx) {
  if constexpr (protocol::has_field_list<T>) {
    const auto& o = v.as_object();
    protocol::field_list<T>::each(x, [&](auto& member, const protocol::field_info& info) {
      if (const boost::json::value* fv = find_field(o, info)) from_json(member, *fv, version, ctx);
    });
  } else if constexpr (is_optional<T>::value) {
    if (v.is_null()) {
      x.reset();
    } else {
      from_json(x.emplace(), v, version, ctx);
    }
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    x = from_hex(v.as_string());
  } else if constexpr (is_vector<T>::value) {
    x.clear();
    for (const auto& e : v.as_array()) from_json(x.emplace_back(), e, version, ctx);
  } else if constexpr (std::is_same_v<T, protocol::error_code>) {
    x = static_cast<protocol::error_code>(v.to_number<int16_t>());
  } else if constexpr (std::is_same_v<T, protocol::uuid>) {
    if (v.is_string() && v.as_string() == "zero") {
      x = protocol::uuid{};
    } else {
      auto u = protocol::uuid::from_string(v.as_string());
      if (!u) throw std::runtime_error("bad uuid '" + std::string(v.as_string()) + "'");
      x = *u;
    }
  } else if constexpr (std::is_same_v<T, protocol::records>) {
    auto buf = std::make_shared<std::vector<uint8_t>>(
        v.is_string() ? from_hex(v.as_string()) : build_batches(v.as_object(), ctx.base_ms));
    ctx.keep.push_back(buf);
    x = protocol::records::from_memory(*buf, buf);
  } else if constexpr (std::is_same_v<T, std::string>) {
    x = std::string(v.as_string());
  } else if constexpr (std::is_same_v<T, bool>) {
    x = v.as_bool();
  } else if constexpr (std::is_same_v<T, double>) {
    x = v.to_number<double>();
  } else {
    static_assert(std::is_integral_v<T>, "unhandled field type");
    x = v.to_number<T>();
  }
}

}  // namespace sluice::diff
