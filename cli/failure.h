#pragma once
// How a CLI command ends when it cannot do its job: a `failure` carries the process exit code and the
// message printed on stderr ("sluice: <message>"). Commands throw it; run_cli (cli.cc) catches it at the
// top, so a command reads as its happy path. The CLI is a short-lived process: a thrown failure always ends
// it, it is never a branch inside the program (the broker's rule "errors as data" is about long-lived state).
#include <optional>
#include <stdexcept>
#include <string>

#include "protocol/error_code.h"

namespace sluice::cli {

/// The exit codes scripts may rely on (cli/README.md).
enum class exit_code : int {
  ok = 0,
  kafka_error = 1,     // a broker answered with a Kafka error (its name is in the message)
  usage = 2,           // bad arguments: unknown command or option, missing or malformed value
  cannot_connect = 3,  // no broker reachable, a connection lost or a request timed out
};

class failure : public std::runtime_error {
 public:
  failure(exit_code code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  exit_code code() const { return code_; }

 private:
  exit_code code_;
};

[[noreturn]] inline void usage_error(std::string message) { throw failure(exit_code::usage, std::move(message)); }

/// A Kafka error as text: "TOPIC_ALREADY_EXISTS: Topic 'x' already exists." (the broker's message when it
/// sent one, else the name alone).
inline std::string kafka_error_text(protocol::error_code code, const std::optional<std::string>& message) {
  std::string text(protocol::error_name(code));
  if (message && !message->empty()) text += ": " + *message;
  return text;
}

[[noreturn]] inline void kafka_failure(protocol::error_code code, const std::optional<std::string>& message,
                                       const std::string& context = {}) {
  std::string text = kafka_error_text(code, message);
  if (!context.empty()) text = context + ": " + text;
  throw failure(exit_code::kafka_error, std::move(text));
}

}  // namespace sluice::cli
