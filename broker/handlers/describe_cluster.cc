// DescribeCluster (key 60, KIP-700; v1 adds EndpointType, KIP-919): the brokers, the cluster id and the
// controller, as Metadata tells them (cluster_view.h), without any topic.
#include <climits>

#include "broker/handlers/cluster_view.h"
#include "broker/handlers/authorization.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker::handlers {

using protocol::error_code;
using response = protocol::describe_cluster_response;

namespace {
// KIP-919 EndpointType: 1 = brokers, 2 = controllers; anything else is UNKNOWN. Sluice serves only the
// broker endpoint.
constexpr int8_t kBrokerEndpoint = 1, kControllerEndpoint = 2;
}  // namespace

// As Kafka's AuthHelper.computeDescribeClusterResponse: an unknown endpoint type is UNSUPPORTED_ENDPOINT_TYPE,
// the controller type sent to a broker MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which has no such
// codes); ClusterAuthorizedOperations stays INT32_MIN unless asked for.
task<response> describe_cluster(broker_services& svc, request_context& rc, protocol::describe_cluster_request& req) {
  const int16_t version = rc.header.api_version;
  response resp;
  if (req.endpoint_type != kBrokerEndpoint) {
    const bool known = req.endpoint_type == kControllerEndpoint;
    resp.error_code = version == 0 ? error_code::invalid_request
                      : known      ? error_code::mismatched_endpoint_type
                                   : error_code::unsupported_endpoint_type;
    resp.error_message = known ? "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                                 "CONTROLLER"
                               : "Unsupported endpoint type " + std::to_string(req.endpoint_type);
    co_return resp;
  }
  resp.error_code = error_code::none;
  resp.endpoint_type = kBrokerEndpoint;
  resp.cluster_id = svc.cluster_id;
  resp.controller_id = controller_id(svc);
  for (auto& ep : live_brokers(svc, rc.session.listener_name)) {
    response::describe_cluster_broker b;
    b.broker_id = ep.id;
    b.host = std::move(ep.host);
    b.port = ep.port;
    b.rack = std::move(ep.rack);
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_authorized_operations =
      req.include_cluster_authorized_operations
          ? authorized_operations(svc, rc, resource_type::cluster, security::cluster_resource_name,
                                  cluster_authorized_operations)
          : INT32_MIN;
  co_return resp;
}

}  // namespace sluice::broker::handlers
