#include "broker/security/sasl_server.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace sluice::broker::security {

namespace {

sasl_step failed(std::string message) {
  sasl_step s;
  s.what = sasl_step::kind::failed;
  s.error_message = std::move(message);
  return s;
}

std::string_view as_text(std::span<const uint8_t> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
bytes as_bytes(std::string_view s) { return bytes(s.begin(), s.end()); }

/// Constant-time comparison (the proof check must not leak how many bytes matched).
bool equal_secret(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

// ------------------------------------------------------------------------------------------------ PLAIN

class plain_server final : public sasl_server {
 public:
  explicit plain_server(std::map<std::string, std::string> users) : users_(std::move(users)) {}

  sasl_step evaluate(std::span<const uint8_t> message) override {
    // message = [authzid] NUL authcid NUL passwd (RFC 4616 §2)
    const std::string_view text = as_text(message);
    std::vector<std::string_view> tokens;
    size_t start = 0;
    for (;;) {
      const size_t nul = text.find('\0', start);
      tokens.push_back(text.substr(start, nul == std::string_view::npos ? std::string_view::npos : nul - start));
      if (nul == std::string_view::npos) break;
      start = nul + 1;
    }
    if (tokens.size() != 3) {
      // A malformed message is Kafka's SaslException: the client gets the generic text.
      sasl_step s = failed("Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN");
      s.log_reason = "Invalid SASL/PLAIN response: expected 3 tokens, got " + std::to_string(tokens.size());
      return s;
    }
    const std::string_view authzid = tokens[0], username = tokens[1], password = tokens[2];
    if (username.empty()) return failed("Authentication failed: username not specified");
    if (password.empty()) return failed("Authentication failed: password not specified");
    auto it = users_.find(std::string(username));
    if (it == users_.end() || !equal_secret(as_bytes(it->second), as_bytes(password)))
      return failed("Authentication failed: Invalid username or password");
    if (!authzid.empty() && authzid != username)
      return failed("Authentication failed: Client requested an authorization id that is different from username");
    sasl_step s;
    s.what = sasl_step::kind::complete;
    s.principal_name = std::string(username);
    return s;
  }

 private:
  std::map<std::string, std::string> users_;
};

// ------------------------------------------------------------------------------------------------ SCRAM

class scram_server final : public sasl_server {
 public:
  scram_server(scram_mechanism m, scram_lookup lookup) : mechanism_(m), lookup_(std::move(lookup)) {}

  sasl_step evaluate(std::span<const uint8_t> message) override {
    if (state_ == state::first) return client_first(as_text(message));
    if (state_ == state::final) return client_final(as_text(message));
    return refused("unexpected SCRAM message after the exchange ended");
  }

 private:
  enum class state { first, final, done };

  std::string invalid_credentials() const {
    return "Authentication failed during authentication due to invalid credentials with SASL mechanism " +
           std::string(scram_mechanism_name(mechanism_));
  }

  /// Kafka's SaslServerAuthenticator tells the client only the generic text for every SCRAM failure but a
  /// different authorization id, so that an unknown user and a wrong password look the same; the reason is logged.
  sasl_step refused(std::string reason) const {
    sasl_step s = failed(invalid_credentials());
    s.log_reason = std::move(reason);
    return s;
  }

  sasl_step client_first(std::string_view text) {
    state_ = state::done;
    // gs2-header: ("n" | "y" | "p=" cb-name) "," [ "a=" authzid ] ","
    const size_t c1 = text.find(',');
    const size_t c2 = c1 == std::string_view::npos ? c1 : text.find(',', c1 + 1);
    if (c2 == std::string_view::npos) return refused("Invalid SCRAM client first message format: " + std::string(text));
    const std::string_view cb = text.substr(0, c1), authz = text.substr(c1 + 1, c2 - c1 - 1);
    if (cb != "n" && cb != "y") return refused("Authentication failed: channel binding is not supported");
    gs2_header_ = std::string(text.substr(0, c2 + 1));
    client_first_bare_ = std::string(text.substr(c2 + 1));
    auto attrs = scram_attributes(client_first_bare_);
    if (attrs.size() < 2 || attrs[0].first != "n" || attrs[1].first != "r" || attrs[1].second.empty())
      return refused("Invalid SCRAM client first message format: " + std::string(text));
    auto user = decode_saslname(attrs[0].second);
    if (!user) return refused("Invalid SCRAM client first message format: " + std::string(text));
    // Extensions (KIP-84: tokenauth=true for delegation tokens): Sluice has no delegation tokens.
    for (size_t i = 2; i < attrs.size(); ++i)
      if (attrs[i].first == "tokenauth" && attrs[i].second == "true")
        return refused("Authentication failed: delegation tokens are not supported");
    if (!authz.empty()) {
      if (!authz.starts_with("a=")) return refused("Invalid SCRAM client first message format: " + std::string(text));
      auto authzid = decode_saslname(authz.substr(2));
      if (!authzid || *authzid != *user)
        return failed("Authentication failed: Client requested an authorization id that is different from username");
    }
    auto credential = lookup_(*user, mechanism_);
    if (!credential) return refused("unknown user " + *user);
    user_ = *user;
    credential_ = std::move(*credential);
    const bytes server_nonce = random_bytes(24);
    nonce_ = std::string(attrs[1].second) + base64_encode(server_nonce);
    // base64 of random bytes may hold '+' and '/', both printable and allowed in a nonce (RFC 5802 §5.1).
    server_first_ = "r=" + nonce_ + ",s=" + base64_encode(credential_.salt) + ",i=" + std::to_string(credential_.iterations);
    state_ = state::final;
    sasl_step s;
    s.what = sasl_step::kind::challenge;
    s.token = as_bytes(server_first_);
    return s;
  }

  sasl_step client_final(std::string_view text) {
    state_ = state::done;
    const size_t p = text.rfind(",p=");
    if (p == std::string_view::npos) return refused("Invalid SCRAM client final message format: " + std::string(text));
    const std::string_view without_proof = text.substr(0, p);
    auto attrs = scram_attributes(without_proof);
    if (attrs.size() < 2 || attrs[0].first != "c" || attrs[1].first != "r")
      return refused("Invalid SCRAM client final message format: " + std::string(text));
    if (attrs[1].second != nonce_) return refused("Invalid client nonce in the final client message.");
    auto channel = base64_decode(attrs[0].second);
    if (!channel || as_text(*channel) != gs2_header_) return refused("channel binding differs from the gs2 header");
    auto proof = base64_decode(text.substr(p + 3));
    if (!proof) return refused("Invalid SCRAM client final message format: " + std::string(text));
    const std::string auth_message = client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
    const bytes client_signature = scram_hmac(mechanism_, credential_.stored_key, as_bytes(auth_message));
    if (proof->size() != client_signature.size()) return refused("wrong password (client proof)");
    bytes client_key(client_signature.size());
    for (size_t i = 0; i < client_key.size(); ++i) client_key[i] = static_cast<uint8_t>((*proof)[i] ^ client_signature[i]);
    if (!equal_secret(scram_hash(mechanism_, client_key), credential_.stored_key)) return refused("wrong password (client proof)");
    const bytes server_signature = scram_hmac(mechanism_, credential_.server_key, as_bytes(auth_message));
    sasl_step s;
    s.what = sasl_step::kind::complete;
    s.principal_name = user_;
    s.token = as_bytes("v=" + base64_encode(server_signature));
    return s;
  }

  scram_mechanism mechanism_;
  scram_lookup lookup_;
  state state_ = state::first;
  std::string gs2_header_, client_first_bare_, server_first_, nonce_, user_;
  scram_credential credential_;
};

// ------------------------------------------------------------------------------------------------ OAUTHBEARER

/// base64url without padding (RFC 7515 §2), as JWS parts are written.
std::optional<std::string> base64url_decode(std::string_view s) {
  std::string t(s);
  for (char& c : t) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
  }
  while (t.size() % 4 != 0) t += '=';
  auto b = base64_decode(t);
  if (!b) return std::nullopt;
  return std::string(b->begin(), b->end());
}

class oauthbearer_server final : public sasl_server {
 public:
  oauthbearer_server(oauthbearer_unsecured_options o, std::function<int64_t()> now_ms)
      : options_(std::move(o)), now_ms_(std::move(now_ms)) {}

  sasl_step evaluate(std::span<const uint8_t> message) override {
    if (error_sent_) {
      // RFC 7628 §3.2.3: after the error challenge the client answers with a single %x01; the exchange fails
      // with the challenge's text, as Kafka's OAuthBearerSaslServer fails it.
      sasl_step f = failed(pending_error_);
      f.log_reason = log_reason_;
      return f;
    }
    auto token = bearer_token(as_text(message));
    if (!token) {
      // An unparsable client message is Kafka's SaslException: the generic text, no challenge.
      sasl_step f = failed("Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER");
      f.log_reason = "invalid OAUTHBEARER client message";
      return f;
    }
    sasl_step s;
    bool scope_missing = false;
    if (auto r = validate(*token, s, scope_missing); !r.empty()) {
      // The unsecured validator's error (OAuthBearerUnsecuredValidatorCallbackHandler): insufficient_scope with
      // the required scope as Java prints a list, else invalid_token; sent as a JSON challenge (RFC 7628 §3.2.2).
      error_sent_ = true;
      pending_error_ = std::string(R"({"status":")") + (scope_missing ? "insufficient_scope" : "invalid_token") + "\"";
      if (scope_missing) {
        std::string scope;
        for (const auto& sc : options_.required_scope) scope += (scope.empty() ? "" : ", ") + sc;
        pending_error_ += R"(, "scope":"[)" + scope + "]\"";
      }
      pending_error_ += "}";
      log_reason_ = std::move(r);
      sasl_step challenge;
      challenge.what = sasl_step::kind::challenge;
      challenge.token = as_bytes(pending_error_);
      return challenge;
    }
    s.what = sasl_step::kind::complete;
    return s;
  }

 private:
  /// "n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]*\x01" (RFC 7628 §3.1).
  static std::optional<std::string> bearer_token(std::string_view m) {
    const size_t c1 = m.find(',');
    const size_t c2 = c1 == std::string_view::npos ? c1 : m.find(',', c1 + 1);
    if (c2 == std::string_view::npos || m.substr(0, c1) != "n") return std::nullopt;
    std::string_view rest = m.substr(c2 + 1);
    if (rest.size() < 2 || rest.front() != '\x01' || !rest.ends_with("\x01\x01")) return std::nullopt;
    rest = rest.substr(1, rest.size() - 3);
    std::optional<std::string> token;
    while (!rest.empty() || !token) {
      const size_t sep = rest.find('\x01');
      const std::string_view kv = rest.substr(0, sep);
      rest = sep == std::string_view::npos ? std::string_view{} : rest.substr(sep + 1);
      if (kv.starts_with("auth=")) {
        std::string_view v = kv.substr(5);
        if (v.size() < 7 || !(v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer ")) return std::nullopt;
        token = std::string(v.substr(7));
      }
      if (rest.empty()) break;
    }
    return token;
  }

  /// "" when valid (filling s.principal_name and s.credential_expiry_ms), else why not.
  std::string validate(const std::string& jws, sasl_step& s, bool& scope_missing) {
    const size_t d1 = jws.find('.');
    const size_t d2 = d1 == std::string::npos ? d1 : jws.find('.', d1 + 1);
    if (d2 == std::string::npos || jws.find('.', d2 + 1) != std::string::npos)
      return "the token is not an unsecured JWS of three dot-separated parts";
    if (d2 + 1 != jws.size()) return "the token has a signature: only unsecured (alg none) tokens are validated";
    auto header = base64url_decode(std::string_view(jws).substr(0, d1));
    auto payload = base64url_decode(std::string_view(jws).substr(d1 + 1, d2 - d1 - 1));
    if (!header || !payload) return "the token's header or payload is not base64url";
    boost::system::error_code ec;
    auto h = boost::json::parse(*header, ec);
    if (ec || !h.is_object()) return "the token's header is not a JSON object";
    auto c = boost::json::parse(*payload, ec);
    if (ec || !c.is_object()) return "the token's claims are not a JSON object";
    const auto* alg = h.as_object().if_contains("alg");
    if (alg == nullptr || !alg->is_string() || alg->as_string() != "none") return "the token's alg is not none";
    const auto& claims = c.as_object();
    auto number = [&](const char* name) -> std::optional<double> {
      const auto* v = claims.if_contains(name);
      if (v == nullptr || !v->is_number()) return std::nullopt;
      return v->to_number<double>();
    };
    const int64_t now = now_ms_();
    const auto exp = number("exp");
    if (!exp) return "the token has no numeric exp claim";
    const int64_t exp_ms = static_cast<int64_t>(*exp * 1000);
    if (now > exp_ms + options_.allowable_clock_skew_ms) return "the token expired";
    if (auto iat = number("iat"); iat && static_cast<int64_t>(*iat * 1000) > now + options_.allowable_clock_skew_ms)
      return "the token was issued in the future (iat)";
    const auto* sub = claims.if_contains(options_.principal_claim_name);
    if (sub == nullptr || !sub->is_string() || sub->as_string().empty())
      return "the token has no " + options_.principal_claim_name + " claim";
    if (!options_.required_scope.empty()) {
      std::vector<std::string> have;
      if (const auto* sc = claims.if_contains(options_.scope_claim_name)) {
        if (sc->is_string()) {
          std::stringstream in{std::string(sc->as_string())};
          for (std::string w; in >> w;) have.push_back(w);
        } else if (sc->is_array()) {
          for (const auto& e : sc->as_array())
            if (e.is_string()) have.emplace_back(e.as_string());
        }
      }
      for (const auto& need : options_.required_scope)
        if (std::find(have.begin(), have.end(), need) == have.end()) {
          scope_missing = true;
          return "the token lacks the required scope " + need;
        }
    }
    s.principal_name = std::string(sub->as_string());
    s.credential_expiry_ms = exp_ms;
    return {};
  }

  oauthbearer_unsecured_options options_;
  std::function<int64_t()> now_ms_;
  bool error_sent_ = false;
  std::string pending_error_;
  std::string log_reason_;
};

}  // namespace

std::unique_ptr<sasl_server> make_plain_server(std::map<std::string, std::string> users) {
  return std::make_unique<plain_server>(std::move(users));
}

std::unique_ptr<sasl_server> make_scram_server(scram_mechanism m, scram_lookup lookup) {
  return std::make_unique<scram_server>(m, std::move(lookup));
}

std::unique_ptr<sasl_server> make_oauthbearer_unsecured_server(oauthbearer_unsecured_options options,
                                                               std::function<int64_t()> now_ms) {
  return std::make_unique<oauthbearer_server>(std::move(options), std::move(now_ms));
}

}  // namespace sluice::broker::security
