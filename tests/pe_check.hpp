// tests/pe_check.hpp: assertions for code that runs inside PEs (forked processes or threads), where Catch2's macros
// are not usable (not thread-safe; a forked child's result never reaches the parent's report). A failed check throws;
// symm::launch turns that into an error naming the PE, which the test's REQUIRE_NOTHROW reports.
#pragma once

#include <symm/symm.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#define PE_REQUIRE(...)                                                                                                \
  do {                                                                                                                 \
    if (!(__VA_ARGS__)) {                                                                                              \
      throw std::runtime_error(::fmt::format("{}:{}: PE_REQUIRE({}) failed", __FILE__, __LINE__, #__VA_ARGS__));       \
    }                                                                                                                  \
  } while (0)

#define PE_REQUIRE_EQ(a, b)                                                                                            \
  do {                                                                                                                 \
    auto&& pe_lhs_ = (a);                                                                                              \
    auto&& pe_rhs_ = (b);                                                                                              \
    if (!(pe_lhs_ == pe_rhs_)) {                                                                                       \
      throw std::runtime_error(::fmt::format(                                                                          \
          "{}:{}: PE_REQUIRE_EQ({}, {}) failed: {} != {}", __FILE__, __LINE__, #a, #b, pe_lhs_, pe_rhs_));             \
    }                                                                                                                  \
  } while (0)

//! Runs `body` and requires that it throws symm::error with `code` and a message containing every one of `parts`.
template <class Body>
void pe_require_error(Body&& body, symm::errc code, std::initializer_list<std::string> parts, const char* where) {
  try {
    body();
  } catch (const symm::error& e) {
    if (e.code() != code) {
      throw std::runtime_error(fmt::format("{}: expected errc::{}, got errc::{}: {}", where, symm::to_string(code),
                                           symm::to_string(e.code()), e.what()));
    }
    for (const auto& part : parts) {
      if (std::string(e.what()).find(part) == std::string::npos) {
        throw std::runtime_error(fmt::format("{}: message lacks '{}': {}", where, part, e.what()));
      }
    }
    return;
  }
  throw std::runtime_error(
      fmt::format("{}: expected symm::error errc::{}, nothing was thrown", where, symm::to_string(code)));
}
#define PE_REQUIRE_ERROR(body, code, ...)                                                                              \
  pe_require_error([&] { body; }, code, {__VA_ARGS__}, __FILE__ ":" SYMM_TEST_STR(__LINE__))
#define SYMM_TEST_STR2(x) #x
#define SYMM_TEST_STR(x) SYMM_TEST_STR2(x)

namespace symm_test {

//! Fresh random values every run, different per PE and per call; the seed goes into failure messages via `seed()`.
inline std::uint64_t seed() {
  static const std::uint64_t s = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  return s;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t stream) {
  std::mt19937_64 gen(seed() ^ (stream * 0xD1B54A32D192ED03ull));
  std::vector<T> out(n);
  for (auto& v : out) {
    std::uniform_real_distribution<double> real(-1e6, 1e6);
    if constexpr (std::is_floating_point_v<T>) v = static_cast<T>(real(gen));
    else if constexpr (requires {
                         typename T::value_type;
                         T(real(gen), real(gen));
                       })
      v = T(real(gen), real(gen)); // complex
    else v = static_cast<T>(gen());
  }
  return out;
}

//! The same body on n PEs, as processes and as threads.
template <class Fn>
void on_pes(int n, Fn&& body, symm::world_options options = {}) {
  options.backend = symm::backend::host;
  if (options.heap_size == 0) options.heap_size = std::size_t{16} << 20;
  symm::launch(n, body, {.mode = symm::launch_mode::processes, .world = options});
  symm::launch(n, body, {.mode = symm::launch_mode::threads, .world = options});
}

//! Sets environment variables for one scope and restores them after.
class scoped_env {
public:
  scoped_env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) ::setenv(name, value, 1);
      else ::unsetenv(name);
    }
  }
  ~scoped_env() {
    for (auto& [name, old] : saved_) {
      if (old) ::setenv(name.c_str(), old->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

} // namespace symm_test
