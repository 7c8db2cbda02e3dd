#include "cli/scram_client.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace sluice::cli {

namespace {

const EVP_MD* digest_of(const scram_mechanism& m) { return m.kafka_type == 1 ? EVP_sha256() : EVP_sha512(); }

bytes_t hmac(const scram_mechanism& m, const bytes_t& key, std::string_view data) {
  bytes_t out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  HMAC(digest_of(m), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &n);
  out.resize(n);
  return out;
}

bytes_t hash(const scram_mechanism& m, const bytes_t& data) {
  bytes_t out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &n, digest_of(m), nullptr);
  out.resize(n);
  return out;
}

/// The value of attribute `name` ("r", "s", "i", "v", "e") of a SCRAM message "a=...,b=...".
std::string attribute(std::string_view message, char name) {
  size_t pos = 0;
  while (pos < message.size()) {
    size_t comma = message.find(',', pos);
    if (comma == std::string_view::npos) comma = message.size();
    const auto part = message.substr(pos, comma - pos);
    if (part.size() >= 2 && part[0] == name && part[1] == '=') return std::string(part.substr(2));
    pos = comma + 1;
  }
  return {};
}

/// RFC 5802 §5.1 saslname: '=' as "=3D" and ',' as "=2C".
std::string saslname(std::string_view user) {
  std::string out;
  for (char c : user) {
    if (c == '=') out += "=3D";
    else if (c == ',') out += "=2C";
    else out += c;
  }
  return out;
}

}  // namespace

scram_mechanism scram_mechanism::named(std::string_view name) {
  if (name == "SCRAM-SHA-256") return {"SCRAM-SHA-256", 1, true};
  if (name == "SCRAM-SHA-512") return {"SCRAM-SHA-512", 2, true};
  return {std::string(name), 0, false};
}

bytes_t scram_salted_password(const scram_mechanism& m, std::string_view password, const bytes_t& salt, int iterations) {
  bytes_t out(static_cast<size_t>(EVP_MD_get_size(digest_of(m))));
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt.data(), static_cast<int>(salt.size()),
                        iterations, digest_of(m), static_cast<int>(out.size()), out.data()) != 1)
    throw std::runtime_error("PBKDF2 failed");
  return out;
}

bytes_t random_bytes(size_t n) {
  bytes_t out(n);
  if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
  return out;
}

std::string base64_encode(const bytes_t& data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bytes_t base64_decode(std::string_view text, bool& ok) {
  ok = false;
  if (text.size() % 4 != 0) return {};
  bytes_t out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return {};
  size_t size = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the '=' padding as zero bytes.
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) --size;
  out.resize(size);
  ok = true;
  return out;
}

scram_client::scram_client(scram_mechanism m, std::string user, std::string password)
    : m_(std::move(m)), user_(std::move(user)), password_(std::move(password)) {}

std::string scram_client::client_first() {
  nonce_ = base64_encode(random_bytes(24));
  client_first_bare_ = "n=" + saslname(user_) + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

scram_client::step scram_client::client_final(std::string_view server_first) {
  if (auto e = attribute(server_first, 'e'); !e.empty()) return {{}, "the broker refused the user: " + e};
  const std::string nonce = attribute(server_first, 'r');
  const std::string salt_text = attribute(server_first, 's');
  const std::string iterations_text = attribute(server_first, 'i');
  if (nonce.size() <= nonce_.size() || nonce.compare(0, nonce_.size(), nonce_) != 0)
    return {{}, "the broker's nonce does not extend the client's"};
  bool ok = false;
  const bytes_t salt = base64_decode(salt_text, ok);
  if (!ok || salt.empty()) return {{}, "the broker sent a malformed salt"};
  int iterations = 0;
  for (char c : iterations_text) {
    if (c < '0' || c > '9' || iterations > 100000000) return {{}, "the broker sent a malformed iteration count"};
    iterations = iterations * 10 + (c - '0');
  }
  if (iterations < 1) return {{}, "the broker sent a malformed iteration count"};
  salted_ = scram_salted_password(m_, password_, salt, iterations);
  const std::string without_proof = "c=biws,r=" + nonce;  // biws: base64("n,,"), no channel binding
  auth_message_ = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const bytes_t client_key = hmac(m_, salted_, "Client Key");
  const bytes_t stored_key = hash(m_, client_key);
  const bytes_t signature = hmac(m_, stored_key, auth_message_);
  bytes_t proof = client_key;
  for (size_t i = 0; i < proof.size(); ++i) proof[i] ^= signature[i];
  return {without_proof + ",p=" + base64_encode(proof), {}};
}

std::string scram_client::verify_server_final(std::string_view server_final) {
  if (auto e = attribute(server_final, 'e'); !e.empty()) return "the broker refused the proof: " + e;
  const bytes_t server_key = hmac(m_, salted_, "Server Key");
  const std::string want = base64_encode(hmac(m_, server_key, auth_message_));
  if (attribute(server_final, 'v') != want) return "the broker's signature is wrong (it does not know the password)";
  return {};
}

}  // namespace sluice::cli
