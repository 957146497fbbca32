// Compile-time rules, checked as concepts and requires-expressions (the negative cases with their messages are in
// tests/compile_fail).
#include <symm/symm.hpp>

#include <array>
#include <string>
#include <vector>

#include "catch.hpp"

namespace {
struct plain {
  int a;
  float b;
};
struct owning {
  std::string s;
};
struct has_pointer {
  int* p;
};
template <class A, class Pe>
concept remotable = requires(A& a, Pe pe) {
  symm::remote(a, pe).size();
};
template <class S, class R>
concept puttable = requires(const S& s, R&& r) {
  s = std::forward<R>(r);
};
template <class S, class R>
concept gettable = requires(const S& s, R& r) {
  s.get(r);
};
template <class R>
concept compound_assignable = requires(R r) {
  r += 1;
};
template <class R>
concept incrementable = requires(R r) {
  ++r;
};
template <class R>
concept post_incrementable = requires(R r) {
  r++;
};
template <class R, class V>
concept assignable_from = requires(R r, V v) {
  r = v;
};
} // namespace

template <>
inline constexpr bool symm::enable_transportable<has_pointer> = false;

TEST_CASE("element types must be transportable", "[concepts]") {
  STATIC_REQUIRE(symm::transportable<int>);
  STATIC_REQUIRE(symm::transportable<plain>);
  STATIC_REQUIRE(symm::transportable<const double>);
  STATIC_REQUIRE_FALSE(symm::transportable<owning>);
  STATIC_REQUIRE_FALSE(symm::transportable<std::vector<int>>);
  STATIC_REQUIRE_FALSE(symm::transportable<has_pointer>); // opted out
  STATIC_REQUIRE_FALSE(symm::transportable<int&>);
  STATIC_REQUIRE_FALSE(symm::transportable<void>);
}

TEST_CASE("only symmetric objects are symmetric_object", "[concepts]") {
  STATIC_REQUIRE(symm::symmetric_object<symm::array<int>>);
  STATIC_REQUIRE(symm::symmetric_object<const symm::array<int, 4>&>);
  STATIC_REQUIRE(symm::symmetric_object<symm::scalar<double>>);
  STATIC_REQUIRE(symm::symmetric_object<symm::array_ref<float>>);
  STATIC_REQUIRE_FALSE(symm::symmetric_object<int*>);
  STATIC_REQUIRE_FALSE(symm::symmetric_object<std::vector<int>>);
  STATIC_REQUIRE_FALSE(symm::symmetric_object<cuda::std::span<int>>);
  STATIC_REQUIRE(remotable<symm::array<int>, int>);
}

TEST_CASE("puts and gets accept matching ranges and reject the rest", "[concepts]") {
  using span_int = symm::pe_span<int>;
  using span_5 = symm::pe_span<int, 5>;
  using span_const = symm::pe_span<const int>;
  STATIC_REQUIRE(puttable<span_int, std::vector<int>&>);
  STATIC_REQUIRE(puttable<span_int, cuda::std::span<int>>);
  STATIC_REQUIRE(puttable<span_5, std::array<int, 5>&>);
  STATIC_REQUIRE(gettable<span_int, std::vector<int>>);
  STATIC_REQUIRE(gettable<span_const, std::vector<int>>);
  // What is refused is refused by these concepts: a put or get with another range meets a catch-all overload whose
  // static_assert says what to write (tests/compile_fail checks it is the first error), so the expressions above are
  // well-formed to a requires-expression; generic code asks contiguous_range_of, as the overloads do.
  STATIC_REQUIRE(symm::contiguous_range_of<std::vector<int>&, int>);
  STATIC_REQUIRE(symm::contiguous_range_of<const std::array<int, 5>&, const int>);
  STATIC_REQUIRE_FALSE(symm::contiguous_range_of<std::vector<float>&, int>); // element types must match exactly
  STATIC_REQUIRE_FALSE(symm::contiguous_range_of<int, int>);
  STATIC_REQUIRE_FALSE(symm::contiguous_range_of<symm::array<int>&, int>); // .local() forgotten
  STATIC_REQUIRE(symm::writable_contiguous_range_of<std::vector<int>&, int>);
  STATIC_REQUIRE_FALSE(symm::writable_contiguous_range_of<const std::vector<int>&, int>); // cannot get into const data
  STATIC_REQUIRE(std::is_convertible_v<span_int, span_const>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<span_const, span_int>);
}

TEST_CASE("pe_ref: assignment is a put, conversion a get, and nothing hides a read-modify-write", "[concepts]") {
  using ref = symm::pe_ref<int>;
  using cref = symm::pe_ref<const int>;
  STATIC_REQUIRE(assignable_from<ref, int>);
  STATIC_REQUIRE(std::is_convertible_v<ref, int>);
  STATIC_REQUIRE(std::is_convertible_v<cref, int>);
  STATIC_REQUIRE_FALSE(assignable_from<cref, int>);
  STATIC_REQUIRE_FALSE(assignable_from<ref, ref>); // remote-to-remote would be a hidden get + put
  STATIC_REQUIRE_FALSE(compound_assignable<ref>);
  STATIC_REQUIRE_FALSE(incrementable<ref>);
  STATIC_REQUIRE_FALSE(post_incrementable<ref>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<ref>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::pe_span<double>>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::array_ref<double>>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::scalar_ref<double>>);
  // Owning and collective: move-only, their deleted copy constructor naming the view (kernel_takes_array.cu).
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::array<int>>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::scalar<int>>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::signal>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::signal_array>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::team>);
  STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<symm::scalar<int>>);
  STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<symm::signal>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<symm::array<int>>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<symm::scalar<int>>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<symm::signal>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<symm::signal_array>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<symm::team>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<symm::scalar<int>>);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<symm::signal>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<symm::future<>>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<symm::barrier_scope>);
}

// symm/format.hpp: a view prints its kind, its extent (`dynamic` for symm::dynamic_extent, never 18446744073709551615),
// its size, and the PE of a remote one. The views are made by hand here: formatting needs no world.
TEST_CASE("views format as kind<extent>{...}, a dynamic extent as `dynamic`", "[concepts][format]") {
  alignas(16) std::byte heap[64] = {};
  std::byte* peers[2] = {heap, heap};
  const symm::array_ref<float> dynamic_local(nullptr, peers, peers, 16, 4, 1, 2);
  const symm::array_ref<float, 4> static_local(nullptr, peers, peers, 16, 4, 1, 2);
  const symm::array_ref<const double, 1> one(nullptr, peers, peers, 32, 1, 0, 2);
  CHECK(fmt::format("{}", dynamic_local) == "array_ref<dynamic>{4 elements, heap offset 16}");
  CHECK(fmt::format("{}", static_local) == "array_ref<4>{4 elements, heap offset 16}");
  CHECK(fmt::format("{}", one) == "array_ref<1>{1 element, heap offset 32}");

  int elements[16] = {};
  const symm::pe_span<int> dynamic_remote(elements, 16, 1, nullptr);
  const symm::pe_span<const int, 16> static_remote(elements, 16, 3, nullptr);
  CHECK(fmt::format("{}", dynamic_remote) == "pe_span<dynamic>{PE 1, 16 elements}");
  CHECK(fmt::format("{}", static_remote) == "pe_span<16>{PE 3, 16 elements}");
  CHECK(fmt::format("{}", dynamic_remote.first<2>()) == "pe_span<2>{PE 1, 2 elements}");
  CHECK(fmt::format("{}", static_remote.subspan(15)) == "pe_span<dynamic>{PE 3, 1 element}");
  CHECK(fmt::format("{} and {}", symm::detail::extent_name(symm::dynamic_extent), symm::detail::extent_name(7)) ==
        "dynamic and 7");

  STATIC_REQUIRE(symm::detail::extent_name(symm::dynamic_extent).view() == "dynamic");
  STATIC_REQUIRE(symm::detail::extent_name(0).view() == "0");
  STATIC_REQUIRE(symm::detail::extent_name(16).view() == "16");
  STATIC_REQUIRE(symm::detail::extent_name(symm::dynamic_extent - 1).view() == "18446744073709551614");
}
