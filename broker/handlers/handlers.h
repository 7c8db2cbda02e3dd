#pragma once
// One handler per API: typed request in, typed response out (DESIGN.md §1). A handler that returns
// std::nullopt sends no response (Produce with acks=0).
#include <boost/asio.hpp>
#include <optional>

#include "broker/request_context.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/metadata.h"
#include "protocol/messages/produce.h"

namespace sluice::broker::handlers {

template <typename T>
using task = boost::asio::awaitable<T>;

task<protocol::api_versions_response> api_versions(handler_context&, request_context&, protocol::api_versions_request&);
task<protocol::metadata_response> metadata(handler_context&, request_context&, protocol::metadata_request&);
task<std::optional<protocol::produce_response>> produce(handler_context&, request_context&, protocol::produce_request&);
task<protocol::fetch_response> fetch(handler_context&, request_context&, protocol::fetch_request&);
task<protocol::list_offsets_response> list_offsets(handler_context&, request_context&, protocol::list_offsets_request&);
task<protocol::create_topics_response> create_topics(handler_context&, request_context&, protocol::create_topics_request&);
task<protocol::delete_topics_response> delete_topics(handler_context&, request_context&, protocol::delete_topics_request&);

/// The full ApiVersions answer at `version` (also used for the v0 UNSUPPORTED_VERSION answer, KIP-511).
protocol::api_versions_response api_versions_list(protocol::error_code error);

}  // namespace sluice::broker::handlers
