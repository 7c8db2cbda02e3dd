#pragma once
// result<T>: a value or an error, for failures that are data (bad input, missing file), not bugs.
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace sluice {

/// Errors with no code of their own: a failure whose message says everything (startup, configuration,
/// a peer connection, a malformed internal record). Nothing branches on them; should one ever reach the
/// broker's error_map it becomes UNKNOWN_SERVER_ERROR.
enum class base_errc : int { failed = 1 };

/// The std::error_category of base_errc ("sluice").
inline const std::error_category& base_category() noexcept {
  struct category final : std::error_category {
    const char* name() const noexcept override { return "sluice"; }
    std::string message(int v) const override { return v == 1 ? "failed" : "unknown"; }
  };
  static const category instance;
  return instance;
}

inline std::error_code make_error_code(base_errc e) noexcept { return {static_cast<int>(e), base_category()}; }

}  // namespace sluice

template <>
struct std::is_error_code_enum<sluice::base_errc> : std::true_type {};

namespace sluice {

/// An error as data: a typed code (std::error_code; each layer has its own category, e.g. storage::errc,
/// so codes of different layers never compare equal) and a human-readable message for the log.
/// Compare with the layer's enum: `e.code == storage::errc::not_found`. Kafka codes come from the
/// broker's error_map, the one place that reads every category.
struct error {
  std::error_code code;
  std::string message;
};

template <typename T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  result(error e) : v_(std::move(e)) {}                 // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const error& err() const { return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(error e) : e_(std::move(e)), ok_(false) {}     // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const error& err() const { return e_; }

 private:
  error e_;
  bool ok_ = true;
};

}  // namespace sluice
