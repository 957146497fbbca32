// tools/host_atomics_kernels.cu: the kernels behind host-side atomics and waits on the CUDA backend (symm/pe_ref.hpp's
// members, symm::wait_until and signal_wait_until called from host code when the symmetric heap is GPU memory). A CPU
// thread cannot load or update GPU memory atomically, so the host launches these kernels, one thread each:
// - symm_host_atomic does the atomic at system scope on the (possibly peer-mapped) address and writes the old value
//   into a result word the host reads after synchronising;
// - symm_host_wait polls a word until a comparison holds, or until the host cancels it through a word of pinned host
//   memory, and reports the value it saw there; the host polls that report (no CUDA call per poll) and checks meanwhile
//   that the other PEs are alive. Cancellable and limited to about a millisecond per launch, unlike a stream wait
//   (cuStreamWaitValue), which is why it is a kernel: GPU work that cannot end holds up every later cudaFree and
//   device synchronisation of the context.
//
// This file is not compiled into any program: tools/gen-host-atomics-ptx.sh turns it into PTX and embeds that in
// include/symm/detail/backend/cuda/host_atomics_ptx.hpp, which symm loads with the driver (cuModuleLoadData). That
// keeps the library header-only, without -rdc and without a __global__ in a header that g++ also compiles. Edit this
// file, then run tools/gen-host-atomics-ptx.sh; the `ptx` test suite fails while the checked-in header is out of date.
//
// The codes below must match detail::atomic_op and detail::atomic_type_code in
// include/symm/detail/backend/cuda/host_atomics.hpp, and the comparisons symm::cmp (symm/wait.hpp). Every operation is
// seq_cst: the host call waits for the kernel anyway, so a weaker order would save nothing that can be measured, and
// seq_cst is correct for every order asked.
#include <cuda/atomic>

#include <cstdint>

namespace {

enum op_code : int {
  op_load,
  op_store,
  op_exchange,
  op_compare_exchange,
  op_add,
  op_sub,
  op_and,
  op_or,
  op_xor,
  op_min,
  op_max
};
enum type_code : int { type_i32, type_u32, type_i64, type_u64, type_f32, type_f64 };
enum cmp_code : int { cmp_eq, cmp_ne, cmp_gt, cmp_ge, cmp_lt, cmp_le };

template <class T>
__device__ T from_bits(unsigned long long bits) {
  T value;
  __builtin_memcpy(&value, &bits, sizeof(T));
  return value;
}

template <class T>
__device__ unsigned long long to_bits(T value) {
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &value, sizeof(T));
  return bits;
}

//! The operation on a T at `address`; returns the old value's bits (0 for a store). compare_exchange returns the value
//! it saw: it stored when that equals `expected` bitwise, which the host checks.
template <class T>
__device__ unsigned long long
apply(unsigned long long address, int op, unsigned long long operand, unsigned long long expected) {
  cuda::atomic_ref<T, cuda::thread_scope_system> atom(*reinterpret_cast<T*>(address));
  const T v = from_bits<T>(operand);
  switch (op) {
    case op_load: return to_bits(atom.load());
    case op_store: atom.store(v); return 0;
    case op_exchange: return to_bits(atom.exchange(v));
    case op_compare_exchange: {
      T seen = from_bits<T>(expected);
      atom.compare_exchange_strong(seen, v); // on success `seen` keeps `expected`, which was the old value
      return to_bits(seen);
    }
    case op_add: return to_bits(atom.fetch_add(v));
    case op_sub: return to_bits(atom.fetch_sub(v));
    default: break;
  }
  if constexpr (cuda::std::is_integral_v<T>) {
    switch (op) {
      case op_and: return to_bits(atom.fetch_and(v));
      case op_or: return to_bits(atom.fetch_or(v));
      case op_xor: return to_bits(atom.fetch_xor(v));
      case op_min: return to_bits(atom.fetch_min(v));
      case op_max: return to_bits(atom.fetch_max(v));
      default: break;
    }
  }
  __trap(); // an operation the host side never sends for this type
  return 0;
}

} // namespace

//! One thread: `*result = old value` of operation `op` on the `type` at `address`. extern "C": the host looks it up by
//! this name.
extern "C" __global__ void symm_host_atomic(unsigned long long address, unsigned long long operand,
                                            unsigned long long expected, unsigned long long* result, int type, int op) {
  unsigned long long old = 0;
  switch (type) {
    case type_i32: old = apply<std::int32_t>(address, op, operand, expected); break;
    case type_u32: old = apply<std::uint32_t>(address, op, operand, expected); break;
    case type_i64: old = apply<std::int64_t>(address, op, operand, expected); break;
    case type_u64: old = apply<std::uint64_t>(address, op, operand, expected); break;
    case type_f32: old = apply<float>(address, op, operand, expected); break;
    case type_f64: old = apply<double>(address, op, operand, expected); break;
    default: __trap();
  }
  *result = old;
}

namespace {

template <class T>
__device__ bool compare(T a, int c, T b) {
  switch (c) {
    case cmp_eq: return a == b;
    case cmp_ne: return a != b;
    case cmp_gt: return a > b;
    case cmp_ge: return a >= b;
    case cmp_lt: return a < b;
    default: return a <= b;
  }
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

//! Polls until `word <c> value` (then returns true with the value in `seen`), or `*cancel` reaches `generation`, or
//! about a millisecond has passed (false both).
template <class T>
__device__ bool wait_for(unsigned long long address, int c, unsigned long long value_bits, const unsigned* cancel,
                         unsigned generation, unsigned long long& seen) {
  cuda::atomic_ref<T, cuda::thread_scope_system> word(*reinterpret_cast<T*>(address));
  cuda::atomic_ref<const unsigned, cuda::thread_scope_system> cancelled(*cancel);
  const T value = from_bits<T>(value_bits);
  const unsigned long long until = global_ns() + 1000000;
  unsigned pause = 32;
  for (;;) {
    const T now = word.load(cuda::memory_order_acquire);
    if (compare(now, c, value)) {
      seen = to_bits(now);
      return true;
    }
    if (cancelled.load(cuda::memory_order_relaxed) - generation < 0x80000000u) return false; // cancel >= generation
    if (global_ns() > until) return false;
    __nanosleep(pause);
    if (pause < 1024) pause *= 2;
  }
}

} // namespace

//! One thread: waits until `word <cmp> value` for the 4- or 8-byte integer of type `type` at `address`, then stores
//! the value seen into report[0] and, after it, 2 * generation + 1 into report[1]; or, once the host has set `*cancel`
//! to `generation` (or later), or after about a millisecond, stores 2 * generation into report[1] and ends (the host
//! launches it again while it still waits). The time limit keeps a cudaFree or a device synchronisation by another
//! thread of the process (a PE sharing the context) from waiting on it for long: they wait for every kernel of the
//! context, and that thread may be the one that is to write the word. `report` and `cancel` are pinned host memory.
//! extern "C": the host looks it up by this name.
extern "C" __global__ void
symm_host_wait(unsigned long long address, unsigned long long value, unsigned long long* report, const unsigned* cancel,
               unsigned generation, int type, int cmp) {
  unsigned long long seen = 0;
  bool met = false;
  switch (type) {
    case type_i32: met = wait_for<std::int32_t>(address, cmp, value, cancel, generation, seen); break;
    case type_u32: met = wait_for<std::uint32_t>(address, cmp, value, cancel, generation, seen); break;
    case type_i64: met = wait_for<std::int64_t>(address, cmp, value, cancel, generation, seen); break;
    case type_u64: met = wait_for<std::uint64_t>(address, cmp, value, cancel, generation, seen); break;
    default: __trap();
  }
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> value_out(report[0]), status_out(report[1]);
  if (met) value_out.store(seen, cuda::memory_order_relaxed);
  status_out.store(2ull * generation + (met ? 1u : 0u), cuda::memory_order_release); // the value before the status
}
