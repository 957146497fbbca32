// symm/detail/process_state.hpp: what the kernel says a process on this node is doing, for messages that must tell a
// paused PE (SIGSTOP, a debugger) from one that runs or waits. Used by the collective wait's bound and by symmrun.
#pragma once

#include <symm/detail/config.hpp>

#include <fmt/core.h>

#include <cstdio>
#include <cstring>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The state letter of /proc/<pid>/stat ('R', 'S', 'D', 'T', 't', 'Z', ...), or '\0' when the process is not there.
inline char process_state_code(long pid) {
  if (pid <= 0) return '\0';
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (f == nullptr) return '\0';
  char text[512] = {};
  const std::size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(text, ')'); // the command name may hold spaces and parentheses
  return paren != nullptr && paren + 2 < text + n ? paren[2] : '\0';
}

} // namespace detail
SYMM_END_NAMESPACE
