// symm/detail/backend/cuda/host_atomics.hpp: pe_ref's atomics called from host code. On the host backend they are CPU
// atomics on the shared mapping (pe_ref.hpp does those itself); on the CUDA backend the heap is GPU memory, which a CPU
// thread cannot load, store or update atomically. pe_ref reaches run_host_atomic through the world's interface
// (detail/world_interface.hpp: world_state::host_atomic), so this header needs the CUDA heap, not the world.
//
// Loads and stores need no kernel: a load is a small copy and a store a stream write (cuStreamWriteValue32/64, fenced
// before the store), both on the world's stream. Neither needs a free SM, so they go through while kernels fill the GPU
// or while compute-sanitizer holds later kernels of the process back: a kernel that waits for a flag the host stores
// is the common case.
//
// The read-modify-write atomics run in a kernel of one thread: symm's own PTX (host_atomics_ptx.hpp, generated from
// tools/host_atomics_kernels.cu), loaded with the driver once per process and device (host_atomics_kernels.hpp) and
// launched with cuLaunchKernel: no __global__ in a header that g++ also compiles, no -rdc, nothing for the user to
// link. It does the atomic at system scope on the address as this PE maps it (its own heap or a peer's), seq_cst
// whatever order was asked (stronger is always correct, and the launch and the wait cost far more than the order could
// save), and writes the old value into a pinned host word of the calling thread. Such an atomic needs an SM: it waits
// while the GPU is full, and under compute-sanitizer it can wait for the process's running kernels to end.
//
// Every form goes on the world's stream, after the world's earlier host-issued work, and the blocking call waits for
// it: like every blocking host operation, the atomic is complete (and visible to every PE) when it returns. Cost: a
// copy, a stream write or a launch, and a stream synchronisation: some microseconds. The nbi forms (start_host_atomic,
// start_gpu_read; symm/atomic_nbi.hpp) enqueue the same and return at once, the value in a word of the heap's
// result_word_pool.
#pragma once

#include <symm/detail/atomic_codes.hpp>
#include <symm/detail/config.hpp>

#include <cstdint>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/check.hpp>
#  include <symm/detail/backend/cuda/cuda_heap.hpp>
#  include <symm/detail/backend/cuda/driver.hpp>
#  include <symm/detail/backend/cuda/host_atomics_kernels.hpp>
#  include <symm/detail/backend/cuda/stream_write.hpp>
#  include <symm/detail/backend/nvshmem/host_rma_atomics.hpp>
#  include <symm/detail/world_interface.hpp>

#  include <cuda.h>
#  include <cuda_runtime_api.h>

#  include <cstring>
#  include <memory>
#  include <type_traits>
#  include <utility>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The word now, copied after the heap stream's earlier work; acquire order with respect to the GPU's writes.
template <class T>
std::remove_cv_t<T> read_gpu_word(cuda_heap& heap, const T* word) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t));
  unsigned long long* bounce = &thread_host_side_words().result; // pinned: a faster copy than into pageable memory
  SYMM_TRY_CUDA(cudaMemcpyAsync(bounce, word, sizeof(T), cudaMemcpyDeviceToHost, heap.stream()));
  SYMM_TRY_CUDA(cudaStreamSynchronize(heap.stream()));
  std::remove_cv_t<T> value;
  std::memcpy(&value, bounce, sizeof(T));
  return value;
}

//! Enqueues `op` on the element of type `type` at `address` (as PE `my_pe` maps it) on the heap's stream: a copy, a
//! stream write or the kernel, which leaves the old value's bits in `*result` (pinned host memory; the value for a
//! load, untouched for a store). Does not wait.
inline void
enqueue_host_atomic(cuda_heap& heap, [[maybe_unused]] int my_pe, const void* address, atomic_type_code type,
                    atomic_op op, std::uint64_t operand, std::uint64_t expected, unsigned long long* result) {
  context_scope on(heap.device());
  const cudaStream_t stream = heap.stream();
#  if SYMM_NVSHMEM_BACKEND()
  if (is_rma_address(address)) { // a peer reached through NVSHMEM RMA: NVSHMEM's atomics, not symm's PTX kernel
    enqueue_rma_host_atomic(stream, my_pe, address, type, op, operand, expected, result);
    return;
  }
#  endif
  const bool four_bytes =
      type == atomic_type_code::i32 || type == atomic_type_code::u32 || type == atomic_type_code::f32;
  if (op == atomic_op::load) { // a copy (see the header comment)
    SYMM_TRY_CUDA(cudaMemcpyAsync(result, address, four_bytes ? 4 : 8, cudaMemcpyDeviceToHost, stream));
    return;
  }
  if (op == atomic_op::store) { // a stream write
    void* target = const_cast<void*>(address);
    if (four_bytes) stream_write_u32(stream, target, static_cast<std::uint32_t>(operand));
    else stream_write_u64(stream, target, operand);
    return;
  }
  CUfunction function = host_kernels_of(heap.device()).atomic;
  auto target = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(address));
  unsigned long long operand_bits = operand, expected_bits = expected;
  int type_code = static_cast<int>(type), op_code = static_cast<int>(op);
  void* params[] = {&target, &operand_bits, &expected_bits, &result, &type_code, &op_code};
  SYMM_TRY_CU(
      driver().cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr));
}

//! Runs `op` on the element of type `type` at `address` (as PE `my_pe` maps it): a copy, a stream write or the kernel;
//! returns the old value's bits (the value for a load, 0 for a store). Complete when it returns.
inline std::uint64_t run_host_atomic(cuda_heap& heap, int my_pe, const void* address, atomic_type_code type,
                                     atomic_op op, std::uint64_t operand, std::uint64_t expected) {
  unsigned long long* result = &thread_host_side_words().result;
  *result = 0;
  enqueue_host_atomic(heap, my_pe, address, type, op, operand, expected, result);
  context_scope on(heap.device());
  SYMM_TRY_CUDA(cudaStreamSynchronize(heap.stream()));
  return op == atomic_op::store ? 0 : *result; // a 4-byte load's copy filled the low half of the zeroed word
}

//! The non-blocking form (the nbi atomics), on symm's own stream: the old value lands in a word of the returned pending
//! value, or, when `wants_value` is false (store and the non-fetching atomics), in the heap's discarded word.
inline pending_value
start_host_atomic(cuda_heap& heap, int my_pe, const void* address, atomic_type_code type, atomic_op op,
                  std::uint64_t operand, std::uint64_t expected, bool wants_value, const char* what) {
  context_scope on(heap.device());
  std::shared_ptr<result_word> word = wants_value ? heap.take_result_word() : nullptr;
  auto* bits = reinterpret_cast<unsigned long long*>(wants_value ? word->bits : heap.discarded_result());
  enqueue_host_atomic(heap, my_pe, address, type, op, operand, expected, bits);
  return {heap.own_stream_operation(what), std::move(word)};
}

//! get_nbi of one element of `bytes` (at most 8) at `address`: a copy on symm's own stream into a result word.
inline pending_value start_gpu_read(cuda_heap& heap, const void* address, std::size_t bytes) {
  context_scope on(heap.device());
  std::shared_ptr<result_word> word = heap.take_result_word();
  (void) heap.copy_on(heap.stream(), word->bits, address, bytes, "symm::get_nbi(pe_ref)");
  return {heap.own_stream_operation("symm::get_nbi(pe_ref)"), std::move(word)};
}

} // namespace detail
SYMM_END_NAMESPACE

#endif // SYMM_CUDA_BACKEND()
