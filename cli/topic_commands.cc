// sluice topic create|list|describe|delete|alter-config|add-partitions: CreateTopics, Metadata, ListOffsets,
// DescribeConfigs, DeleteTopics, IncrementalAlterConfigs (KIP-339) and CreatePartitions, as the Java
// AdminClient sends them (admin requests to the controller, offsets to each partition's leader).
#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "cli/commands.h"
#include "cli/offsets.h"
#include "protocol/messages/create_partitions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::cli {

namespace {

constexpr int8_t topic_resource = 2;  // ConfigResource.Type.TOPIC

boost::json::value json_string_or_null(const std::optional<std::string>& s) {
  return s ? boost::json::value(*s) : boost::json::value(nullptr);
}

boost::json::value json_error(protocol::error_code e) {
  return e == protocol::error_code::none ? boost::json::value(nullptr) : boost::json::value(protocol::error_name(e));
}

/// Kafka's ConfigSource names (DescribeConfigs v1+).
std::string_view config_source_name(int8_t s) {
  switch (s) {
    case 1: return "DYNAMIC_TOPIC_CONFIG";
    case 2: return "DYNAMIC_BROKER_CONFIG";
    case 3: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case 4: return "STATIC_BROKER_CONFIG";
    case 5: return "DEFAULT_CONFIG";
    case 6: return "DYNAMIC_BROKER_LOGGER_CONFIG";
    case 7: return "CLIENT_METRICS_CONFIG";
    case 8: return "GROUP_CONFIG";
    default: return "UNKNOWN";
  }
}

/// Prints the per-topic outcome of an admin call and gives the exit code: 0 when every topic succeeded, else
/// failure(kafka_error) with the first error (after the table, so a script sees which ones went through).
struct topic_outcome {
  std::string name;
  protocol::error_code error = protocol::error_code::none;
  std::optional<std::string> message;
  boost::json::object extra;             // JSON fields beside name/error
  std::vector<std::string> text_columns;  // text columns after TOPIC, before STATUS
};

int report(context& ctx, const std::vector<std::string>& extra_headers, const std::vector<topic_outcome>& outcomes) {
  if (ctx.json()) {
    boost::json::array a;
    for (const auto& o : outcomes) {
      boost::json::object x;
      x["name"] = o.name;
      for (const auto& [k, v] : o.extra) x[k] = v;
      x["error"] = json_error(o.error);
      x["error_message"] = o.error == protocol::error_code::none ? boost::json::value(nullptr) : json_string_or_null(o.message);
      a.push_back(std::move(x));
    }
    print_json(ctx.out, boost::json::object{{"topics", std::move(a)}});
  } else {
    std::vector<std::string> headers{"TOPIC"};
    headers.insert(headers.end(), extra_headers.begin(), extra_headers.end());
    headers.push_back("STATUS");
    table t(headers);
    for (const auto& o : outcomes) {
      std::vector<std::string> row{o.name};
      row.insert(row.end(), o.text_columns.begin(), o.text_columns.end());
      row.push_back(o.error == protocol::error_code::none ? "OK" : kafka_error_text(o.error, o.message));
      t.add(std::move(row));
    }
    t.print(ctx.out);
  }
  for (const auto& o : outcomes)
    if (o.error != protocol::error_code::none) kafka_failure(o.error, o.message);
  return 0;
}

std::vector<std::string> names_of(const po::variables_map& vm) {
  if (!vm.count("topic")) usage_error("give at least one topic name");
  return vm["topic"].as<std::vector<std::string>>();
}

}  // namespace

// ---- create ------------------------------------------------------------------------------------------------------

int topic_create(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("partitions,p", po::value<int32_t>()->default_value(-1), "number of partitions (-1: the broker's num.partitions)")
      ("replicas,r", po::value<int16_t>()->default_value(-1), "replication factor (-1: the broker's default.replication.factor)")
      ("config,c", po::value<std::vector<std::string>>()->composing(), "topic config key=value (repeatable)")
      ("dry-run", po::bool_switch(), "validate only: ask the broker whether it would create them");
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic create", "topic create NAME... [--partitions N] [--replicas R] [--config k=v]...",
                  "Creates topics (CreateTopics).", options, "topic", vm))
    return 0;
  const auto names = names_of(vm);
  protocol::create_topics_request req;
  req.timeout_ms = static_cast<int32_t>(ctx.options().timeout.count());
  req.validate_only = vm["dry-run"].as<bool>();
  const int32_t partitions = vm["partitions"].as<int32_t>();
  const int16_t replicas = vm["replicas"].as<int16_t>();
  if (partitions == 0 || partitions < -1) usage_error("--partitions must be positive (or -1 for the broker's default)");
  if (replicas == 0 || replicas < -1) usage_error("--replicas must be positive (or -1 for the broker's default)");
  for (const auto& name : names) {
    protocol::create_topics_request::creatable_topic t;
    t.name = name;
    t.num_partitions = partitions;
    t.replication_factor = replicas;
    if (vm.count("config"))
      for (const auto& kv : vm["config"].as<std::vector<std::string>>()) {
        auto [k, v] = split_key_value(kv, "--config");
        t.configs.push_back({k, v, {}});
      }
    req.topics.push_back(std::move(t));
  }
  auto& c = ctx.kafka().controller();
  // v4+ accepts -1 for partitions and replicas (KIP-464); v2/v3 need both.
  const int16_t v = c.pick(protocol::api_key::create_topics, partitions < 0 || replicas < 0 ? 4 : 2, 7);
  auto resp = c.call<protocol::create_topics_response>(req, v);
  std::vector<topic_outcome> outcomes;
  for (const auto& r : resp.topics) {
    topic_outcome o{r.name, r.error_code, r.error_message, {}, {}};
    const int32_t np = v >= 5 && r.num_partitions >= 0 ? r.num_partitions : partitions;
    const int16_t rf = v >= 5 && r.replication_factor >= 0 ? r.replication_factor : replicas;
    const bool have_id = v >= 7 && !(r.topic_id == protocol::uuid{});
    o.extra["topic_id"] = have_id ? boost::json::value(r.topic_id.to_string()) : boost::json::value(nullptr);
    o.extra["partitions"] = np;
    o.extra["replicas"] = rf;
    const bool ok = r.error_code == protocol::error_code::none;
    o.text_columns = {have_id ? r.topic_id.to_string() : "", ok ? std::to_string(np) : "", ok ? std::to_string(rf) : ""};
    outcomes.push_back(std::move(o));
  }
  return report(ctx, {"ID", "PARTITIONS", "REPLICAS"}, outcomes);
}

// ---- list --------------------------------------------------------------------------------------------------------

int topic_list(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()("internal,i", po::bool_switch(), "include internal topics (__consumer_offsets, ...)");
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic list", "topic list [--internal]", "Lists topics (Metadata).", options, {}, {}, vm))
    return 0;
  const bool internal = vm["internal"].as<bool>();
  auto topics = ctx.kafka().refresh(std::nullopt).topics;
  std::sort(topics.begin(), topics.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  boost::json::array a;
  table t({"NAME", "PARTITIONS", "REPLICAS"});
  for (const auto& ti : topics) {
    if (ti.internal && !internal) continue;
    const size_t rf = ti.partitions.empty() ? 0 : ti.partitions.front().replicas.size();
    if (ctx.json()) {
      boost::json::object x;
      x["name"] = ti.name;
      x["topic_id"] = ti.topic_id == protocol::uuid{} ? boost::json::value(nullptr) : boost::json::value(ti.topic_id.to_string());
      x["partitions"] = ti.partitions.size();
      x["replicas"] = rf;
      x["internal"] = ti.internal;
      a.push_back(std::move(x));
    } else {
      t.add({ti.name, std::to_string(ti.partitions.size()), std::to_string(rf)});
    }
  }
  if (ctx.json()) print_json(ctx.out, boost::json::object{{"topics", std::move(a)}});
  else t.print(ctx.out);
  return 0;
}

// ---- describe ----------------------------------------------------------------------------------------------------

int topic_describe(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("all-configs,a", po::bool_switch(), "list every config (default: only those set on the topic)");
  po::options_description hidden;
  hidden.add_options()("topic", po::value<std::string>(), "topic name");
  po::positional_options_description positional;
  positional.add("topic", 1);
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic describe", "topic describe NAME [--all-configs]",
                  "A topic's partitions (leader, epoch, replicas, ISR, log start offset, high watermark) and configs.",
                  options, hidden, positional, vm))
    return 0;
  if (!vm.count("topic")) usage_error("topic describe: give a topic name");
  const std::string name = vm["topic"].as<std::string>();
  auto& kafka = ctx.kafka();
  const topic_info topic = kafka.topic(name);
  std::vector<int32_t> ids;
  for (const auto& p : topic.partitions) ids.push_back(p.partition);
  auto start = list_offsets(kafka, topic, ids, earliest_timestamp);
  auto end = list_offsets(kafka, topic, ids, latest_timestamp);

  auto& c = kafka.controller();
  protocol::describe_configs_request dreq;
  dreq.resources.push_back({topic_resource, name, std::nullopt, {}});
  const int16_t dv = c.pick(protocol::api_key::describe_configs, 1, 4);
  auto dresp = c.call<protocol::describe_configs_response>(dreq, dv);
  const bool all = vm["all-configs"].as<bool>();
  std::vector<protocol::describe_configs_response::describe_configs_resource_result> configs;
  for (const auto& r : dresp.results) {
    if (r.error_code != protocol::error_code::none) kafka_failure(r.error_code, r.error_message, "DescribeConfigs");
    for (const auto& cfg : r.configs)
      if (all || cfg.config_source == 1) configs.push_back(cfg);
  }
  std::sort(configs.begin(), configs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  if (ctx.json()) {
    boost::json::object o;
    o["name"] = topic.name;
    o["topic_id"] = topic.topic_id == protocol::uuid{} ? boost::json::value(nullptr) : boost::json::value(topic.topic_id.to_string());
    o["internal"] = topic.internal;
    boost::json::array parts;
    for (const auto& p : topic.partitions) {
      boost::json::object x;
      x["partition"] = p.partition;
      x["leader"] = p.leader;
      x["leader_epoch"] = p.leader_epoch;
      x["replicas"] = json_ids(p.replicas);
      x["isr"] = json_ids(p.isr);
      x["offline_replicas"] = json_ids(p.offline);
      x["log_start_offset"] = start[p.partition];
      x["high_watermark"] = end[p.partition];
      x["error"] = json_error(p.error);
      parts.push_back(std::move(x));
    }
    o["partitions"] = std::move(parts);
    boost::json::array cfgs;
    for (const auto& cfg : configs)
      cfgs.push_back(boost::json::object{{"name", cfg.name},
                                         {"value", cfg.is_sensitive ? boost::json::value(nullptr) : json_string_or_null(cfg.value)},
                                         {"source", config_source_name(cfg.config_source)},
                                         {"read_only", cfg.read_only},
                                         {"sensitive", cfg.is_sensitive}});
    o["configs"] = std::move(cfgs);
    print_json(ctx.out, o);
    return 0;
  }
  const size_t rf = topic.partitions.empty() ? 0 : topic.partitions.front().replicas.size();
  ctx.out << "SUMMARY\n=======\n";
  table s({"NAME", topic.name});
  s.add({"ID", topic.topic_id == protocol::uuid{} ? "" : topic.topic_id.to_string()});
  s.add({"PARTITIONS", std::to_string(topic.partitions.size())});
  s.add({"REPLICAS", std::to_string(rf)});
  s.add({"INTERNAL", topic.internal ? "true" : "false"});
  s.print(ctx.out);
  ctx.out << "\nCONFIGS\n=======\n";
  table ct({"KEY", "VALUE", "SOURCE"});
  for (const auto& cfg : configs)
    ct.add({cfg.name, cfg.is_sensitive ? "(sensitive)" : cfg.value.value_or("(null)"),
            std::string(config_source_name(cfg.config_source))});
  ct.print(ctx.out);
  ctx.out << "\nPARTITIONS\n==========\n";
  table pt({"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START-OFFSET", "HIGH-WATERMARK"});
  for (const auto& p : topic.partitions)
    pt.add({std::to_string(p.partition), std::to_string(p.leader), std::to_string(p.leader_epoch), join_ids(p.replicas),
            join_ids(p.isr), std::to_string(start[p.partition]), std::to_string(end[p.partition])});
  pt.print(ctx.out);
  return 0;
}

// ---- delete ------------------------------------------------------------------------------------------------------

int topic_delete(context& ctx, const args_t& args) {
  po::options_description options("Options");
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic delete", "topic delete NAME...", "Deletes topics (DeleteTopics).", options,
                  "topic", vm))
    return 0;
  const auto names = names_of(vm);
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::delete_topics, 1, 6);
  protocol::delete_topics_request req;
  req.timeout_ms = static_cast<int32_t>(ctx.options().timeout.count());
  for (const auto& n : names) {
    if (v >= 6) req.topics.push_back({n, {}, {}});
    else req.topic_names.push_back(n);
  }
  auto resp = c.call<protocol::delete_topics_response>(req, v);
  std::vector<topic_outcome> outcomes;
  for (const auto& r : resp.responses) {
    std::optional<std::string> msg = r.error_message;
    if (r.error_code == protocol::error_code::unknown_topic_or_partition && (!msg || msg->empty()))
      msg = fmt::format("Topic '{}' does not exist.", r.name.value_or(""));
    outcomes.push_back({r.name.value_or(r.topic_id.to_string()), r.error_code, msg, {}, {}});
  }
  return report(ctx, {}, outcomes);
}

// ---- alter-config ------------------------------------------------------------------------------------------------

int topic_alter_config(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("set,s", po::value<std::vector<std::string>>()->composing(), "set key=value (repeatable)")
      ("delete,d", po::value<std::vector<std::string>>()->composing(), "remove a key, back to its default (repeatable)")
      ("append", po::value<std::vector<std::string>>()->composing(), "append key=value to a list config (repeatable)")
      ("subtract", po::value<std::vector<std::string>>()->composing(), "remove key=value from a list config (repeatable)")
      ("dry-run", po::bool_switch(), "validate only");
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic alter-config",
                  "topic alter-config NAME... [--set k=v]... [--delete k]... [--append k=v]... [--subtract k=v]...",
                  "Changes topic configs (IncrementalAlterConfigs, KIP-339).", options, "topic", vm))
    return 0;
  const auto names = names_of(vm);
  std::vector<protocol::incremental_alter_configs_request::alterable_config> ops;
  auto add = [&](const char* opt, int8_t op, bool with_value) {
    if (!vm.count(opt)) return;
    for (const auto& item : vm[opt].as<std::vector<std::string>>()) {
      if (with_value) {
        auto [k, v] = split_key_value(item, std::string("--") + opt);
        ops.push_back({k, op, v, {}});
      } else {
        if (item.empty()) usage_error("--delete takes a config key");
        ops.push_back({item, op, std::nullopt, {}});
      }
    }
  };
  add("set", 0, true);
  add("delete", 1, false);
  add("append", 2, true);
  add("subtract", 3, true);
  if (ops.empty()) usage_error("topic alter-config: give at least one --set, --delete, --append or --subtract");
  protocol::incremental_alter_configs_request req;
  req.validate_only = vm["dry-run"].as<bool>();
  for (const auto& n : names) req.resources.push_back({topic_resource, n, ops, {}});
  auto& c = ctx.kafka().controller();
  const int16_t v = c.pick(protocol::api_key::incremental_alter_configs, 0, 1);
  auto resp = c.call<protocol::incremental_alter_configs_response>(req, v);
  std::vector<topic_outcome> outcomes;
  for (const auto& r : resp.responses) outcomes.push_back({r.resource_name, r.error_code, r.error_message, {}, {}});
  return report(ctx, {}, outcomes);
}

// ---- add-partitions ----------------------------------------------------------------------------------------------

int topic_add_partitions(context& ctx, const args_t& args) {
  po::options_description options("Options");
  options.add_options()
      ("num,n", po::value<int32_t>(), "partitions to add to each topic")
      ("total,t", po::value<int32_t>(), "or: the partition count each topic should have")
      ("dry-run", po::bool_switch(), "validate only");
  po::variables_map vm;
  if (!parse_args(ctx, args, "topic add-partitions", "topic add-partitions NAME... (--num N | --total N)",
                  "Adds partitions to topics (CreatePartitions).", options, "topic", vm))
    return 0;
  const auto names = names_of(vm);
  if (vm.count("num") == vm.count("total")) usage_error("topic add-partitions: give exactly one of --num and --total");
  if (vm.count("num") && vm["num"].as<int32_t>() <= 0) usage_error("--num must be positive");
  if (vm.count("total") && vm["total"].as<int32_t>() <= 0) usage_error("--total must be positive");
  auto& kafka = ctx.kafka();
  protocol::create_partitions_request req;
  req.timeout_ms = static_cast<int32_t>(ctx.options().timeout.count());
  req.validate_only = vm["dry-run"].as<bool>();
  std::map<std::string, int32_t> totals;
  for (const auto& n : names) {
    int32_t total;
    if (vm.count("total")) {
      total = vm["total"].as<int32_t>();
    } else {
      const auto& t = kafka.topic(n);
      total = static_cast<int32_t>(t.partitions.size()) + vm["num"].as<int32_t>();
    }
    totals[n] = total;
    req.topics.push_back({n, total, std::nullopt, {}});
  }
  auto& c = kafka.controller();
  const int16_t v = c.pick(protocol::api_key::create_partitions, 0, 3);
  auto resp = c.call<protocol::create_partitions_response>(req, v);
  std::vector<topic_outcome> outcomes;
  for (const auto& r : resp.results) {
    topic_outcome o{r.name, r.error_code, r.error_message, {}, {}};
    o.extra["partitions"] = totals[r.name];
    o.text_columns = {std::to_string(totals[r.name])};
    outcomes.push_back(std::move(o));
  }
  return report(ctx, {"PARTITIONS"}, outcomes);
}

}  // namespace sluice::cli
