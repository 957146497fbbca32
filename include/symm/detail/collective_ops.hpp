// symm/detail/collective_ops.hpp: the reduction operations of symm/collectives.hpp (symm::plus, ..., bit_xor), the
// traits that say which element types each accepts, and how symm recognises the standard library's and CCCL's
// function objects. Users include symm/collectives.hpp.
#pragma once

#include <symm/detail/config.hpp>

#include <cuda/functional>
#include <cuda/std/functional>

#include <concepts>
#include <functional>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! Whether plus, multiplies, min and max reduce T: arithmetic types other than bool. Specialise it to true for another
//! type that has +, * and < (__half, say, in device code).
template <class T>
inline constexpr bool enable_arithmetic_reduction = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
//! Whether bit_and, bit_or and bit_xor reduce T: integral types (bool included). Specialise it for another type.
template <class T>
inline constexpr bool enable_bitwise_reduction = std::is_integral_v<T>;

namespace detail {
template <class T>
concept arithmetic_reducible = enable_arithmetic_reduction<std::remove_cv_t<T>>;
template <class T>
concept bitwise_reducible = enable_bitwise_reduction<std::remove_cv_t<T>>;
} // namespace detail

//! a + b. The reductions' function objects take two elements of one type and return one; a wrong element type (bit_and
//! on float) does not compile. cuda::std::plus<>, std::plus<> and the like are accepted as well.
struct plus {
  template <detail::arithmetic_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return static_cast<T>(a + b);
  }
};
//! a * b.
struct multiplies {
  template <detail::arithmetic_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return static_cast<T>(a * b);
  }
};
//! The smaller of a and b, as std::min: a when neither is smaller (so a NaN in a wins, one in b does not).
struct min {
  template <detail::arithmetic_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};
//! The larger of a and b, as std::max.
struct max {
  template <detail::arithmetic_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};
//! a & b (integral types).
struct bit_and {
  template <detail::bitwise_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return static_cast<T>(a & b);
  }
};
//! a | b (integral types).
struct bit_or {
  template <detail::bitwise_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return static_cast<T>(a | b);
  }
};
//! a ^ b (integral types).
struct bit_xor {
  template <detail::bitwise_reducible T>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return static_cast<T>(a ^ b);
  }
};

namespace detail {

//! Which operation a function object is, for messages and for the check that every PE reduces alike.
enum class op_code : int { none = 0, plus, multiplies, min, max, bit_and, bit_or, bit_xor, user };

//! The operation of the collectives that do not reduce (broadcast, fcollect, alltoall): the first value.
struct no_op {
  template <class T>
  SYMM_HOST_DEVICE constexpr T operator()(const T& a, const T&) const {
    return a;
  }
};

template <class Op>
struct op_info : std::integral_constant<op_code, op_code::user> {};
template <>
struct op_info<no_op> : std::integral_constant<op_code, op_code::none> {};
template <>
struct op_info<symm::plus> : std::integral_constant<op_code, op_code::plus> {};
template <>
struct op_info<symm::multiplies> : std::integral_constant<op_code, op_code::multiplies> {};
template <>
struct op_info<symm::min> : std::integral_constant<op_code, op_code::min> {};
template <>
struct op_info<symm::max> : std::integral_constant<op_code, op_code::max> {};
template <>
struct op_info<symm::bit_and> : std::integral_constant<op_code, op_code::bit_and> {};
template <>
struct op_info<symm::bit_or> : std::integral_constant<op_code, op_code::bit_or> {};
template <>
struct op_info<symm::bit_xor> : std::integral_constant<op_code, op_code::bit_xor> {};
template <class T>
struct op_info<std::plus<T>> : std::integral_constant<op_code, op_code::plus> {};
template <class T>
struct op_info<std::multiplies<T>> : std::integral_constant<op_code, op_code::multiplies> {};
template <class T>
struct op_info<std::bit_and<T>> : std::integral_constant<op_code, op_code::bit_and> {};
template <class T>
struct op_info<std::bit_or<T>> : std::integral_constant<op_code, op_code::bit_or> {};
template <class T>
struct op_info<std::bit_xor<T>> : std::integral_constant<op_code, op_code::bit_xor> {};
template <class T>
struct op_info<cuda::std::plus<T>> : std::integral_constant<op_code, op_code::plus> {};
template <class T>
struct op_info<cuda::std::multiplies<T>> : std::integral_constant<op_code, op_code::multiplies> {};
template <class T>
struct op_info<cuda::std::bit_and<T>> : std::integral_constant<op_code, op_code::bit_and> {};
template <class T>
struct op_info<cuda::std::bit_or<T>> : std::integral_constant<op_code, op_code::bit_or> {};
template <class T>
struct op_info<cuda::std::bit_xor<T>> : std::integral_constant<op_code, op_code::bit_xor> {};
template <class T>
struct op_info<cuda::minimum<T>> : std::integral_constant<op_code, op_code::min> {};
template <class T>
struct op_info<cuda::maximum<T>> : std::integral_constant<op_code, op_code::max> {};

template <class Op>
inline constexpr op_code op_code_of = op_info<std::remove_cvref_t<Op>>::value;
template <class Op>
inline constexpr bool is_bitwise_op =
    op_code_of<Op> == op_code::bit_and || op_code_of<Op> == op_code::bit_or || op_code_of<Op> == op_code::bit_xor;
template <class Op>
inline constexpr bool is_arithmetic_op =
    op_code_of<Op> == op_code::plus || op_code_of<Op> == op_code::multiplies || op_code_of<Op> == op_code::min ||
    op_code_of<Op> == op_code::max;

} // namespace detail

//! What a reduction accepts as its operation on elements of T: op(a, b) for two T, giving a T. symm folds the PEs'
//! values in team order, v0 op v1 op ... op v(n-1), the same order on every PE and in every run (so every PE gets the
//! same bits, and op need not be commutative); a user's operation must be associative, because later algorithms
//! (trees over many nodes) may group the terms differently.
template <class Op, class T>
concept reduction_operation = std::copy_constructible<Op> && std::invocable<const Op&, const T&, const T&> &&
    std::convertible_to<std::invoke_result_t<const Op&, const T&, const T&>, T>;

namespace detail {
//! Checks op against T with a message that says the rule; true when the reduction may be instantiated.
template <class Op, class T>
SYMM_HOST_DEVICE constexpr bool check_reduction() {
  if constexpr (is_bitwise_op<Op>) {
    static_assert(enable_bitwise_reduction<T>,
                  "symm reduction: bit_and, bit_or and bit_xor reduce integral element types only (a float has no "
                  "bitwise and); specialise symm::enable_bitwise_reduction<T> to allow another type");
    return enable_bitwise_reduction<T>;
  } else if constexpr (is_arithmetic_op<Op>) {
    static_assert(enable_arithmetic_reduction<T>,
                  "symm reduction: plus, multiplies, min and max reduce arithmetic element types other than bool; "
                  "specialise symm::enable_arithmetic_reduction<T> to allow another type");
    return enable_arithmetic_reduction<T> && reduction_operation<Op, T>;
  } else {
    static_assert(reduction_operation<Op, T>,
                  "symm reduction: the operation must be callable as op(a, b) on two elements of the arrays' element "
                  "type T, with a result convertible to T (symm::reduction_operation<Op, T>)");
    return reduction_operation<Op, T>;
  }
}
} // namespace detail

SYMM_END_NAMESPACE
