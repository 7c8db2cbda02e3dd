#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sluice::broker {

/// Kafka's topic name rule (Topic.validate): 1 to 249 characters of [a-zA-Z0-9._-], not "." or "..".
/// Returns the reason when invalid (Kafka answers INVALID_TOPIC_EXCEPTION with it).
std::optional<std::string> invalid_topic_name_reason(std::string_view name);

/// Kafka's Topic.hasCollision: two different names that become equal with every '.' replaced by '_' (metric
/// names cannot tell them apart). Kafka refuses to create a topic colliding with an existing one.
bool topic_names_collide(std::string_view a, std::string_view b);

}  // namespace sluice::broker
