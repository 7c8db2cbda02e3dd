// sluice cluster info: the cluster id, the controller and the brokers, from Metadata.
#include <fmt/format.h>

#include <ostream>

#include "cli/commands.h"

namespace sluice::cli {

int cluster_info(context& ctx, const args_t& args) {
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_args(ctx, args, "cluster info", "cluster info", "The cluster id, the controller and the brokers (Metadata).",
                  options, {}, {}, vm))
    return 0;
  const auto& m = ctx.kafka().refresh(std::vector<std::string>{});
  if (ctx.json()) {
    boost::json::object o;
    o["cluster_id"] = m.cluster_id ? boost::json::value(*m.cluster_id) : boost::json::value(nullptr);
    o["controller_id"] = m.controller_id;
    boost::json::array brokers;
    for (const auto& b : m.brokers) {
      boost::json::object x;
      x["id"] = b.id;
      x["host"] = b.host;
      x["port"] = b.port;
      x["rack"] = b.rack ? boost::json::value(*b.rack) : boost::json::value(nullptr);
      x["controller"] = b.id == m.controller_id;
      brokers.push_back(std::move(x));
    }
    o["brokers"] = std::move(brokers);
    print_json(ctx.out, o);
    return 0;
  }
  ctx.out << "CLUSTER\n=======\n" << m.cluster_id.value_or("(none)") << "\n\n";
  ctx.out << "BROKERS\n=======\n";
  table t({"ID", "HOST", "PORT", "RACK"});
  for (const auto& b : m.brokers)
    t.add({std::to_string(b.id) + (b.id == m.controller_id ? "*" : ""), b.host, std::to_string(b.port), b.rack.value_or("")});
  t.print(ctx.out);
  ctx.out << "(* controller)\n";
  return 0;
}

}  // namespace sluice::cli
