// symm/detail/process_state.hpp: what the kernel says a process on this node is doing, for messages that must tell a
// paused PE (SIGSTOP, a debugger) from one that runs or waits (the collective wait's bound, symmrun), and which
// launcher daemon a process descends from (a job's identity under MPICH's mpiexec).
#pragma once

#include <symm/detail/config.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! What /proc/<pid>/stat says of a process: its command name (at most 15 characters), state letter and parent.
struct process_stat {
  std::string name;
  char state = '\0'; //!< 'R', 'S', 'D', 'T', 't', 'Z', ...; '\0' when the process is not there
  long parent = 0;
};

inline process_stat read_process_stat(long pid) {
  process_stat out;
  if (pid <= 0) return out;
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (f == nullptr) return out;
  char text[512] = {};
  const std::size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  const char* open = std::strchr(text, '(');
  const char* close = std::strrchr(text, ')'); // the command name may hold spaces and parentheses
  if (open == nullptr || close == nullptr || close < open || close + 2 >= text + n) return out;
  out.name.assign(open + 1, close);
  out.state = close[2];
  out.parent = std::strtol(close + 3, nullptr, 10);
  return out;
}

//! The state letter of /proc/<pid>/stat, or '\0' when the process is not there.
inline char process_state_code(long pid) {
  return read_process_stat(pid).state;
}

//! The nearest ancestor of this process whose command name is `name` (a launcher's per-node daemon), or 0.
inline long ancestor_named(std::string_view name) {
  long pid = static_cast<long>(::getppid());
  for (int depth = 0; pid > 1 && depth < 32; ++depth) {
    const process_stat p = read_process_stat(pid);
    if (p.name == name) return pid;
    pid = p.parent;
  }
  return 0;
}

} // namespace detail
SYMM_END_NAMESPACE
