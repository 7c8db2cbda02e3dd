#pragma once
// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; KIP-84): credentials, their primitives on OpenSSL, and the
// message syntax. Shared by the broker's SASL server (broker/security/) and the CLI's SASL client and `user create`.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::scram {

using bytes = std::vector<uint8_t>;

/// The two SCRAM mechanisms Kafka has, with the numbers of its ScramMechanism (AlterUserScramCredentials'
/// Mechanism field) and its iteration bounds (4096..16384).
enum class scram_mechanism : int8_t { unknown = 0, sha_256 = 1, sha_512 = 2 };
inline constexpr int32_t scram_min_iterations = 4096;
inline constexpr int32_t scram_max_iterations = 16384;

/// "SCRAM-SHA-256" or "SCRAM-SHA-512" (the SASL mechanism name and the /config/users key); "" for unknown.
std::string_view scram_mechanism_name(scram_mechanism m);
/// The mechanism of a SASL mechanism name; unknown for anything else.
scram_mechanism scram_mechanism_from_name(std::string_view name);
/// The mechanism of AlterUserScramCredentials' number; unknown for anything but 1 and 2.
scram_mechanism scram_mechanism_from_number(int8_t number);

/// What the server keeps of a password (RFC 5802 §3): never the password nor the salted password.
struct scram_credential {
  bytes salt;
  bytes stored_key;  // H(HMAC(SaltedPassword, "Client Key"))
  bytes server_key;  // HMAC(SaltedPassword, "Server Key")
  int32_t iterations = 0;
};

/// H, HMAC and Hi of `m` (Hi is PBKDF2 with HMAC-H, RFC 5802 §2.2).
bytes scram_hash(scram_mechanism m, std::span<const uint8_t> data);
bytes scram_hmac(scram_mechanism m, std::span<const uint8_t> key, std::span<const uint8_t> data);
bytes scram_salted_password(scram_mechanism m, std::string_view password, std::span<const uint8_t> salt,
                            int32_t iterations);

/// The credential of a salted password (what AlterUserScramCredentials sends) or of a password.
scram_credential scram_credential_from_salted(scram_mechanism m, std::span<const uint8_t> salt,
                                              std::span<const uint8_t> salted_password, int32_t iterations);
scram_credential scram_credential_from_password(scram_mechanism m, std::string_view password,
                                                std::span<const uint8_t> salt, int32_t iterations);

/// Kafka's stored form (ScramCredentialUtils): "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
std::string format_scram_credential(const scram_credential& c);
/// nullopt when `text` is not of that form.
std::optional<scram_credential> parse_scram_credential(std::string_view text);

/// Standard base64 with padding (RFC 4648 §4), as SCRAM messages carry salts, proofs and signatures.
std::string base64_encode(std::span<const uint8_t> data);
/// nullopt when `text` is not valid padded base64.
std::optional<bytes> base64_decode(std::string_view text);
/// `n` random bytes from OpenSSL's CSPRNG.
bytes random_bytes(size_t n);

/// The "key=value" attributes of a SCRAM message, in order (keys are one letter, extensions' longer: Kafka's
/// "tokenauth=true"); empty when an item has no '=' or an empty key.
std::vector<std::pair<std::string_view, std::string_view>> scram_attributes(std::string_view message);
/// RFC 5802 §5.1 saslname: ',' as "=2C" and '=' as "=3D"; decode gives nullopt for any other '=' escape.
std::string encode_saslname(std::string_view name);
std::optional<std::string> decode_saslname(std::string_view s);

}  // namespace sluice::scram
