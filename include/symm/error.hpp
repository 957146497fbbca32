// symm/error.hpp: symm::error, the one exception type every host-side failure raises.
#pragma once

#include <symm/detail/config.hpp>

#include <fmt/core.h>

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

SYMM_BEGIN_NAMESPACE

//! What went wrong, coarsely; the message says exactly what (the PE, the values, what to do).
enum class errc {
  invalid_pe,          //!< a PE number outside [0, n_pes) of the team or world
  invalid_argument,    //!< any other argument out of its domain
  extent_mismatch,     //!< source and destination extents differ
  allocation_mismatch, //!< a collective operation (allocation, free, team split) differed between PEs
  heap_exhausted,      //!< the symmetric heap has no free block large enough
  invalid_free,        //!< free of memory not allocated from the heap, or freed twice
  not_initialized,     //!< an operation ran with no live world on this thread
  finalized,           //!< a symmetric object outlived its world
  bootstrap,           //!< the PEs could not find or authenticate each other
  timeout,             //!< a rendezvous or wait took longer than its bound
  peer_failed,         //!< another PE exited, crashed or aborted the job
  environment,         //!< a launcher variable is missing or malformed
  system,              //!< an operating-system call failed
  cuda,                //!< a CUDA runtime or driver call failed
  unsupported,         //!< the operation is not available on this backend or platform
};

//! Name of an errc value, for messages.
constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_pe: return "invalid_pe";
    case errc::invalid_argument: return "invalid_argument";
    case errc::extent_mismatch: return "extent_mismatch";
    case errc::allocation_mismatch: return "allocation_mismatch";
    case errc::heap_exhausted: return "heap_exhausted";
    case errc::invalid_free: return "invalid_free";
    case errc::not_initialized: return "not_initialized";
    case errc::finalized: return "finalized";
    case errc::bootstrap: return "bootstrap";
    case errc::timeout: return "timeout";
    case errc::peer_failed: return "peer_failed";
    case errc::environment: return "environment";
    case errc::system: return "system";
    case errc::cuda: return "cuda";
    case errc::unsupported: return "unsupported";
  }
  return "unknown";
}

//! The exception symm throws on the host. `what()` reads "symm: <message> [<code> at file:line]".
class error : public std::runtime_error {
public:
  error(errc code, std::string_view message, std::source_location where = std::source_location::current())
      : std::runtime_error(
            fmt::format("symm: {} [{} at {}:{}]", message, to_string(code), where.file_name(), where.line())),
        code_(code), message_(message), where_(where) {}

  [[nodiscard]] errc code() const noexcept { return code_; }
  //! The message alone, without the "symm:" prefix and the location.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] const std::source_location& where() const noexcept { return where_; }

private:
  errc code_;
  std::string message_;
  std::source_location where_;
};

SYMM_END_NAMESPACE

//! Throws symm::error with a fmt-formatted message and the caller's source location.
#define SYMM_THROW(code, ...) throw ::symm::error((code), ::fmt::format(__VA_ARGS__), ::std::source_location::current())
