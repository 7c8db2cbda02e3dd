// UpdateFeatures (key 57; KIP-584, KIP-778): finalizes feature levels. Sluice supports no feature flags (it is not a
// KRaft node: ApiVersions lists no supported or finalized features, compat/diff/KNOWN.md K2), so it answers as a
// Kafka 4.4 controller answers for features it does not know (compared with Kafka 4.4 in
// compat/diff/scenarios/update_features.json): every update fails with INVALID_UPDATE_VERSION, checked in Kafka's
// order (FeatureControlManager.updateFeature): an unknown upgrade type, a negative level, a level above 0 (the
// controller does not support the feature), level 0 (the feature is not found). Updates are keyed by feature (a
// feature named twice keeps its first place and its last level); the first failing one fails the request and its
// message is the top-level one. No per-feature results (Kafka 4.4 sends none when the request fails; v2 has none).
// An empty request succeeds. Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
#include <algorithm>
#include <string>

#include "broker/handlers/authorization.h"
#include "broker/handlers/cluster_view.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::update_features_response;

namespace {

/// FeatureUpdate.UpgradeType: 1 upgrade, 2 safe downgrade, 3 unsafe downgrade (v0: AllowDowngrade true means a
/// safe downgrade).
constexpr int8_t kUpgrade = 1, kSafeDowngrade = 2, kUnsafeDowngrade = 3;

std::string invalid_update(const std::string& feature, int16_t level, const std::string& why) {
  return "Invalid update version " + std::to_string(level) + " for feature " + feature + ". " + why;
}

}  // namespace

task<response> update_features(broker_services& svc, request_context& rc, protocol::update_features_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  resp.error_code = error_code::none;
  resp.error_message = std::nullopt;
  if (!cluster_authorized(svc, rc, acl_operation::alter)) {
    resp.error_code = error_code::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    co_return resp;
  }
  if (req.feature_updates.empty()) co_return resp;
  // Kafka keys the updates by feature name (a feature named twice: its first place, its last entry) and stops at the
  // first that fails; every update fails here, so the answer is the first feature's, with its last entry.
  const auto& first = req.feature_updates.front().feature;
  const auto& u = *std::find_if(req.feature_updates.rbegin(), req.feature_updates.rend(),
                                [&](const auto& x) { return x.feature == first; });
  const int8_t type = version == 0 ? (u.allow_downgrade ? kSafeDowngrade : kUpgrade) : u.upgrade_type;
  std::string why;
  if (type != kUpgrade && type != kSafeDowngrade && type != kUnsafeDowngrade) {
    why = "The controller does not support the given upgrade type.";
  } else if (u.max_version_level < 0) {
    why = "A feature version cannot be less than 0.";
  } else if (u.max_version_level > 0) {
    const int32_t controller = controller_id(svc) >= 0 ? controller_id(svc) : svc.config.broker_id;
    why = "Local controller " + std::to_string(controller) + " does not support this feature.";
  } else {
    why = "Feature " + u.feature + " not found.";
  }
  resp.error_code = error_code::invalid_update_version;
  resp.error_message = "The update failed for all features since the following feature had an error: " +
                       invalid_update(u.feature, u.max_version_level, why);
  co_return resp;
}

}  // namespace sluice::broker::handlers
