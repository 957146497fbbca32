// symm/detail/check.hpp: system-call wrappers that turn failures into symm::error.
#pragma once

#include <symm/error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// Evaluates a POSIX call that returns -1 on failure and throws with errno's text and the call.
#define SYMM_TRY_SYS(expr)                                                                                             \
  ([&]() {                                                                                                             \
    auto symm_result_ = (expr);                                                                                        \
    if (symm_result_ == -1) {                                                                                          \
      int symm_errno_ = errno;                                                                                         \
      SYMM_THROW(::symm::errc::system, "{} failed: {} (errno {})", #expr, ::std::strerror(symm_errno_), symm_errno_);  \
    }                                                                                                                  \
    return symm_result_;                                                                                               \
  }())

// Destructor form: reports and continues, since destructors must not throw.
#define SYMM_ASSERT_SYS(expr)                                                                                          \
  do {                                                                                                                 \
    if ((expr) == -1) {                                                                                                \
      int symm_errno_ = errno;                                                                                         \
      ::std::fprintf(stderr, "symm: %s failed: %s (%s:%d)\n", #expr, ::std::strerror(symm_errno_), __FILE__,           \
                     __LINE__);                                                                                        \
    }                                                                                                                  \
  } while (0)
