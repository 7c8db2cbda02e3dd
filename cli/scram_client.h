#pragma once
// The client side of a SASL SCRAM-SHA-256/512 exchange (RFC 5802, KIP-84) for the CLI's connections, on the
// primitives and message syntax of base/scram.h (which the broker's SCRAM server uses too).
#include <string>
#include <string_view>

#include "base/scram.h"

namespace sluice::cli {

/// One client exchange: client_first(), then client_final(server_first), then verify_server_final(server_final).
/// Errors (a server nonce that does not extend ours, a bad salt or iteration count, an `e=` answer, a wrong server
/// signature) come back as a non-empty `error` of the step.
class scram_client {
 public:
  scram_client(scram::scram_mechanism m, std::string user, std::string password);

  std::string client_first();
  struct step {
    std::string message;  // to send (client_final)
    std::string error;    // non-empty: the exchange failed, and why
  };
  step client_final(std::string_view server_first);
  std::string verify_server_final(std::string_view server_final);  // empty when the server proved itself

 private:
  scram::scram_mechanism m_;
  std::string user_, password_, nonce_, client_first_bare_, auth_message_;
  scram::bytes salted_;
};

}  // namespace sluice::cli
