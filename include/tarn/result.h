// result<T, E>: a value or an error, never an exception (a subset of C++23 std::expected, which
// C++20 lacks). The client library returns it, and it is the error type of every fallible
// function on the broker's request path (src/base/result.h). Standard headers only.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace tarn {

template <typename E>
struct failure {
  E error;
};

// fail(e) builds the error side of any result<T, E>.
template <typename E>
failure<std::decay_t<E>> fail(E&& e) {
  return {std::forward<E>(e)};
}

template <typename T, typename E>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  template <typename G>
  result(failure<G> f) : v_(std::in_place_index<1>, std::move(f.error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, E> v_;
};

// result<void, E>: success carries nothing.
template <typename E>
class [[nodiscard]] result<void, E> {
 public:
  result() = default;
  template <typename G>
  result(failure<G> f) : error_(std::move(f.error)), ok_(false) {}  // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace tarn
