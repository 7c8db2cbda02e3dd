#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sluice::broker {

/// Kafka's longest topic name, in characters (Topic.MAX_NAME_LENGTH).
inline constexpr size_t kMaxTopicNameLength = 249;

/// Kafka's topic name rule (org.apache.kafka.common.internals.Topic.validate): 1 to 249 characters (counted as
/// Java counts them: UTF-16 code units of the UTF-8 name) of [a-zA-Z0-9._-], and not "." or "..".
/// Returns nullopt for a valid name, else Kafka 4.x's message for the first rule broken (checked in Kafka's
/// order: empty, ".", "..", length, characters), e.g. "Topic name is invalid: the empty string is not allowed".
/// Kafka answers INVALID_TOPIC_EXCEPTION (17) with it in CreateTopics, and the code alone in Metadata.
std::optional<std::string> invalid_topic_name_reason(std::string_view name);

/// Kafka's Topic.hasCollision: two different names that become equal with every '.' replaced by '_' (metric
/// names cannot tell them apart). Kafka refuses to create a topic colliding with an existing one.
bool topic_names_collide(std::string_view a, std::string_view b);

}  // namespace sluice::broker
