// symm/detail/world_interface.hpp: what the device views (array_ref, pe_span, pe_ref) reach their world through in
// host code. The views carry a pointer to it into kernels, where it is never followed; host code calls the few world
// operations they need (a copy, a host-side atomic, a wake-up) through this abstract class, which the runtime
// (detail::world_state) implements. So a translation unit with views and kernels only does not parse the runtime's
// bootstrap, heaps and coordination (detail/world_state.hpp): a kernel file compiles in a fraction of the time.
//
// Virtual calls cost nothing next to what they start (a cudaMemcpy, a kernel launch, a system call). A stream travels
// as void*, so that the interface itself does not depend on the CUDA headers; every translation unit of a program must
// still agree on SYMM_ENABLE_CUDA (detail/config.hpp), since world_state, which implements it, differs.
#pragma once

#include <symm/detail/atomic_codes.hpp>
#include <symm/detail/completion.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/copy_2d.hpp>
#include <symm/error.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE

//! Where the symmetric heap lives and which machinery moves data.
enum class backend {
  host,    //!< host memory shared between processes (memfd); CPU only
  cuda,    //!< GPU memory over CUDA VMM/IPC; device code and stream-ordered host operations
  nvshmem, //!< GPU memory from NVSHMEM: mapped peers as on cuda, other peers (other nodes) through NVSHMEM RMA
};

constexpr std::string_view to_string(backend b) noexcept {
  switch (b) {
    case backend::host: return "host";
    case backend::cuda: return "cuda";
    case backend::nvshmem: return "nvshmem";
  }
  return "?";
}

//! Whether the backend's heap is GPU memory (cuda, nvshmem): what host code cannot load from or store to itself.
constexpr bool heap_on_gpu(backend b) noexcept {
  return b != backend::host;
}

namespace detail {

//! An operation started from host code on a GPU heap and not waited for: `done` completes when it is done, and then
//! the value's bits are in `result` (detail::result_word), if it returns one.
struct pending_value {
  stream_state done;
  std::shared_ptr<result_word> result;
};

//! A live world as the views' host code sees it. Implemented by world_state; never destroyed through this class.
class world_interface {
public:
  [[nodiscard]] virtual int my_pe() const noexcept = 0;
  [[nodiscard]] virtual int n_pes() const noexcept = 0;
  [[nodiscard]] virtual symm::backend kind() const noexcept = 0;

  //! Blocking copy between any two addresses this PE can reach (local or peer heap, or private memory).
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  //! Blocking copy of `rows` rows of `width` bytes, row r from src + r * src_pitch to dst + r * dst_pitch (pitches of
  //! at least `width`): a strided put or get (symm/md_rma.hpp) in one call, as cudaMemcpy2D.
  virtual void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                       std::size_t rows) = 0;
  //! copy_2d ordered on `stream` (a cudaStream_t) on the CUDA backend; `what` names the symm call, for errors.
  virtual stream_state
  copy_2d_on_stream(void* stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                    std::size_t width, std::size_t rows, const char* what) = 0;
  //! Non-blocking copy; the completion turns ready when the bytes are in place.
  virtual std::shared_ptr<completion> copy_async(void* dst, const void* src, std::size_t bytes) = 0;
  //! Non-blocking copy_2d of each of `copies` (a strided put_nbi or get_nbi): one completion for all of them.
  virtual std::shared_ptr<completion> copy_2d_async(std::vector<copy_2d_spec> copies) = 0;
  //! A copy ordered on `stream` (a cudaStream_t) on the CUDA backend; `what` names the symm call, for errors.
  virtual stream_state copy_on_stream(void* stream, void* dst, const void* src, std::size_t bytes, const char* what) = 0;

  //! After a host-side write of the 4-byte word at `word` (in PE `pe`'s heap): wakes the host threads asleep on it.
  virtual void wake_word_waiters(int pe, const void* word) const noexcept = 0;

  //! An atomic from host code on a heap in GPU memory (detail/backend/cuda/host_atomics.hpp): `op` on the element of
  //! type `type` at `address` (as this PE maps it), complete on return; returns the old value's bits.
  virtual std::uint64_t host_atomic(const void* address, atomic_type_code type, atomic_op op, std::uint64_t operand,
                                    std::uint64_t expected) = 0;
  //! host_atomic without waiting for it (the nbi atomics, symm/atomic_nbi.hpp): ordered on the world's stream after
  //! its earlier host-issued work; the old value kept only when `wants_value`. `what` names the call, for errors.
  //! Only for a heap in GPU memory.
  virtual pending_value host_atomic_nbi(const void* address, atomic_type_code type, atomic_op op, std::uint64_t operand,
                                        std::uint64_t expected, bool wants_value, const char* what) = 0;
  //! A read of `bytes` (at most 8) at `address` (a GPU heap, local or a peer's) into a pending value, ordered on the
  //! world's stream: get_nbi of one element.
  virtual pending_value read_nbi(const void* address, std::size_t bytes) = 0;

protected:
  world_interface() = default;
  world_interface(const world_interface&) = default;
  world_interface& operator=(const world_interface&) = default;
  ~world_interface() = default;
};

//! After a host-side write of `*address` (in PE `pe`'s heap): wakes the threads asleep on it, if any. Only 4-byte words
//! have sleepers (detail/host_wait.hpp).
template <class T>
void wake_waiters(const world_interface* world, int pe, const T* address) noexcept {
  if constexpr (sizeof(T) == sizeof(std::uint32_t)) world->wake_word_waiters(pe, address);
}

//! Throws errc::unsupported when `world`'s heap is host memory, which a stream-ordered operation (`what`) cannot reach.
inline void require_cuda_backend(const world_interface* world, const char* what) {
  if (!heap_on_gpu(world->kind())) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {} orders work on a CUDA stream, but this world uses the {} backend, whose heap is host "
               "memory; use the host form",
               world->my_pe(), what, to_string(world->kind()));
  }
}

//! The error of require_host_atomics: host code reached a heap it has no atomics for.
[[noreturn]] inline void throw_no_host_atomics(const world_interface* world, int pe, std::string_view what) {
  SYMM_THROW(errc::unsupported,
             "PE {}: {} on PE {} was called from host code on the {} backend, whose symmetric heap is GPU memory; "
             "host code reaches it through a one-thread kernel, but this translation unit was compiled without the "
             "CUDA backend (SYMM_ENABLE_CUDA=0). Compile it with SYMM_ENABLE_CUDA=1, call it from device code (a "
             "kernel), or use the host backend (SYMM_BACKEND=host)",
             world->my_pe(), what, pe, to_string(world->kind()));
}

//! An atomic from host code on a world whose heap the CPU cannot reach with atomics of its own: the CUDA backend's
//! kernel when this translation unit has it, otherwise errc::unsupported (require_host_atomics says what to do).
template <class T>
T host_side_atomic(world_interface* world, int pe, const T* address, atomic_op op, T operand, std::string_view what) {
#if SYMM_CUDA_BACKEND()
  (void) pe, (void) what;
  return atomic_from_bits<T>(world->host_atomic(address, atomic_type_code_of<T>(), op, atomic_bits(operand), 0));
#else
  (void) address, (void) op, (void) operand;
  throw_no_host_atomics(world, pe, what);
#endif
}

//! compare_exchange from host code, with std::atomic's contract: stores `desired` and returns true when the value
//! equals `expected` bitwise, otherwise writes the value seen into `expected` and returns false.
template <class T>
bool host_side_compare_exchange(world_interface* world, int pe, T* address, T& expected, T desired,
                                std::string_view what) {
#if SYMM_CUDA_BACKEND()
  (void) pe, (void) what;
  const std::uint64_t want = atomic_bits(expected);
  const std::uint64_t seen =
      world->host_atomic(address, atomic_type_code_of<T>(), atomic_op::compare_exchange, atomic_bits(desired), want);
  if (seen == want) return true;
  expected = atomic_from_bits<T>(seen);
  return false;
#else
  (void) address, (void) expected, (void) desired;
  throw_no_host_atomics(world, pe, what);
#endif
}

} // namespace detail
SYMM_END_NAMESPACE
