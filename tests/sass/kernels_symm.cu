// tests/sass/kernels_symm.cu: kernels written with symm's device API. kernels_raw.cu has a kernel of the same name
// for each, written as a hand-written CUDA IPC program would be (peer table, byte offset and PE as raw arguments);
// compare_sass.py compiles both and checks that the symm layer adds no memory instruction and no local memory.
//
// The PE check: at SYMM_CHECK >= 1, symm::remote() in device code does `if (pe < 0 || pe >= n_pes) __trap();`. The
// raw kernels do the same check when RAW_PE_CHECK is 1 (compare_sass.py sets RAW_PE_CHECK to 1 when it builds this
// file with SYMM_CHECK=1 and to 0 with SYMM_CHECK=0), so each comparison is like for like; the difference between
// the two builds of this file is the check's cost, which compare_sass.py prints. Measured with nvcc 13.0 for sm_90:
// about 5 instructions per kernel (compare, branch, BPT.TRAP), one more kernel-parameter load, no memory instruction;
// but behind the branch nvcc stops proving that the peer pointer is global, so the remote access becomes generic
// (ST/LD instead of STG/LDG) in p_loop, g_loop, single_* and scalar_p, in the raw kernels exactly as in symm's.
#include <symm/barrier.hpp>
#include <symm/collectives.hpp>
#include <symm/md_rma.hpp>
#include <symm/mdarray_ref.hpp>
#include <symm/ordering.hpp>
#include <symm/remote.hpp>
#include <symm/rma.hpp>

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// (1) p in a grid-stride loop: one remote store per element, the remote span named once before the loop.
extern "C" __global__ void p_loop(symm::device_array<float> u, int pe) {
  auto dst = symm::remote(u, pe);
  auto src = u.local();
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < u.size(); i += blockDim.x * gridDim.x) {
    dst[i] = src[i] * 2.0f;
  }
}

// (2) g in a grid-stride loop: one remote load per element into the local part.
extern "C" __global__ void g_loop(symm::device_array<float> u, int pe) {
  auto src = symm::remote(u, pe);
  auto dst = u.local();
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < u.size(); i += blockDim.x * gridDim.x) {
    dst[i] = src[i] + 1.0f;
  }
}

// (3) one element: a single remote store, and a single remote load.
extern "C" __global__ void single_p(symm::device_array<float> u, int pe, std::size_t i, float v) {
  symm::remote(u, pe)[i] = v;
}
extern "C" __global__ void single_g(symm::device_array<float> u, int pe, std::size_t i) {
  float v = symm::remote(u, pe)[i];
  u.local()[i] = v;
}

// (4) block-cooperative bulk put and get of the whole array (detail::group_copy: 16/8/4-byte vectors by alignment).
extern "C" __global__ void block_put(symm::device_array<float> u, int pe) {
  symm::put(cg::this_thread_block(), symm::remote(u, pe), u.local());
}
extern "C" __global__ void block_get(symm::device_array<float> u, int pe) {
  symm::get(cg::this_thread_block(), u.local(), symm::remote(u, pe));
}

// (5) a fixed PE (the right neighbour) with remote() written inside the loop body, as users write it: the peer
// table must still be read once, before the loop, and the PE check must not be repeated per element.
extern "C" __global__ void ring_loop(symm::device_array<float> u) {
  const int right = (u.my_pe() + 1) % u.n_pes();
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < u.size(); i += blockDim.x * gridDim.x) {
    symm::remote(u, right)[i] = u.local()[i];
  }
}

// (6) a scalar p through scalar_ref (remote(scalar, pe) is a pe_ref<T>).
extern "C" __global__ void scalar_p(symm::scalar_ref<int> s, int pe, int v) {
  symm::remote(s, pe) = v;
}

// (7) one p, then quiet(), per iteration (the p-latency loop), remote() named inside the loop: quiet's fence empties
// L1 (CCTL.IVALL), so a peer-table read left in the loop would be an L2 round trip per iteration. The table does not
// change while the world lives: it must be read once, before the loop.
extern "C" __global__ void p_quiet_loop(symm::device_array<int> u, int pe, int mask, long long iters) {
  for (long long i = 0; i < iters; ++i) {
    symm::remote(u, pe)[static_cast<std::size_t>(i & mask)] = static_cast<int>(i);
    symm::quiet();
  }
}

// (8) one warp puts n floats per iteration, remote() named inside the loop, with a compiler barrier between iterations
// (as any loop with other memory work in it has): the peer table is still read once, before the loop.
extern "C" __global__ void warp_put_loop(symm::device_array<float> u, int pe, std::size_t n, long long iters) {
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  for (long long it = 0; it < iters; ++it) {
    symm::put(warp, symm::remote(u, pe).subspan(0, n), u.local().subspan(0, n));
    asm volatile("" ::: "memory");
  }
}

// (9) a block's device barriers in a loop (barrier_session::barrier): per round one system-scope release fence
// (MEMBAR.ALL.SYS, no L1 invalidate), one relaxed arrival store per peer and acquire polls; the flags of the first
// peer looked up once per session. A wait that gives up writes the trap record and traps, in both kernels: no call,
// no stack frame, and so no extra MEMBAR.ALL.CTA before the release fence (detail/wait_trap_record.hpp).
extern "C" __global__ void barrier_block_loop(symm::world_ref w, int channel, long long iters) {
  symm::barrier_session bar(cg::this_thread_block(), w, channel);
  for (long long i = 0; i < iters; ++i)
    bar.barrier();
}

// (10) the barrier round of symm's stream kernels (stream barrier, stream collectives, alltoallv on a stream), for a
// team: each team PE's flag area comes in the kernel's parameters (collective_flags, teams of up to 32 PEs); larger
// teams read the peer table. The choice is made once per launch (two copies of the round). Per pair of PEs, one read-
// modify-write of this PE's count, a release fence, a relaxed arrival store and acquire polls.
extern "C" __global__ void stream_barrier_round(symm::team_ref t, symm::detail::collective_flags flags) {
  symm::detail::collective_flags_round(cg::this_thread_block(), t, flags, 0);
}

// (11) the same round as every team of up to 32 PEs runs it, with the flag addresses inline: no peer-table read and
// no generic access beyond the raw twin's (a choice per flag address, instead of once, leaves both in the loop).
extern "C" __global__ void stream_barrier_round_inline(symm::team_ref t, symm::detail::collective_flags flags) {
  if (!flags.inlined) return; // the table path, dead below
  symm::detail::collective_flags_round(cg::this_thread_block(), t, flags, 0);
}

// (12) a column put of a row-major grid (NVSHMEM's iput): symm::submdspan of another PE's copy and of the local one,
// one block, every element once, strided on both sides. A column that is one contiguous run (a grid of one column, or
// of one row) takes the vector copy, in both kernels: the loop compared is the strided one.
extern "C" __global__ void
md_column_put(symm::mdarray_ref<float, cuda::std::dextents<int, 2>> grid, int pe, int to, int from) {
  symm::put(cg::this_thread_block(), symm::submdspan(symm::remote(grid, pe), cuda::std::full_extent, to),
            symm::submdspan(grid.local(), cuda::std::full_extent, from));
}
