#include "broker/security/credential_store.h"

#include "base/logging.h"

namespace sluice::broker::security {

namespace {
constexpr const char* kUsers = "users";
}

std::optional<scram_credential> credential_store::find(const std::string& user, scram_mechanism m) const {
  auto all = store_.entity_configs(kUsers);
  if (!all) {
    log::warn("cannot read SCRAM credentials: {}", all.err().message);
    return std::nullopt;
  }
  auto u = all->find(user);
  if (u == all->end()) return std::nullopt;
  auto c = u->second.find(std::string(scram_mechanism_name(m)));
  if (c == u->second.end()) return std::nullopt;
  auto parsed = parse_scram_credential(c->second);
  if (!parsed) log::warn("the {} credential of user {} is malformed: ignored", scram_mechanism_name(m), user);
  return parsed;
}

result<std::map<std::string, std::map<scram_mechanism, int32_t>>> credential_store::describe() const {
  auto all = store_.entity_configs(kUsers);
  if (!all) return all.err();
  std::map<std::string, std::map<scram_mechanism, int32_t>> out;
  for (const auto& [user, configs] : *all)
    for (auto m : {scram_mechanism::sha_256, scram_mechanism::sha_512})
      if (auto it = configs.find(std::string(scram_mechanism_name(m))); it != configs.end())
        if (auto c = parse_scram_credential(it->second)) out[user][m] = c->iterations;
  return out;
}

result<void> credential_store::alter(const std::string& user, scram_mechanism m,
                                     const std::optional<scram_credential>& credential) {
  auto all = store_.entity_configs(kUsers);
  if (!all) return all.err();
  std::map<std::string, std::string> configs;
  if (auto it = all->find(user); it != all->end()) configs = it->second;
  if (credential) configs[std::string(scram_mechanism_name(m))] = format_scram_credential(*credential);
  else configs.erase(std::string(scram_mechanism_name(m)));
  return store_.set_entity_configs(kUsers, user, std::move(configs));
}

}  // namespace sluice::broker::security
