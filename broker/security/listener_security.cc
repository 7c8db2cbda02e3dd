#include "broker/security/listener_security.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "broker/security/tls_context.h"
#include "broker/session.h"

namespace sluice::broker::security {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(item.begin());
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int64_t to_long(const std::string& text, int64_t fallback) {
  int64_t v = fallback;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && p == text.data() + text.size() ? v : fallback;
}
}  // namespace

bool sasl_mechanism_supported(const std::string& m) {
  return m == "PLAIN" || m == "SCRAM-SHA-256" || m == "SCRAM-SHA-512" || m == "OAUTHBEARER";
}

bool listener_security::mechanism_enabled(const std::string& m) const {
  return std::find(sasl_mechanisms.begin(), sasl_mechanisms.end(), m) != sasl_mechanisms.end();
}

std::unique_ptr<sasl_server> listener_security::make_sasl_server(const std::string& mechanism, scram_lookup scram,
                                                                 std::function<int64_t()> now_ms) const {
  if (!mechanism_enabled(mechanism)) return nullptr;
  if (mechanism == "PLAIN") return make_plain_server(plain_users);
  if (mechanism == "OAUTHBEARER") return make_oauthbearer_unsecured_server(oauthbearer, std::move(now_ms));
  const auto m = scram_mechanism_from_name(mechanism);
  if (m != scram_mechanism::unknown) return make_scram_server(m, std::move(scram));
  return nullptr;
}

result<std::shared_ptr<const listener_security>> make_listener_security(const broker_config& config,
                                                                        const std::string& listener) {
  auto ls = std::make_shared<listener_security>();
  ls->listener_name = listener;
  ls->security_protocol = security_protocol_of(config.values, listener);
  auto get = [&](const std::string& key) { return listener_config(config, listener, key); };
  auto fail = [&](const std::string& m) { return error{base_errc::failed, "listener " + listener + ": " + m}; };

  auto mapper = ssl_principal_mapper::parse(get("ssl.principal.mapping.rules"));
  if (!mapper) return fail(mapper.err().message);
  ls->principal_mapper = std::move(*mapper);
  if (ls->uses_tls()) {
    auto tls = make_server_tls_context(config, listener);
    if (!tls) return tls.err();
    ls->tls = std::move(*tls);
  }
  ls->reauth_ms = std::max<int64_t>(0, to_long(get("connections.max.reauth.ms"), 0));
  ls->failed_authentication_delay_ms = static_cast<int32_t>(std::clamp<int64_t>(to_long(get("connection.failed.authentication.delay.ms"), 100), 0, INT32_MAX));
  ls->max_receive_size = static_cast<int32_t>(std::clamp<int64_t>(to_long(get("sasl.server.max.receive.size"), 524288), 1, INT32_MAX));
  if (!ls->uses_sasl()) return std::shared_ptr<const listener_security>(ls);

  ls->sasl_mechanisms = split_list(get("sasl.enabled.mechanisms"));
  for (auto& m : ls->sasl_mechanisms) m = [&] { std::string u = m; for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c))); return u; }();
  if (ls->sasl_mechanisms.empty()) return fail("sasl.enabled.mechanisms is empty");
  for (const auto& m : ls->sasl_mechanisms) {
    if (m == "GSSAPI")
      return fail("sasl.enabled.mechanisms names GSSAPI (Kafka's default): Kerberos is not supported; enable PLAIN, "
                  "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER");
    if (!sasl_mechanism_supported(m)) return fail("unsupported SASL mechanism " + m);
  }
  auto jaas_of = [&](const std::string& mechanism) -> result<std::optional<jaas_entry>> {
    const std::string key = "listener.name." + lower(listener) + "." + lower(mechanism) + ".sasl.jaas.config";
    std::string text;
    if (auto it = config.listener_values.find(key); it != config.listener_values.end()) text = it->second;
    else text = get("sasl.jaas.config");
    if (text.empty()) return std::optional<jaas_entry>{};
    auto e = parse_jaas_config(text);
    if (!e) return error{base_errc::failed, "listener " + listener + ": " + key + ": " + e.err().message};
    return std::optional<jaas_entry>(std::move(*e));
  };
  if (ls->mechanism_enabled("PLAIN")) {
    auto jaas = jaas_of("PLAIN");
    if (!jaas) return jaas.err();
    if (*jaas)
      for (const auto& [k, v] : (*jaas)->options)
        if (k.starts_with("user_") && k.size() > 5) ls->plain_users[k.substr(5)] = v;
    if (ls->plain_users.empty())
      return fail("PLAIN is enabled but no user is configured: set listener.name." + lower(listener) +
                  ".plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                  "user_<name>=\"<password>\";");
  }
  if (ls->mechanism_enabled("OAUTHBEARER")) {
    auto jaas = jaas_of("OAUTHBEARER");
    if (!jaas) return jaas.err();
    if (*jaas) {
      const auto& o = (*jaas)->options;
      if (auto it = o.find("unsecuredValidatorPrincipalClaimName"); it != o.end() && !it->second.empty())
        ls->oauthbearer.principal_claim_name = it->second;
      if (auto it = o.find("unsecuredValidatorScopeClaimName"); it != o.end() && !it->second.empty())
        ls->oauthbearer.scope_claim_name = it->second;
      if (auto it = o.find("unsecuredValidatorRequiredScope"); it != o.end()) {
        std::stringstream in(it->second);
        for (std::string w; in >> w;) ls->oauthbearer.required_scope.push_back(w);
      }
      if (auto it = o.find("unsecuredValidatorAllowableClockSkewMs"); it != o.end())
        ls->oauthbearer.allowable_clock_skew_ms = std::max<int64_t>(0, to_long(it->second, 0));
    }
  }
  return std::shared_ptr<const listener_security>(ls);
}

}  // namespace sluice::broker::security
