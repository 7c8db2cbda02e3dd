#pragma once
// The SCRAM primitives and message syntax are in base/scram.h (the CLI's SASL client uses them too); the broker's
// security code and its handlers name them as broker::security::...
#include "base/scram.h"

namespace sluice::broker::security {

using scram::base64_decode;
using scram::base64_encode;
using scram::bytes;
using scram::decode_saslname;
using scram::format_scram_credential;
using scram::parse_scram_credential;
using scram::random_bytes;
using scram::scram_attributes;
using scram::scram_credential;
using scram::scram_credential_from_password;
using scram::scram_credential_from_salted;
using scram::scram_hash;
using scram::scram_hmac;
using scram::scram_max_iterations;
using scram::scram_mechanism;
using scram::scram_mechanism_from_name;
using scram::scram_mechanism_from_number;
using scram::scram_mechanism_name;
using scram::scram_min_iterations;
using scram::scram_salted_password;

}  // namespace sluice::broker::security
