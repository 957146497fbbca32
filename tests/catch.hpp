// tests/catch.hpp: Catch2 for symm's tests, version 3 or 2.13, whichever is installed.
// Include this, never <catch2/...> directly. SYMM_CATCH2_VERSION is 3 or 2. symm_test::contains_substring(text)
// is the string matcher under either version (v3 ContainsSubstring, v2 Contains).
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_template_test_macros.hpp>
#  include <catch2/catch_test_macros.hpp>
#  include <catch2/generators/catch_generators.hpp>
#  include <catch2/generators/catch_generators_adapters.hpp>
#  include <catch2/generators/catch_generators_range.hpp>
#  include <catch2/matchers/catch_matchers.hpp>
#  include <catch2/matchers/catch_matchers_exception.hpp>
#  include <catch2/matchers/catch_matchers_floating_point.hpp>
#  include <catch2/matchers/catch_matchers_predicate.hpp>
#  include <catch2/matchers/catch_matchers_string.hpp>
#  include <catch2/matchers/catch_matchers_vector.hpp>
#  define SYMM_CATCH2_VERSION 3
#else
#  include <catch2/catch.hpp>
#  define SYMM_CATCH2_VERSION 2
#endif

#include <string>

namespace symm_test {
//! Matches a string (or an exception's message, with REQUIRE_THROWS_WITH) that contains `text`.
inline auto contains_substring(const std::string& text) {
#if SYMM_CATCH2_VERSION == 3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Matchers::Contains(text);
#endif
}
} // namespace symm_test
