#include "base/scram.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <stdexcept>

namespace sluice::scram {

namespace {
const EVP_MD* digest(scram_mechanism m) { return m == scram_mechanism::sha_512 ? EVP_sha512() : EVP_sha256(); }

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

std::string_view scram_mechanism_name(scram_mechanism m) {
  switch (m) {
    case scram_mechanism::sha_256: return "SCRAM-SHA-256";
    case scram_mechanism::sha_512: return "SCRAM-SHA-512";
    default: return "";
  }
}

scram_mechanism scram_mechanism_from_name(std::string_view name) {
  if (name == "SCRAM-SHA-256") return scram_mechanism::sha_256;
  if (name == "SCRAM-SHA-512") return scram_mechanism::sha_512;
  return scram_mechanism::unknown;
}

scram_mechanism scram_mechanism_from_number(int8_t number) {
  if (number == 1) return scram_mechanism::sha_256;
  if (number == 2) return scram_mechanism::sha_512;
  return scram_mechanism::unknown;
}

bytes scram_hash(scram_mechanism m, std::span<const uint8_t> data) {
  bytes out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &n, digest(m), nullptr) != 1)
    throw std::runtime_error("EVP_Digest failed");
  out.resize(n);
  return out;
}

bytes scram_hmac(scram_mechanism m, std::span<const uint8_t> key, std::span<const uint8_t> data) {
  bytes out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  if (HMAC(digest(m), key.data(), static_cast<int>(key.size()), data.data(), data.size(), out.data(), &n) == nullptr)
    throw std::runtime_error("HMAC failed");
  out.resize(n);
  return out;
}

bytes scram_salted_password(scram_mechanism m, std::string_view password, std::span<const uint8_t> salt,
                            int32_t iterations) {
  bytes out(static_cast<size_t>(EVP_MD_get_size(digest(m))));
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt.data(), static_cast<int>(salt.size()),
                        iterations, digest(m), static_cast<int>(out.size()), out.data()) != 1)
    throw std::runtime_error("PBKDF2 failed");
  return out;
}

scram_credential scram_credential_from_salted(scram_mechanism m, std::span<const uint8_t> salt,
                                              std::span<const uint8_t> salted_password, int32_t iterations) {
  scram_credential c;
  c.salt.assign(salt.begin(), salt.end());
  c.stored_key = scram_hash(m, scram_hmac(m, salted_password, as_bytes("Client Key")));
  c.server_key = scram_hmac(m, salted_password, as_bytes("Server Key"));
  c.iterations = iterations;
  return c;
}

scram_credential scram_credential_from_password(scram_mechanism m, std::string_view password,
                                                std::span<const uint8_t> salt, int32_t iterations) {
  const bytes salted = scram_salted_password(m, password, salt, iterations);
  return scram_credential_from_salted(m, salt, salted, iterations);
}

std::string format_scram_credential(const scram_credential& c) {
  return "salt=" + base64_encode(c.salt) + ",stored_key=" + base64_encode(c.stored_key) +
         ",server_key=" + base64_encode(c.server_key) + ",iterations=" + std::to_string(c.iterations);
}

std::optional<scram_credential> parse_scram_credential(std::string_view text) {
  scram_credential c;
  bool salt = false, stored = false, server = false, iterations = false;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "iterations") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), c.iterations);
      if (ec != std::errc() || p != value.data() + value.size()) return std::nullopt;
      iterations = true;
      continue;
    }
    auto decoded = base64_decode(value);
    if (!decoded) return std::nullopt;
    if (key == "salt") c.salt = std::move(*decoded), salt = true;
    else if (key == "stored_key") c.stored_key = std::move(*decoded), stored = true;
    else if (key == "server_key") c.server_key = std::move(*decoded), server = true;
  }
  if (!salt || !stored || !server || !iterations) return std::nullopt;
  return c;
}

std::string base64_encode(std::span<const uint8_t> data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<bytes> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    const bool pad = c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alnum && !pad) return std::nullopt;
  }
  bytes out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t size = static_cast<size_t>(n);
  // EVP_DecodeBlock counts padding as zero bytes.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> scram_attributes(std::string_view s) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return {};
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

std::string encode_saslname(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '=') out += "=3D";
    else if (c == ',') out += "=2C";
    else out += c;
  }
  return out;
}

std::optional<std::string> decode_saslname(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out += s[i];
      continue;
    }
    if (s.substr(i, 3) == "=2C") out += ',';
    else if (s.substr(i, 3) == "=3D") out += '=';
    else return std::nullopt;
    i += 2;
  }
  return out;
}

bytes random_bytes(size_t n) {
  bytes out(n);
  if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
  return out;
}

}  // namespace sluice::scram
