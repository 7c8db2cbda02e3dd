#include "compat/diff/broker_client.h"

#include "protocol/header.h"
#include "protocol/messages/all.h"

namespace sluice::diff {

bool broker_client::discover(std::string& error) {
  build_context ctx;
  boost::json::object req{{"client_software_name", "sluice-diff"}, {"client_software_version", "1"}};
  exchange_result r = call(static_cast<int16_t>(protocol::api_key::api_versions), 3, req, ctx, 10000);
  if (r.how != outcome::response || !r.decode_error.empty()) {
    error = std::string(outcome_name(r.how)) + " " + r.decode_error;
    return false;
  }
  for (const auto& k : r.body.at("api_keys").as_array()) {
    const auto& o = k.as_object();
    advertised_[static_cast<int16_t>(o.at("api_key").as_int64())] = {
        static_cast<int16_t>(o.at("min_version").as_int64()), static_cast<int16_t>(o.at("max_version").as_int64())};
  }
  return true;
}

exchange_result broker_client::call(int16_t api_key, int16_t version, const boost::json::value& request,
                                    build_context& ctx, int timeout_ms, const frame_edit& edit) {
  exchange_result res;
  std::vector<uint8_t> frame;
  const int32_t corr = correlation_++;
  bool found = protocol::visit_request_type(api_key, [&](auto tag) {
    using req_t = typename decltype(tag)::type;
    req_t req;
    from_json(req, request, version, ctx);
    if constexpr (std::is_same_v<req_t, protocol::produce_request>) res.no_response_expected = req.acks == 0;
    protocol::encoded_frame f = protocol::encode_request(corr, version, std::string("sluice-diff"), req);
    frame = std::move(f.bytes);
  });
  if (!found) throw std::runtime_error("no request definition for api key " + std::to_string(api_key));
  if (edit.truncate > 0 || !edit.append_hex.empty()) {
    const auto extra = from_hex(edit.append_hex);
    frame.insert(frame.end(), extra.begin(), extra.end());
    const size_t cut = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(edit.truncate, 0)), frame.size() - 4);
    frame.resize(frame.size() - cut);
    const uint32_t body = static_cast<uint32_t>(frame.size() - 4);
    for (int i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(body >> (24 - 8 * i));
  }
  if (!conn_.send(frame)) {
    res.how = outcome::connect_failed;
    return res;
  }
  if (res.no_response_expected) {
    // acks=0: no response. A round trip of ApiVersions v0 on the same connection shows whether the broker
    // kept the connection (it closes it after a failed acks=0 produce, as Kafka does).
    build_context c2;
    exchange_result probe = call(static_cast<int16_t>(protocol::api_key::api_versions), 0, boost::json::object{}, c2,
                                 timeout_ms);
    res.how = probe.how;
    res.body = nullptr;
    return res;
  }
  std::vector<uint8_t> body;
  res.how = conn_.receive(body, timeout_ms);
  if (res.how != outcome::response) return res;
  protocol::reader r(body);
  const int16_t hv = protocol::response_header_version(api_key, version);
  int32_t got_corr = 0;
  if (!protocol::decode_response_header(r, hv, got_corr)) {
    res.decode_error = "bad response header";
    return res;
  }
  if (got_corr != corr) res.decode_error = "correlation id " + std::to_string(got_corr) + " != " + std::to_string(corr);
  int16_t body_version = version;
  if (api_key == static_cast<int16_t>(protocol::api_key::api_versions) && r.remaining() >= 2 &&
      body[r.position()] == 0 && body[r.position() + 1] == 35)
    body_version = 0;  // UNSUPPORTED_VERSION: answered in v0 (KIP-511)
  res.body_version = body_version;
  protocol::visit_response_type(api_key, [&](auto tag) {
    using resp_t = typename decltype(tag)::type;
    resp_t resp;
    resp.decode(r, body_version);
    if (!r.ok()) {
      res.decode_error = r.error_message();
      return;
    }
    if (r.remaining() != 0) res.decode_error = std::to_string(r.remaining()) + " trailing bytes";
    res.body = to_json(resp, body_version);
  });
  return res;
}

std::string broker_client::topic_id(const std::string& topic) {
  if (auto it = ids_.find(topic); it != ids_.end()) return it->second;
  build_context ctx;
  boost::json::object req{{"topics", boost::json::array{boost::json::object{{"name", topic}}}},
                          {"allow_auto_topic_creation", false}};
  exchange_result r = call(static_cast<int16_t>(protocol::api_key::metadata), 12, req, ctx, 10000);
  std::string id = "zero";
  if (r.how == outcome::response && r.decode_error.empty()) {
    for (const auto& t : r.body.at("topics").as_array())
      if (t.at("error_code").as_string() == "NONE") id = std::string(t.at("topic_id").as_string());
  }
  if (id == "AAAAAAAAAAAAAAAAAAAAAA") id = "zero";
  if (id != "zero") ids_[topic] = id;
  return id;
}

}  // namespace sluice::diff
