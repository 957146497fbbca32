// tools/host_atomics_kernels.cu: the kernel behind host-side read-modify-write atomics on the CUDA backend
// (symm/pe_ref.hpp's members called from host code when the symmetric heap is GPU memory). A CPU thread cannot update
// GPU memory atomically, so the host launches this kernel, one thread: symm_host_atomic does the atomic at system scope
// on the (possibly peer-mapped) address and writes the old value into a result word the host reads after
// synchronising. Host-side loads, stores and waits need no kernel (a copy, a stream write, copies polled:
// detail/backend/cuda/host_atomics.hpp and host_atomics_wait.hpp), so they never wait for a free SM.
//
// This file is not compiled into any program: tools/gen-host-atomics-ptx.sh turns it into PTX and embeds that in
// include/symm/detail/backend/cuda/host_atomics_ptx.hpp, which symm loads with the driver (cuModuleLoadData). That
// keeps the library header-only, without -rdc and without a __global__ in a header that g++ also compiles. Edit this
// file, then run tools/gen-host-atomics-ptx.sh; the `ptx` test suite fails while the checked-in header is out of date.
//
// The codes below must match detail::atomic_op and detail::atomic_type_code (symm/detail/atomic_codes.hpp). Every
// operation is seq_cst: the host call waits for the kernel anyway, so a weaker order would save nothing that can be
// measured, and seq_cst is correct for every order asked.
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

//! The operation on a T at `address`; returns the old value's bits. compare_exchange returns the value it saw: it
//! stored when that equals `expected` bitwise, which the host checks. (op_load and op_store are a copy and a stream
//! write on the host side and never come here.)
template <class T>
__device__ unsigned long long
apply(unsigned long long address, int op, unsigned long long operand, unsigned long long expected) {
  cuda::atomic_ref<T, cuda::thread_scope_system> atom(*reinterpret_cast<T*>(address));
  const T v = from_bits<T>(operand);
  switch (op) {
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
