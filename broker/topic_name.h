#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sluice::broker {

/// Kafka's topic name rule (Topic.validate): 1 to 249 characters of [a-zA-Z0-9._-], not "." or "..".
/// Returns the reason when invalid (Kafka answers INVALID_TOPIC_EXCEPTION with it).
std::optional<std::string> invalid_topic_name_reason(std::string_view name);

}  // namespace sluice::broker
