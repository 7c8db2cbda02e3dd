#pragma once
// broker_client: one broker as sluice_diff sees it: a connection, correlation ids, and typed round
// trips driven by JSON (request JSON -> generated request struct -> frame; response frame ->
// generated response struct -> JSON).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <boost/json.hpp>

#include "compat/diff/connection.h"
#include "compat/diff/json_codec.h"

namespace sluice::diff {

/// The result of one request: the outcome and, for a response, its JSON (or a decode error).
struct exchange_result {
  outcome how = outcome::response;
  boost::json::value body;   // the decoded response (null when none)
  std::string decode_error;  // non-empty when the response did not decode
  int16_t body_version = 0;  // the version the body was decoded at (ApiVersions may answer in v0)
  bool no_response_expected = false;  // Produce acks=0
};

/// How a request frame is altered before sending (malformed-request scenarios).
struct frame_edit {
  int64_t truncate = 0;  // drop this many bytes at the end (size prefix fixed up)
  std::string append_hex;  // bytes appended to the body
};

class broker_client {
 public:
  broker_client(std::string name, std::string address) : name_(std::move(name)), conn_(std::move(address)) {}

  const std::string& name() const { return name_; }
  /// [min, max] advertised in ApiVersions (v3), per api key; empty when the broker did not answer.
  const std::map<int16_t, std::pair<int16_t, int16_t>>& advertised() const { return advertised_; }
  bool discover(std::string& error);

  /// Sends `request` (JSON of the request struct of `api_key`) at `version`, waits up to timeout_ms.
  /// Throws std::runtime_error when the JSON does not fit the request struct.
  exchange_result call(int16_t api_key, int16_t version, const boost::json::value& request, build_context& ctx,
                       int timeout_ms, const frame_edit& edit = {});
  /// Drops the connection (the next call reconnects).
  void reset() { conn_.close(); }
  /// Topic id of `topic` from Metadata v12 (zero uuid when unknown); cached until forget_ids().
  std::string topic_id(const std::string& topic);
  void forget_ids() { ids_.clear(); }

 private:
  std::string name_;
  connection conn_;
  int32_t correlation_ = 1;
  std::map<int16_t, std::pair<int16_t, int16_t>> advertised_;
  std::map<std::string, std::string> ids_;
};

}  // namespace sluice::diff
