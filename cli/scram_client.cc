#include "cli/scram_client.h"

#include <charconv>

namespace sluice::cli {

namespace {

using namespace sluice::scram;

/// The value of attribute `name` ("r", "s", "i", "v", "e") of a SCRAM message; empty when it has none.
std::string_view attribute(std::string_view message, std::string_view name) {
  for (const auto& [k, v] : scram_attributes(message))
    if (k == name) return v;
  return {};
}

std::span<const uint8_t> as_bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

scram_client::scram_client(scram::scram_mechanism m, std::string user, std::string password)
    : m_(m), user_(std::move(user)), password_(std::move(password)) {}

std::string scram_client::client_first() {
  nonce_ = base64_encode(random_bytes(24));
  client_first_bare_ = "n=" + encode_saslname(user_) + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

scram_client::step scram_client::client_final(std::string_view server_first) {
  if (auto e = attribute(server_first, "e"); !e.empty()) return {{}, "the broker refused the user: " + std::string(e)};
  const std::string_view nonce = attribute(server_first, "r");
  if (nonce.size() <= nonce_.size() || !nonce.starts_with(nonce_)) return {{}, "the broker's nonce does not extend the client's"};
  const auto salt = base64_decode(attribute(server_first, "s"));
  if (!salt || salt->empty()) return {{}, "the broker sent a malformed salt"};
  const std::string_view iterations_text = attribute(server_first, "i");
  int32_t iterations = 0;
  const auto [end, ec] = std::from_chars(iterations_text.data(), iterations_text.data() + iterations_text.size(), iterations);
  if (ec != std::errc() || end != iterations_text.data() + iterations_text.size() || iterations < 1)
    return {{}, "the broker sent a malformed iteration count"};
  salted_ = scram_salted_password(m_, password_, *salt, iterations);
  const std::string without_proof = "c=biws,r=" + std::string(nonce);  // biws: base64("n,,"), no channel binding
  auth_message_ = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const bytes client_key = scram_hmac(m_, salted_, as_bytes("Client Key"));
  const bytes signature = scram_hmac(m_, scram_hash(m_, client_key), as_bytes(auth_message_));
  bytes proof = client_key;
  for (size_t i = 0; i < proof.size(); ++i) proof[i] ^= signature[i];
  return {without_proof + ",p=" + base64_encode(proof), {}};
}

std::string scram_client::verify_server_final(std::string_view server_final) {
  if (auto e = attribute(server_final, "e"); !e.empty()) return "the broker refused the proof: " + std::string(e);
  const bytes server_key = scram_hmac(m_, salted_, as_bytes("Server Key"));
  if (attribute(server_final, "v") != base64_encode(scram_hmac(m_, server_key, as_bytes(auth_message_))))
    return "the broker's signature is wrong (it does not know the password)";
  return {};
}

}  // namespace sluice::cli
