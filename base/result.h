#pragma once
// result<T>: a value or an error, for failures that are data (bad input, missing file), not bugs.
#include <string>
#include <utility>
#include <variant>

namespace sluice {

/// An error as data: a numeric code owned by the layer that produced it (e.g. storage::errc), and a
/// human-readable message for the log.
struct error {
  int code = 0;
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
