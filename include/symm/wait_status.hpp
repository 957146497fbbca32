// symm/wait_status.hpp: what a bounded wait (wait_until_for, signal_wait_until_for) returns instead of trapping or
// throwing: the wait ended because its condition held, because its deadline passed, or because a peer failed.
//
//   auto [status, seen] = symm::wait_until_for(flag, symm::cmp::ge, round, std::chrono::milliseconds(5));
//   if (status != symm::wait_status::ok) return; // leave the kernel (or the loop) cleanly; say why with to_string
#pragma once

#include <symm/detail/config.hpp>

SYMM_BEGIN_NAMESPACE

//! How a bounded wait ended.
enum class wait_status {
  ok,          //!< the condition held (the value that satisfied it comes with it)
  timed_out,   //!< the deadline passed first
  peer_failed, //!< another PE failed, exited or finalized its world first (host code: the liveness check found it)
};

//! Name of a wait_status value, for messages; a C string so that device code can print it.
[[nodiscard]] SYMM_HOST_DEVICE constexpr const char* to_string(wait_status status) noexcept {
  switch (status) {
    case wait_status::ok: return "ok";
    case wait_status::timed_out: return "timed_out";
    case wait_status::peer_failed: return "peer_failed";
  }
  return "unknown";
}

//! What a bounded wait returns: how it ended, and the value it saw last (the one that satisfied the comparison when
//! `status` is ok; otherwise the latest read, for a message, or value-initialized if none was made). A structured
//! binding takes both: `auto [status, seen] = ...`. Ignoring it is a warning: the whole point is to look at `status`.
template <class T>
struct [[nodiscard]] wait_result {
  wait_status status;
  T value;

  [[nodiscard]] SYMM_HOST_DEVICE constexpr bool ok() const noexcept { return status == wait_status::ok; }
};

SYMM_END_NAMESPACE
