// Collectives on the CUDA backend: broadcast, fcollect, alltoall, reduce, allreduce and reduce_scatter from device code
// (one block, one warp or one thread per PE) and from host code on a stream, on the world team and on sub-teams, 4 PEs
// as processes and as threads; every result is checked against a sequential reference computed from every PE's fresh
// random input, on both sides of the one-shot threshold and with several blocks for the stream kernels. On the nvshmem
// backend with SYMM_NVSHMEM_RMA=1 the same cases run through NVSHMEM's collectives (teams with RMA peers), less those
// with a user's operation, which NVSHMEM cannot run ([nvshmem] checks that they say so).
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <symm/collectives.hpp>

#include <cooperative_groups.h>
#include <cuda/functional>
#include <cuda/std/functional>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace cg = cooperative_groups;

namespace symm_collective_test {
//! A type of the program's that symm::plus reduces (enable_arithmetic_reduction below) but NVSHMEM does not know.
struct money {
  std::int64_t cents;
  __host__ __device__ friend money operator+(money a, money b) { return {a.cents + b.cents}; }
  __host__ __device__ friend money operator*(money a, money b) { return {a.cents * b.cents}; }
  __host__ __device__ friend bool operator<(money a, money b) { return a.cents < b.cents; }
};
} // namespace symm_collective_test
template <>
inline constexpr bool symm::enable_arithmetic_reduction<symm_collective_test::money> = true;

namespace {

//! Affine maps under composition: associative, not commutative (a wrong order of the PEs' terms is caught).
struct affine {
  std::uint64_t a, b;
  bool operator==(const affine&) const = default;
};
struct compose {
  __host__ __device__ constexpr affine operator()(const affine& f, const affine& g) const {
    return {f.a * g.a, f.a * g.b + f.b};
  }
};
std::string show(const affine& f) {
  return fmt::format("({}, {})", f.a, f.b);
}
template <class T>
std::string show(const T& v) {
  return fmt::format("{}", v);
}

enum class coll { broadcast, fcollect, alltoall, reduce, allreduce, reduce_scatter };
const char* name(coll c) {
  switch (c) {
    case coll::broadcast: return "broadcast";
    case coll::fcollect: return "fcollect";
    case coll::alltoall: return "alltoall";
    case coll::reduce: return "reduce";
    case coll::allreduce: return "allreduce";
    case coll::reduce_scatter: return "reduce_scatter";
  }
  return "?";
}
constexpr coll all_collectives[] = {
    coll::broadcast, coll::fcollect, coll::alltoall, coll::reduce, coll::allreduce, coll::reduce_scatter};

enum class scope { thread, warp, block, stream };
const char* name(scope s) {
  switch (s) {
    case scope::thread: return "thread";
    case scope::warp: return "warp";
    case scope::block: return "block";
    case scope::stream: return "host on a stream";
  }
  return "?";
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

//! Element i of world PE pe's input in case `stream`: fresh every run, and any PE can compute it (the reference).
//! Integers are small, so that sums do not overflow.
template <class T>
T input(std::uint64_t stream, int pe, std::size_t i) {
  const std::uint64_t r = mix(symm_test::seed() ^ mix(stream ^ mix(static_cast<std::uint64_t>(pe) ^ mix(i))));
  if constexpr (std::is_same_v<T, affine>) return affine{r | 1, mix(r)};
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(static_cast<double>(r >> 11) * 0x1.0p-53 * 2000.0 - 1000.0);
  else if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<std::int64_t>(r % 2001) - 1000);
  else return static_cast<T>(r);
}

template <class T>
bool close(const T& got, const T& want, double scale, int n) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::abs(static_cast<double>(got) - static_cast<double>(want)) <=
           4.0 * n * std::numeric_limits<T>::epsilon() * scale + std::numeric_limits<T>::min();
  } else {
    return got == want;
  }
}

//! Every collective, for one group of the block (or the whole block), chosen at run time. Scope is a template
//! parameter so that warp and thread scope are compiled only for the types that test them.
template <scope S, class T, class Op>
__global__ void collective_kernel(coll c, symm::team_ref t, symm::array_ref<T> dst, symm::array_ref<const T> src, Op op,
                                  int root, int channel) {
  auto block = cg::this_thread_block();
  auto run = [&](const auto& group) {
    switch (c) {
      case coll::broadcast: symm::broadcast(group, t, dst, src, root, channel); break;
      case coll::fcollect: symm::fcollect(group, t, dst, src, channel); break;
      case coll::alltoall: symm::alltoall(group, t, dst, src, channel); break;
      case coll::reduce: symm::reduce(group, t, dst, src, op, root, channel); break;
      case coll::allreduce: symm::allreduce(group, t, dst, src, op, channel); break;
      case coll::reduce_scatter: symm::reduce_scatter(group, t, dst, src, op, channel); break;
    }
  };
  if constexpr (S == scope::block) {
    run(block);
  } else if constexpr (S == scope::warp) {
    auto warp = cg::tiled_partition<32>(block);
    if (threadIdx.x < 32) run(warp);
  } else {
    if (threadIdx.x == 0) run(symm::this_thread());
  }
}

//! Whether warp and thread scope are tested with these types (the data movement is the same code for every type).
template <class T, class Op>
inline constexpr bool small_scopes = (std::is_same_v<T, float> && std::is_same_v<Op, symm::plus>) ||
                                     (std::is_same_v<T, std::int32_t> && std::is_same_v<Op, symm::max>);

//! The same through the host forms on a stream.
template <class T, class Op>
symm::future<> on_stream(cudaStream_t stream, coll c, const symm::team& t, symm::array_ref<T> dst,
                         symm::array_ref<const T> src, Op op, int root) {
  switch (c) {
    case coll::broadcast: return symm::broadcast(stream, t, dst, src, root);
    case coll::fcollect: return symm::fcollect(stream, t, dst, src);
    case coll::alltoall: return symm::alltoall(stream, t, dst, src);
    case coll::reduce: return symm::reduce(stream, t, dst, src, op, root);
    case coll::allreduce: return symm::allreduce(stream, t, dst, src, op);
    case coll::reduce_scatter: return symm::reduce_scatter(stream, t, dst, src, op);
  }
  return {};
}

//! Whether this PE reaches a PE of team t only through NVSHMEM RMA (nvshmem backend, SYMM_NVSHMEM_RMA=1 on one node):
//! then the team's collectives are NVSHMEM's, which cannot run a user's operation.
bool over_rma(const symm::world& w, const symm::team& t) {
  if (!t.valid()) return false;
  for (int pe : t.world_pes()) {
    if (!w.state()->mapped(pe)) return true;
  }
  return false;
}

//! A view of the first `count` elements of a (larger) symmetric array.
template <class T>
symm::array_ref<T> first(const symm::array<T>& a, std::size_t count, const symm::world&) {
  return a.ref().subarray(0, count);
}

//! One collective of `count` elements (per block for fcollect, alltoall and reduce_scatter) on team t, run by `s`,
//! checked on this PE against the reference. Every world PE calls it (allocation is collective over the world).
template <class T, class Op>
void check(symm::world& w, const symm::team& t, coll c, std::size_t count, Op op, scope s, std::uint64_t stream,
           bool in_place = false, int channel = 0) {
  const int me = w.my_pe();
  const std::size_t slots = count * static_cast<std::size_t>(w.n_pes());
  symm::array<T> src_store(w, slots), dst_store(w, slots);
  if (!t.valid()) return;
  const int n = t.n_pes(), my = t.my_pe();
  const std::size_t blocks = count * static_cast<std::size_t>(n);
  const std::size_t src_size = c == coll::alltoall || c == coll::reduce_scatter ? blocks : count;
  const std::size_t dst_size = c == coll::alltoall || c == coll::fcollect ? blocks : count;
  const int root = static_cast<int>(stream % static_cast<std::uint64_t>(n));

  // Everything on a stream of this PE's own: with PEs as threads, a device-wide synchronisation (cudaMemset,
  // cudaDeviceSynchronize) would wait for the other PEs' collective kernels, which wait for this PE's.
  cudaStream_t cs = nullptr;
  GPU_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  std::vector<T> mine(src_size);
  for (std::size_t i = 0; i < src_size; ++i)
    mine[i] = input<T>(stream, me, i);
  GPU_CHECK(cudaMemcpyAsync(src_store.local().data(), mine.data(), src_size * sizeof(T), cudaMemcpyHostToDevice, cs));
  GPU_CHECK(cudaMemsetAsync(dst_store.local().data(), 0x5a, slots * sizeof(T), cs));
  GPU_CHECK(cudaStreamSynchronize(cs)); // before any peer can write into this PE's dst
  auto src = first(src_store, src_size, w);
  auto dst = in_place ? src : first(dst_store, dst_size, w);
  const symm::array_ref<const T> from(src);
  t.sync(); // every team PE's CUDA set-up is done before any collective kernel waits for it (gpu_support.cuh)

  if (s == scope::stream) {
    on_stream(cs, c, t, dst, from, op, root).wait();
  } else {
    if (s == scope::block) {
      collective_kernel<scope::block><<<1, 256, 0, cs>>>(c, t.ref(), dst, from, op, root, channel);
    } else if constexpr (small_scopes<T, Op>) {
      if (s == scope::warp) collective_kernel<scope::warp><<<1, 256, 0, cs>>>(c, t.ref(), dst, from, op, root, channel);
      else collective_kernel<scope::thread><<<1, 256, 0, cs>>>(c, t.ref(), dst, from, op, root, channel);
    } else {
      throw std::runtime_error("this test runs only float plus and int32 max in warp and thread scope");
    }
    GPU_CHECK(cudaGetLastError());
  }
  std::vector<T> got(dst_size);
  GPU_CHECK(cudaMemcpyAsync(got.data(), dst.local().data(), dst_size * sizeof(T), cudaMemcpyDeviceToHost, cs));
  GPU_CHECK(cudaStreamSynchronize(cs));
  GPU_CHECK(cudaStreamDestroy(cs));

  auto fail = [&](std::size_t i, const T& have, const T& want) {
    throw std::runtime_error(fmt::format(
        "{} ({}, {} bytes, {}{}): PE {} (team PE {} of {}), {} elements: element {} is "
        "{}, want {} (seed {})",
        name(c), name(s), sizeof(T), count, in_place ? ", in place" : "", me, my, n, dst_size, i, show(have),
        show(want), symm_test::seed()));
  };
  auto reduced = [&](std::size_t i) { // element i of the PEs' inputs folded in team order
    T acc = input<T>(stream, t.world_pe(0), i);
    double scale = 0;
    if constexpr (std::is_floating_point_v<T>) scale = std::abs(static_cast<double>(acc));
    for (int k = 1; k < n; ++k) {
      const T x = input<T>(stream, t.world_pe(k), i);
      acc = static_cast<T>(op(acc, x));
      if constexpr (std::is_floating_point_v<T>) scale += std::abs(static_cast<double>(x));
    }
    return std::pair<T, double>(acc, scale);
  };
  for (std::size_t i = 0; i < dst_size; ++i) {
    switch (c) {
      case coll::broadcast: {
        const T want = input<T>(stream, t.world_pe(root), i);
        if (!(got[i] == want)) fail(i, got[i], want);
        break;
      }
      case coll::fcollect: {
        const T want = input<T>(stream, t.world_pe(static_cast<int>(i / count)), i % count);
        if (!(got[i] == want)) fail(i, got[i], want);
        break;
      }
      case coll::alltoall: {
        const T want =
            input<T>(stream, t.world_pe(static_cast<int>(i / count)), static_cast<std::size_t>(my) * count + i % count);
        if (!(got[i] == want)) fail(i, got[i], want);
        break;
      }
      case coll::reduce:
        if (my != root) { // dst left alone: the 0x5a fill, or this PE's own input in place
          const T mine_then = input<T>(stream, me, i);
          unsigned char fill[sizeof(T)];
          std::memset(fill, 0x5a, sizeof(T));
          if (in_place ? std::memcmp(&got[i], &mine_then, sizeof(T)) != 0
                       : std::memcmp(&got[i], fill, sizeof(T)) != 0) {
            throw std::runtime_error(fmt::format(
                "reduce ({}, {} bytes, {}{}): PE {} (team PE {} of {}, root {}) is not "
                "the root, but element {} of its dst changed (seed {})",
                name(s), sizeof(T), count, in_place ? ", in place" : "", me, my, n, root, i, symm_test::seed()));
          }
          break;
        }
        [[fallthrough]];
      case coll::allreduce: {
        const auto [want, scale] = reduced(i);
        if (!close(got[i], want, scale, n)) fail(i, got[i], want);
        break;
      }
      case coll::reduce_scatter: {
        const auto [want, scale] = reduced(static_cast<std::size_t>(my) * count + i);
        if (!close(got[i], want, scale, n)) fail(i, got[i], want);
        break;
      }
    }
  }
}

} // namespace

TEST_CASE("device collectives in block, warp and thread scope on 4 PEs", "[gpu][collectives]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& w) {
    auto t = w.team();
    std::uint64_t stream = 1;
    for (scope s : {scope::block, scope::warp, scope::thread}) {
      const std::size_t two_shot = symm::collective_one_shot_max_bytes / sizeof(float) + 777;
      for (std::size_t count : {std::size_t{1}, std::size_t{1001}, two_shot}) {
        if (s == scope::thread && count > 1001) continue; // one thread per PE: small sizes only
        for (coll c : all_collectives) {
          check<float>(w, t, c, count, symm::plus{}, s, stream += 10);
          check<std::int32_t>(w, t, c, count, symm::max{}, s, stream += 10);
        }
        check<float>(w, t, coll::allreduce, count, symm::plus{}, s, stream += 10, /*in_place=*/true);
        check<float>(w, t, coll::broadcast, count, symm::plus{}, s, stream += 10, /*in_place=*/true);
        if (s != scope::block) continue;
        check<std::uint64_t>(w, t, coll::allreduce, count, symm::bit_xor{}, s, stream += 10);
        check<std::int16_t>(w, t, coll::allreduce, count, cuda::std::plus<>{}, s, stream += 10);
        check<std::uint8_t>(w, t, coll::reduce_scatter, count, symm::bit_or{}, s, stream += 10);
        check<double>(w, t, coll::reduce, count, cuda::minimum<>{}, s, stream += 10);
        if (!over_rma(w, t)) check<affine>(w, t, coll::allreduce, count, compose{}, s, stream += 10);
      }
    }
  }));
}

TEST_CASE("device collectives on sub-teams, disjoint teams at once on one channel", "[gpu][collectives]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& w) {
    auto whole = w.team();
    auto even = whole.split_strided(0, 2, 2), odd = whole.split_strided(1, 2, 2);
    const symm::team& mine = even.valid() ? even : odd;
    std::uint64_t stream = 5000;
    for (std::size_t count : {std::size_t{3}, std::size_t{30000}}) {
      for (coll c : all_collectives)
        check<float>(w, mine, c, count, symm::plus{}, scope::block, stream += 10, false, 2);
    }
    auto three = whole.split_strided(1, 1, 3); // world PEs 1, 2, 3: an odd count
    for (coll c : all_collectives)
      check<std::int64_t>(w, three, c, 777, symm::plus{}, scope::block, stream += 10);
    for (coll c : all_collectives)
      check<std::int32_t>(w, three, c, 50, symm::min{}, scope::stream, stream += 10);
  }));
}

TEST_CASE("host collectives on a stream, one to sixteen blocks", "[gpu][collectives]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(
      4,
      [](symm::world& w) {
        auto t = w.team();
        std::uint64_t stream = 9000;
        for (std::size_t count : {std::size_t{1}, std::size_t{5000}, std::size_t{100000}}) {
          for (coll c : all_collectives) {
            check<float>(w, t, c, count, symm::plus{}, scope::stream, stream += 10);
            check<std::uint32_t>(w, t, c, count, symm::bit_and{}, scope::stream, stream += 10);
          }
          check<double>(w, t, coll::allreduce, count, symm::plus{}, scope::stream, stream += 10, /*in_place=*/true);
          if (!over_rma(w, t)) check<affine>(w, t, coll::allreduce, count, compose{}, scope::stream, stream += 10);
        }
        // 4 Mi floats (16 MiB) per PE: the two-shot allreduce with the most blocks, and a broadcast of as much.
        check<float>(w, t, coll::allreduce, std::size_t{4} << 20, symm::plus{}, scope::stream, stream += 10);
        check<float>(w, t, coll::broadcast, std::size_t{4} << 20, symm::plus{}, scope::stream, stream += 10, true);
        // The host form without a stream says what to do instead.
        symm::array<float> a(w, 8);
        PE_REQUIRE_ERROR(symm::allreduce(t, a, a, symm::plus{}), symm::errc::unsupported, "allreduce(stream, team");
      },
      [] {
        auto options = symm_gpu_test::gpu_options();
        options.heap_size = std::size_t{256} << 20; // the 16 MiB vectors need 64 MiB buffers (n_pes x count) and
                                                    // scratch
        return options;
      }()));
}

TEST_CASE("collectives over NVSHMEM RMA: split teams, every scope, in place, pieces, unsupported operations",
          "[gpu][collectives][nvshmem]") {
  // Teams with a PE reached through NVSHMEM RMA exist only on the nvshmem backend: with SYMM_NVSHMEM_RMA=1 on one node
  // (tools/gpu-check.sh's gpu_suite_nvshmem_rma), or across nodes. Elsewhere the cases above cover symm's kernels.
  if (symm_gpu_test::tested_backend != symm::backend::nvshmem) return;
  CAPTURE(symm_test::seed());
  auto options = symm_gpu_test::gpu_options();
  options.heap_size = std::size_t{128} << 20; // the reduces of 6 MiB per PE need 24 MiB arrays (n_pes x count)
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(
      4,
      [](symm::world& w) {
        auto whole = w.team();
        if (!over_rma(w, whole)) return; // every peer mapped: symm's own kernels, tested above
        const int me = w.my_pe();
        std::uint64_t stream = 20000;
        // Every collective in every scope on team t (each PE passes its own team; teams of one PE, which have no RMA
        // peer, take symm's kernels), out of place and, where allowed, in place.
        const auto every_form = [&](const symm::team& t, std::size_t count) {
          for (scope s : {scope::thread, scope::warp, scope::block, scope::stream}) {
            for (coll c : all_collectives) {
              check<float>(w, t, c, count, symm::plus{}, s, stream += 10);
              check<std::int32_t>(w, t, c, count, symm::max{}, s, stream += 10);
            }
            for (coll c : {coll::broadcast, coll::reduce, coll::allreduce})
              check<float>(w, t, c, count, symm::plus{}, s, stream += 10, /*in_place=*/true);
          }
        };
        every_form(whole, 1001);
        { // split_strided: disjoint pairs at once, then a split of a split
          auto even = whole.split_strided(0, 2, 2), odd = whole.split_strided(1, 2, 2);
          every_form(even.valid() ? even : odd, 777);
        }
        {
          symm::team three = whole.split_strided(1, 1, 3), nested;  // world PEs 1, 2, 3
          if (three.valid()) nested = three.split_strided(0, 2, 2); // world PEs 1 and 3
          every_form(three, 65);
          every_form(nested, 64);
        }
        { // split_2d: rows {0, 1}, {2, 3} and columns {0, 2}, {1, 3}
          auto [row, column] = whole.split_2d(2);
          PE_REQUIRE_EQ(row.world_pe(0), me / 2 * 2);
          PE_REQUIRE_EQ(column.world_pe(0), me % 2);
          every_form(row, 333);
          every_form(column, 333);
        }
        { // rows {0, 1, 2}, {3} (short) and columns {0, 3}, {1}, {2}
          auto [row, column] = whole.split_2d(3);
          every_form(row, 50);
          every_form(column, 50);
        }
        // NVSHMEM's typed reductions for more (type, operation) pairs.
        check<std::uint32_t>(w, whole, coll::allreduce, 1001, symm::bit_or{}, scope::block, stream += 10);
        check<std::int64_t>(w, whole, coll::allreduce, 999, symm::multiplies{}, scope::stream, stream += 10);
        check<std::uint16_t>(w, whole, coll::reduce_scatter, 300, symm::bit_and{}, scope::stream, stream += 10);
        check<std::int16_t>(w, whole, coll::reduce, 300, cuda::std::plus<>{}, scope::block, stream += 10);
        check<double>(w, whole, coll::reduce, 300, cuda::maximum<>{}, scope::stream, stream += 10, true);
        check<std::uint8_t>(w, whole, coll::allreduce, 300, symm::bit_xor{}, scope::block, stream += 10, true);
        // A rooted reduce larger than its scratch (4 MiB): in pieces, on a stream and in a block, out of and in place.
        const std::size_t big = (std::size_t{6} << 20) / sizeof(float);
        for (scope s : {scope::stream, scope::block}) {
          check<float>(w, whole, coll::reduce, big, symm::plus{}, s, stream += 10);
          check<float>(w, whole, coll::reduce, big, symm::plus{}, s, stream += 10, /*in_place=*/true);
        }
        // What NVSHMEM cannot reduce says so, naming the PE, the team, the type and the operation.
        cudaStream_t cs = w.state()->cuda()->stream();
        symm::array<affine> a(w, 8);
        PE_REQUIRE_ERROR((void) symm::allreduce(cs, whole, a, a, compose{}), symm::errc::unsupported,
                         fmt::format("PE {}:", me), "the world team", "NVSHMEM RMA", "affine", "a user's operation");
        symm::array<symm_collective_test::money> m(w, 4), all(w, 16);
        PE_REQUIRE_ERROR((void) symm::reduce(cs, whole, m, m, symm::plus{}, 0), symm::errc::unsupported,
                         fmt::format("PE {}:", me), "money", "plus");
        PE_REQUIRE_ERROR((void) symm::reduce_scatter(cs, whole, m, all, symm::max{}), symm::errc::unsupported,
                         fmt::format("PE {}:", me), "money", "max");
        auto [row, column] = whole.split_2d(2);
        PE_REQUIRE_ERROR((void) symm::allreduce(cs, row, a, a, compose{}), symm::errc::unsupported,
                         fmt::format("PE {}:", me), "x-team", "a user's operation");
        // Collectives that move bytes take any element type.
        symm::array<affine> b(w, 8);
        symm::broadcast(cs, whole, b, a, 0).wait();
      },
      options));
}
