#pragma once
// SCRAM (RFC 5802, RFC 7677) for the CLI: the client side of a SASL SCRAM-SHA-256/512 exchange (KIP-84), and the
// salted password of a new credential (AlterUserScramCredentials, KIP-554). The primitives are OpenSSL's: PBKDF2
// (PKCS5_PBKDF2_HMAC), HMAC, the digests, base64 and RAND_bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::cli {

using bytes_t = std::vector<uint8_t>;

/// SCRAM-SHA-256 or SCRAM-SHA-512 by name; `ok` false for any other name.
struct scram_mechanism {
  std::string name;
  int8_t kafka_type = 0;  // the ScramMechanism of KIP-554: 1 SHA-256, 2 SHA-512
  bool ok = false;
  static scram_mechanism named(std::string_view name);
};

/// Hi(password, salt, iterations) of RFC 5802 §2.2: PBKDF2 with HMAC of the mechanism's hash.
bytes_t scram_salted_password(const scram_mechanism& m, std::string_view password, const bytes_t& salt, int iterations);
/// `n` random bytes (RAND_bytes).
bytes_t random_bytes(size_t n);

/// One client exchange: client_first(), then client_final(server_first), then verify_server_final(server_final).
/// Errors (a server nonce that does not extend ours, a bad salt or iteration count, an `e=` answer, a wrong server
/// signature) come back as a non-empty `error` of the step.
class scram_client {
 public:
  scram_client(scram_mechanism m, std::string user, std::string password);

  std::string client_first();
  struct step {
    std::string message;  // to send (client_final)
    std::string error;    // non-empty: the exchange failed, and why
  };
  step client_final(std::string_view server_first);
  std::string verify_server_final(std::string_view server_final);  // empty when the server proved itself

 private:
  scram_mechanism m_;
  std::string user_, password_, nonce_, client_first_bare_, auth_message_;
  bytes_t salted_;
};

std::string base64_encode(const bytes_t& data);
/// Empty optional-like: `ok` false on malformed input.
bytes_t base64_decode(std::string_view text, bool& ok);

}  // namespace sluice::cli
