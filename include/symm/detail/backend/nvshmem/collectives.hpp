// symm/detail/backend/nvshmem/collectives.hpp: symm's collectives on a team with a PE that this GPU reaches only
// through NVSHMEM RMA (another node; every other PE under SYMM_NVSHMEM_RMA=1). symm's own kernels load from and store
// to the peers' heaps, which such a peer does not allow, so these teams run NVSHMEM's collectives over the team's
// NVSHMEM team (detail/backend/nvshmem/nvshmem_team.hpp) instead, with symm's semantics:
//
// - broadcast, fcollect, alltoall: nvshmemx_<name>mem_on_stream (stream form); nvshmem_<name>mem (one thread),
//   nvshmemx_<name>mem_warp, nvshmemx_<name>mem_block (device form).
// - allreduce, reduce_scatter: nvshmemx_<T>_<op>_reduce_on_stream and _reducescatter_on_stream; nvshmem_<T>_<op>_reduce
//   (one thread), nvshmemx_<T>_<op>_reduce_warp and _block, and the same with reducescatter.
// - reduce (rooted): NVSHMEM has none. In pieces of symmetric scratch: a team sync, an allreduce of the piece into the
//   scratch, and on the root a copy from it into dst (non-root dst is left alone). Scratch: the staging buffer (host,
//   under its lock; complete on return), the device scratch (team_ref). An in-place allreduce goes the same way, every
//   PE copying out (NVSHMEM's on-stream reduction with dest == source summed twice on the H200), and a reduce_scatter
//   above nvshmem_reducescatter_max_bytes in pieces whose slices of every block are gathered in the scratch first.
//
// Roots are team PE numbers, as NVSHMEM's PE_root is. In place (dst == src) is allowed by NVSHMEM for broadcast (the
// root copies only when they differ) and for its reductions (it detects the exact overlap); a rooted reduce reads src
// before it writes dst through the scratch. broadcast, fcollect and alltoall move bytes, so any trivially copyable T
// works; reductions map (T, op) to NVSHMEM's typed reductions where NVSHMEM has one (nvshmem_word below) and fail
// otherwise: errc::unsupported on the host, a trap with a message in device code.
//
// Device form: NVSHMEM's collectives are blocking and take the team, not symm's barrier `channel`, which is ignored;
// NVSHMEM's rule applies instead: at most one collective on a team at a time per PE (one group calling it), and the
// device scratch serves one rooted reduce, in-place allreduce or large reduce_scatter at a time per PE.
#pragma once

#include <symm/detail/backend/nvshmem/nvshmem_api.hpp>
#include <symm/detail/collective_common.hpp>
#include <symm/detail/collective_ops.hpp>
#include <symm/detail/config.hpp>

#if SYMM_NVSHMEM_BACKEND() && SYMM_CUDA_COMPILATION()
#  include <symm/detail/backend/nvshmem/device_rma.hpp>
#  include <symm/detail/device_copy.hpp>
#  include <symm/future.hpp>
#  include <symm/group.hpp>
#  include <symm/team.hpp>

#  include <cuda_bf16.h>
#  include <cuda_fp16.h>
#  include <cuda_runtime_api.h>

#  include <cstdint>
#  include <cstdio>
#  include <string>
#  include <string_view>
#  include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

// ---- Which reductions NVSHMEM has ----

template <std::size_t Size, bool Signed>
struct int_of_size {
  using type = void;
};
template <>
struct int_of_size<1, true> {
  using type = std::int8_t;
};
template <>
struct int_of_size<2, true> {
  using type = std::int16_t;
};
template <>
struct int_of_size<4, true> {
  using type = std::int32_t;
};
template <>
struct int_of_size<8, true> {
  using type = std::int64_t;
};
template <>
struct int_of_size<1, false> {
  using type = std::uint8_t;
};
template <>
struct int_of_size<2, false> {
  using type = std::uint16_t;
};
template <>
struct int_of_size<4, false> {
  using type = std::uint32_t;
};
template <>
struct int_of_size<8, false> {
  using type = std::uint64_t;
};

template <class T, class Op>
constexpr auto nvshmem_word_of() {
  if constexpr (is_bitwise_op<Op> && std::is_integral_v<T>) {
    // and/or/xor act on the bits alike for every integer (bool included: 0 and 1 stay 0 and 1).
    return std::type_identity<typename int_of_size<sizeof(T), false>::type>{};
  } else if constexpr (is_arithmetic_op<Op> && std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return std::type_identity<typename int_of_size<sizeof(T), std::is_signed_v<T>>::type>{};
  } else if constexpr (is_arithmetic_op<Op> && (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                                std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) ) {
    return std::type_identity<T>{};
  } else {
    return std::type_identity<void>{};
  }
}
//! The element type of NVSHMEM's reduction that computes Op on T (T's bits, read as that type), or void when NVSHMEM
//! has none: bitwise operations on integers of 1, 2, 4 or 8 bytes (as unsigned), plus, multiplies, min and max on
//! such integers (signedness kept), float, double, __half and __nv_bfloat16. Not: a user's operation, other types.
template <class T, class Op>
using nvshmem_word = typename decltype(nvshmem_word_of<std::remove_cv_t<T>, std::remove_cvref_t<Op>>())::type;
template <class T, class Op>
inline constexpr bool nvshmem_reducible = !std::is_void_v<nvshmem_word<T, Op>>;

inline constexpr bool is_reduction(collective_id c) noexcept {
  return c == collective_id::reduce || c == collective_id::allreduce || c == collective_id::reduce_scatter;
}

//! A type's name for messages, as the host compiler spells it.
template <class T>
std::string_view type_name() {
  std::string_view f = __PRETTY_FUNCTION__; // "... [with T = float; ...]" (GCC) or "... [T = float]" (Clang)
  const auto at = f.find("T = ");
  if (at == std::string_view::npos) return "this element type";
  f.remove_prefix(at + 4);
  return f.substr(0, f.find_first_of(";]"));
}
inline std::string_view op_name(op_code op) {
  switch (op) {
    case op_code::none: return "no operation";
    case op_code::plus: return "plus";
    case op_code::multiplies: return "multiplies";
    case op_code::min: return "min";
    case op_code::max: return "max";
    case op_code::bit_and: return "bit_and";
    case op_code::bit_or: return "bit_or";
    case op_code::bit_xor: return "bit_xor";
    case op_code::user: return "a user's operation";
  }
  return "?";
}

// ---- NVSHMEM's typed reductions, by overload on (operation, scope, element type) ----

template <op_code O>
using op_tag = std::integral_constant<op_code, O>;
enum class nvshmem_scope { thread, warp, block };
template <nvshmem_scope S>
using scope_tag = std::integral_constant<nvshmem_scope, S>;

#  define SYMM_NVSHMEM_REDUCTION(NAME, TYPE, OP, CODE)                                                                 \
    inline int nvshmem_reduce_on_stream(op_tag<op_code::CODE>, nvshmem_team_t team, TYPE* dest, const TYPE* source,    \
                                        std::size_t n, cudaStream_t stream) {                                          \
      return nvshmemx_##NAME##_##OP##_reduce_on_stream(team, dest, source, n, stream);                                 \
    }                                                                                                                  \
    inline int nvshmem_reducescatter_on_stream(op_tag<op_code::CODE>, nvshmem_team_t team, TYPE* dest,                 \
                                               const TYPE* source, std::size_t n, cudaStream_t stream) {               \
      return nvshmemx_##NAME##_##OP##_reducescatter_on_stream(team, dest, source, n, stream);                          \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reduce(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::thread>,                     \
                                          nvshmem_team_t team, TYPE* dest, const TYPE* source, std::size_t n) {        \
      return nvshmem_##NAME##_##OP##_reduce(team, dest, source, n);                                                    \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reduce(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::warp>, nvshmem_team_t team,  \
                                          TYPE* dest, const TYPE* source, std::size_t n) {                             \
      return nvshmemx_##NAME##_##OP##_reduce_warp(team, dest, source, n);                                              \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reduce(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::block>, nvshmem_team_t team, \
                                          TYPE* dest, const TYPE* source, std::size_t n) {                             \
      return nvshmemx_##NAME##_##OP##_reduce_block(team, dest, source, n);                                             \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reducescatter(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::thread>,              \
                                                 nvshmem_team_t team, TYPE* dest, const TYPE* source, std::size_t n) { \
      return nvshmem_##NAME##_##OP##_reducescatter(team, dest, source, n);                                             \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reducescatter(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::warp>,                \
                                                 nvshmem_team_t team, TYPE* dest, const TYPE* source, std::size_t n) { \
      return nvshmemx_##NAME##_##OP##_reducescatter_warp(team, dest, source, n);                                       \
    }                                                                                                                  \
    SYMM_DEVICE inline int nvshmem_reducescatter(op_tag<op_code::CODE>, scope_tag<nvshmem_scope::block>,               \
                                                 nvshmem_team_t team, TYPE* dest, const TYPE* source, std::size_t n) { \
      return nvshmemx_##NAME##_##OP##_reducescatter_block(team, dest, source, n);                                      \
    }
// clang-format off
#  define SYMM_NVSHMEM_UNSIGNED(X, OP, CODE)                                                                           \
    X(uint8, std::uint8_t, OP, CODE) X(uint16, std::uint16_t, OP, CODE)                                                \
    X(uint32, std::uint32_t, OP, CODE) X(uint64, std::uint64_t, OP, CODE)
#  define SYMM_NVSHMEM_ARITHMETIC(X, OP, CODE)                                                                         \
    SYMM_NVSHMEM_UNSIGNED(X, OP, CODE)                                                                                 \
    X(int8, std::int8_t, OP, CODE) X(int16, std::int16_t, OP, CODE)                                                    \
    X(int32, std::int32_t, OP, CODE) X(int64, std::int64_t, OP, CODE)                                                  \
    X(half, __half, OP, CODE) X(bfloat16, __nv_bfloat16, OP, CODE)                                                     \
    X(float, float, OP, CODE) X(double, double, OP, CODE)
// clang-format on
SYMM_NVSHMEM_UNSIGNED(SYMM_NVSHMEM_REDUCTION, and, bit_and)
SYMM_NVSHMEM_UNSIGNED(SYMM_NVSHMEM_REDUCTION, or, bit_or)
SYMM_NVSHMEM_UNSIGNED(SYMM_NVSHMEM_REDUCTION, xor, bit_xor)
SYMM_NVSHMEM_ARITHMETIC(SYMM_NVSHMEM_REDUCTION, sum, plus)
SYMM_NVSHMEM_ARITHMETIC(SYMM_NVSHMEM_REDUCTION, prod, multiplies)
SYMM_NVSHMEM_ARITHMETIC(SYMM_NVSHMEM_REDUCTION, min, min)
SYMM_NVSHMEM_ARITHMETIC(SYMM_NVSHMEM_REDUCTION, max, max)
#  undef SYMM_NVSHMEM_ARITHMETIC
#  undef SYMM_NVSHMEM_UNSIGNED
#  undef SYMM_NVSHMEM_REDUCTION

// ---- Host code: the stream form ----

//! NVSHMEM's reducescatter asserts (device-side) when team size * bytes per PE exceeds half its
//! NVSHMEM_REDUCE_SCRATCH_SIZE (default 512 KiB); symm stays below half of that half and does larger ones in pieces.
inline constexpr std::size_t nvshmem_reducescatter_max_bytes = std::size_t{128} << 10;

//! A collective of symm/collectives.hpp on `stream` over a team with an RMA peer (team_state::rma_peer()), after the
//! argument checks. Completes with the stream, except a rooted reduce, which is complete on return (it holds the
//! staging buffer).
template <collective_id C, class T, class Op>
future<> nvshmem_stream_collective(cudaStream_t stream, const team_state& s, const sym_buffer<T>& dst,
                                   const sym_buffer<const T>& src, const Op& op, int root) {
  (void) op; // NVSHMEM's reductions are named by it: op_code_of<Op>
  world_state& w = s.world();
  const int me = w.my_pe();
  const char* what = collective_name(C);
  const auto far = [&] { // a team PE this PE reaches only through RMA, for the messages (not on the way of a call)
    for (int pe : s.members())
      if (!w.mapped(pe)) return pe;
    return -1;
  };
  if (s.nvshmem_team() == no_nvshmem_team) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {}(stream, team, ...) on {}: this GPU reaches PE {} only through NVSHMEM RMA, so the "
               "collective must be NVSHMEM's, but NVSHMEM made no team for it: {}",
               me, what, s.name(), far(), s.nvshmem_problem());
  }
  if constexpr (is_reduction(C) && !nvshmem_reducible<T, Op>) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {}(stream, team, ...) on {}: this GPU reaches PE {} only through NVSHMEM RMA, so the "
               "collective must be NVSHMEM's, and NVSHMEM has no reduction of {} ({}-byte elements) with {}: it "
               "reduces integers of 1 to 8 bytes (bit_and, bit_or, bit_xor, plus, multiplies, min, max) and float, "
               "double, __half and __nv_bfloat16 (plus, multiplies, min, max) only",
               me, what, s.name(), far(), type_name<T>(), sizeof(T), op_name(op_code_of<Op>));
  } else {
    const auto team = static_cast<nvshmem_team_t>(s.nvshmem_team());
    T* const mine = dst.on(me);
    const T* const from = src.on(me);
    const auto ok = [&](int rc, const char* call) {
      if (rc != 0) {
        SYMM_THROW(errc::system, "PE {}: {}(stream, team, ...) on {}: {} returned {} (NVSHMEM_DEBUG=INFO says more)",
                   me, what, s.name(), call, rc);
      }
    };
    const std::size_t n = static_cast<std::size_t>(s.pes().size);
    if (dst.size == 0 || src.size == 0) return future<>(stream_operation(stream, what, me)); // every PE alike
    if constexpr (C == collective_id::broadcast) {
      ok(nvshmemx_broadcastmem_on_stream(team, mine, from, dst.bytes(), root, stream),
         "nvshmemx_broadcastmem_on_stream");
    } else if constexpr (C == collective_id::fcollect) {
      ok(nvshmemx_fcollectmem_on_stream(team, mine, from, src.bytes(), stream), "nvshmemx_fcollectmem_on_stream");
    } else if constexpr (C == collective_id::alltoall) {
      ok(nvshmemx_alltoallmem_on_stream(team, mine, from, src.bytes() / n, stream), "nvshmemx_alltoallmem_on_stream");
    } else {
      using W = nvshmem_word<T, Op>;
      const op_tag<op_code_of<Op>> tag{};
      const bool in_place = static_cast<const void*>(mine) == static_cast<const void*>(from);
      if constexpr (C == collective_id::reduce_scatter) {
        if (n * dst.bytes() <= nvshmem_reducescatter_max_bytes) {
          ok(nvshmem_reducescatter_on_stream(
                 tag, team, reinterpret_cast<W*>(mine), reinterpret_cast<const W*>(from), dst.size, stream),
             "nvshmemx_<T>_<op>_reducescatter_on_stream");
        } else { // in pieces: each gathers its slice of every block into the staging buffer, then reduces-scatters it
          w.cuda()->nvshmem()->with_staging(stream, [&](std::byte* scratch, std::size_t scratch_bytes) {
            const std::size_t per =
                (scratch_bytes < nvshmem_reducescatter_max_bytes ? scratch_bytes : nvshmem_reducescatter_max_bytes) /
                (n * sizeof(T));
            for (std::size_t done = 0; done < dst.size; done += per) {
              const std::size_t m = dst.size - done < per ? dst.size - done : per;
              ok(nvshmemx_team_sync_on_stream(team, stream), "nvshmemx_team_sync_on_stream"); // scratch is free
              SYMM_TRY_CUDA(cudaMemcpy2DAsync(scratch, m * sizeof(T), from + done, dst.bytes(), m * sizeof(T), n,
                                              cudaMemcpyDeviceToDevice, stream));
              ok(nvshmem_reducescatter_on_stream(
                     tag, team, reinterpret_cast<W*>(mine + done), reinterpret_cast<const W*>(scratch), m, stream),
                 "nvshmemx_<T>_<op>_reducescatter_on_stream");
            }
            ok(nvshmemx_team_sync_on_stream(team, stream), "nvshmemx_team_sync_on_stream"); // no peer reads it still
          });
        }
      } else if (C == collective_id::allreduce && !in_place) {
        ok(nvshmem_reduce_on_stream(tag, team, reinterpret_cast<W*>(mine), reinterpret_cast<const W*>(from), dst.size,
                                    stream),
           "nvshmemx_<T>_<op>_reduce_on_stream");
      } else {
        // reduce, and allreduce in place (NVSHMEM's on-stream reduction with dest == source summed twice on the H200:
        // 5000 doubles, 4 PEs): an allreduce into the staging buffer, piece by piece, copied out by the root (reduce)
        // or by every PE (allreduce). In place, every PE has reduced the piece (read every src) before one writes it.
        const bool copies_out = C == collective_id::allreduce || s.my_index() == root;
        w.cuda()->nvshmem()->with_staging(stream, [&](std::byte* scratch, std::size_t scratch_bytes) {
          const std::size_t per = scratch_bytes / sizeof(T);
          for (std::size_t done = 0; done < dst.size; done += per) {
            const std::size_t m = dst.size - done < per ? dst.size - done : per;
            // No PE writes into a scratch its owner still copies from (NVSHMEM may write peers' dest early).
            ok(nvshmemx_team_sync_on_stream(team, stream), "nvshmemx_team_sync_on_stream");
            ok(nvshmem_reduce_on_stream(tag, team, reinterpret_cast<W*>(scratch),
                                        reinterpret_cast<const W*>(from + done), m, stream),
               "nvshmemx_<T>_<op>_reduce_on_stream");
            if (in_place) ok(nvshmemx_team_sync_on_stream(team, stream), "nvshmemx_team_sync_on_stream");
            if (copies_out) {
              SYMM_TRY_CUDA(cudaMemcpyAsync(mine + done, scratch, m * sizeof(T), cudaMemcpyDeviceToDevice, stream));
            }
          }
          ok(nvshmemx_team_sync_on_stream(team, stream), "nvshmemx_team_sync_on_stream"); // no peer writes it still
        });
      }
    }
    SYMM_TRY_CUDA(cudaGetLastError());
    return future<>(stream_operation(stream, what, me));
  }
}

// ---- Device code ----

template <class Group>
inline constexpr bool is_nvshmem_group =
    is_block_group<Group> || is_warp_group<Group> || std::is_same_v<Group, single_thread>;
template <class Group>
inline constexpr nvshmem_scope nvshmem_scope_of =
    is_block_group<Group>  ? nvshmem_scope::block
    : is_warp_group<Group> ? nvshmem_scope::warp
                           : nvshmem_scope::thread;

//! NVSHMEM's byte-wise collectives and team sync for one scope. NVSHMEM 3.4's host-side header declares
//! nvshmemx_broadcastmem_warp/_block without PE_root; their definitions, which the device compilation sees, take it.
template <nvshmem_scope S>
SYMM_DEVICE SYMM_FORCEINLINE void
nvshmem_broadcast_bytes(nvshmem_team_t team, void* dest, const void* source, std::size_t bytes, int root) {
  NV_IF_TARGET(NV_IS_DEVICE,
               (
                   if constexpr (S == nvshmem_scope::block) {
                     nvshmemx_broadcastmem_block(team, dest, source, bytes, root);
                   } else if constexpr (S == nvshmem_scope::warp) {
                     nvshmemx_broadcastmem_warp(team, dest, source, bytes, root);
                   } else { nvshmem_broadcastmem(team, dest, source, bytes, root); }))
}
template <nvshmem_scope S>
SYMM_DEVICE SYMM_FORCEINLINE void
nvshmem_fcollect_bytes(nvshmem_team_t team, void* dest, const void* source, std::size_t bytes) {
  if constexpr (S == nvshmem_scope::block) nvshmemx_fcollectmem_block(team, dest, source, bytes);
  else if constexpr (S == nvshmem_scope::warp) nvshmemx_fcollectmem_warp(team, dest, source, bytes);
  else nvshmem_fcollectmem(team, dest, source, bytes);
}
template <nvshmem_scope S>
SYMM_DEVICE SYMM_FORCEINLINE void
nvshmem_alltoall_bytes(nvshmem_team_t team, void* dest, const void* source, std::size_t bytes) {
  if constexpr (S == nvshmem_scope::block) nvshmemx_alltoallmem_block(team, dest, source, bytes);
  else if constexpr (S == nvshmem_scope::warp) nvshmemx_alltoallmem_warp(team, dest, source, bytes);
  else nvshmem_alltoallmem(team, dest, source, bytes);
}
template <nvshmem_scope S>
SYMM_DEVICE SYMM_FORCEINLINE void nvshmem_sync_team(nvshmem_team_t team) {
  if constexpr (S == nvshmem_scope::block) nvshmemx_team_sync_block(team);
  else if constexpr (S == nvshmem_scope::warp) nvshmemx_team_sync_warp(team);
  else nvshmem_team_sync(team);
}

//! Prints why (one thread of the group) and traps.
template <class Group>
SYMM_DEVICE void
nvshmem_collective_trap(const Group& group, collective_id c, const team_ref& t, const char* why, int detail_value) {
  if (group.thread_rank() == 0) {
    ::printf("symm: %s in device code on a team of %d PEs (world PE %d first, stride %d) with a PE this GPU reaches "
             "only through NVSHMEM RMA, so the collective must be NVSHMEM's, but %s (%d); trapping (block %d, thread "
             "%d)\n",
             collective_name(c), t.n_pes(), t.start(), t.stride(), why, detail_value, static_cast<int>(blockIdx.x),
             static_cast<int>(threadIdx.x));
  }
  __trap();
}

//! A collective from device code over a team with an RMA peer (team_ref::rma_peer()), by NVSHMEM's collective of the
//! group's scope; complete for the group on return.
template <collective_id C, class Group, class T, class Op>
SYMM_DEVICE void nvshmem_device_collective(const Group& group, const team_ref& t, const sym_buffer<T>& dst,
                                           const sym_buffer<const T>& src, const Op& op, int root) {
  (void) op; // NVSHMEM's reductions are named by it: op_code_of<Op>
  if constexpr (!is_nvshmem_group<Group>) {
    nvshmem_collective_trap(
        group, C, t,
        "NVSHMEM's collectives take a block (this_thread_block()), a warp (tiled_partition<32>) "
        "or one thread (symm::this_thread()), not this group of threads",
        static_cast<int>(group.num_threads()));
  } else if constexpr (is_reduction(C) && !nvshmem_reducible<T, Op>) {
    nvshmem_collective_trap(
        group, C, t,
        "NVSHMEM has no reduction of this element type with this operation (a user's operation, "
        "or a type other than 1- to 8-byte integers, float, double, __half, __nv_bfloat16); "
        "element bytes",
        static_cast<int>(sizeof(T)));
  } else {
    if (t.nvshmem_team() < 0) {
      nvshmem_collective_trap(
          group, C, t,
          "the team has no NVSHMEM team (NVSHMEM refused its split, e.g. at NVSHMEM_MAX_TEAMS; "
          "its stream-form collectives say why); nvshmem team",
          t.nvshmem_team());
    }
    constexpr nvshmem_scope S = nvshmem_scope_of<Group>;
    const auto team = static_cast<nvshmem_team_t>(t.nvshmem_team());
    T* const mine = dst.on(t.world_my_pe());
    const T* const from = src.on(t.world_my_pe());
    if (dst.size == 0 || src.size == 0) return; // every PE alike
    group.sync();                               // every thread's writes to src are done before NVSHMEM reads it
    if constexpr (C == collective_id::broadcast) {
      nvshmem_broadcast_bytes<S>(team, mine, from, dst.bytes(), root);
    } else if constexpr (C == collective_id::fcollect) {
      nvshmem_fcollect_bytes<S>(team, mine, from, src.bytes());
    } else if constexpr (C == collective_id::alltoall) {
      nvshmem_alltoall_bytes<S>(team, mine, from, src.bytes() / static_cast<std::size_t>(t.n_pes()));
    } else {
      using W = nvshmem_word<T, Op>;
      const op_tag<op_code_of<Op>> tag{};
      const scope_tag<S> scope{};
      T* const scratch = reinterpret_cast<T*>(t.rma_scratch());
      const auto rank = static_cast<unsigned>(group.thread_rank()), count = static_cast<unsigned>(group.num_threads());
      const bool in_place = static_cast<const void*>(mine) == static_cast<const void*>(from);
      const auto n = static_cast<std::size_t>(t.n_pes());
      if constexpr (C == collective_id::reduce_scatter) {
        if (n * dst.bytes() <= nvshmem_reducescatter_max_bytes) {
          nvshmem_reducescatter(tag, scope, team, reinterpret_cast<W*>(mine), reinterpret_cast<const W*>(from),
                                dst.size);
        } else { // in pieces, as the stream form: each piece's slice of every block gathered into the scratch first
          const std::size_t scratch_max =
              t.rma_scratch_bytes() < nvshmem_reducescatter_max_bytes
                  ? t.rma_scratch_bytes()
                  : nvshmem_reducescatter_max_bytes;
          const std::size_t per = scratch_max / (n * sizeof(T));
          for (std::size_t done = 0; done < dst.size; done += per) {
            const std::size_t m = dst.size - done < per ? dst.size - done : per;
            nvshmem_sync_team<S>(team); // the scratch is free: every PE finished the previous piece
            for (std::size_t j = 0; j < n; ++j)
              group_copy(rank, count, scratch + j * m, from + j * dst.size + done, m * sizeof(T));
            group.sync();
            nvshmem_reducescatter(tag, scope, team, reinterpret_cast<W*>(mine + done),
                                  reinterpret_cast<const W*>(scratch), m);
          }
          nvshmem_sync_team<S>(team); // no peer reads this PE's scratch any more
        }
      } else if (C == collective_id::allreduce && !in_place) {
        nvshmem_reduce(tag, scope, team, reinterpret_cast<W*>(mine), reinterpret_cast<const W*>(from), dst.size);
      } else {
        // reduce, and allreduce in place (as the stream form): an allreduce into the device scratch, piece by piece,
        // copied out by the root (reduce) or every PE (allreduce), after every PE reduced the piece when in place.
        const bool copies_out = C == collective_id::allreduce || t.my_pe() == root;
        const std::size_t per = t.rma_scratch_bytes() / sizeof(T);
        for (std::size_t done = 0; done < dst.size; done += per) {
          const std::size_t m = dst.size - done < per ? dst.size - done : per;
          nvshmem_sync_team<S>(team); // no PE writes into a scratch its owner still copies from
          nvshmem_reduce(tag, scope, team, reinterpret_cast<W*>(scratch), reinterpret_cast<const W*>(from + done), m);
          if (in_place) nvshmem_sync_team<S>(team);
          if (copies_out) {
            group.sync();
            group_copy(rank, count, mine + done, scratch, m * sizeof(T));
          }
          group.sync();
        }
        nvshmem_sync_team<S>(team); // no peer writes into this PE's scratch any more
      }
    }
    group.sync(); // the result is complete for every thread of the group
  }
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
