// The CUDA backend: device put/get/p/g in thread, warp, block and grid scope, nbi, device barriers, host-side and
// stream-ordered operations; PEs as processes and as threads, data checked element by element against fresh random
// values.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_template_test_macros.hpp>
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <cooperative_groups.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace cg = cooperative_groups;

namespace {

enum class scope { thread, warp, block, grid };
constexpr scope all_scopes[] = {scope::thread, scope::warp, scope::block, scope::grid};
const char* name(scope s) {
  switch (s) {
    case scope::thread: return "thread";
    case scope::warp: return "warp";
    case scope::block: return "block";
    case scope::grid: return "grid";
  }
  return "?";
}

// Each kernel moves [offset, offset + count) of src (local) into dst on PE `pe` (put), or back (get).
template <class T>
__global__ void put_kernel(symm::array_ref<T> dst, symm::array_ref<T> src, int pe, std::size_t offset,
                           std::size_t count, scope s) {
  auto remote = symm::remote(dst, pe).subspan(offset, count);
  auto local = src.local().subspan(offset, count);
  if (s == scope::thread) {
    if (blockIdx.x == 0 && threadIdx.x == 0) symm::put(symm::this_thread(), remote, local);
  } else if (s == scope::warp) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    if (blockIdx.x == 0 && threadIdx.x < 32) symm::put(warp, remote, local);
  } else if (s == scope::block) {
    if (blockIdx.x == 0) symm::put(cg::this_thread_block(), remote, local);
  } else {
    symm::put(cg::this_grid(), remote, local); // the grid shares the copy; no grid sync needed afterwards
  }
}

template <class T>
__global__ void get_kernel(symm::array_ref<T> dst, symm::array_ref<T> src, int pe, std::size_t offset,
                           std::size_t count, scope s) {
  auto remote = symm::remote(src, pe).subspan(offset, count);
  auto local = dst.local().subspan(offset, count);
  if (s == scope::thread) {
    if (blockIdx.x == 0 && threadIdx.x == 0) symm::get(symm::this_thread(), local, remote);
  } else if (s == scope::warp) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    if (blockIdx.x == 0 && threadIdx.x < 32) symm::get(warp, local, remote);
  } else if (s == scope::block) {
    if (blockIdx.x == 0) symm::get(cg::this_thread_block(), local, remote);
  } else {
    symm::get(cg::this_grid(), local, remote);
  }
}

// p and g: one element per thread through pe_ref.
template <class T>
__global__ void p_kernel(symm::array_ref<T> dst, symm::array_ref<T> src, int pe) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < dst.size(); i += gridDim.x * blockDim.x) {
    symm::remote(dst, pe)[i] = src.local()[i];
  }
}
template <class T>
__global__ void g_kernel(symm::array_ref<T> dst, symm::array_ref<T> src, int pe) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < dst.size(); i += gridDim.x * blockDim.x) {
    T v = symm::remote(src, pe)[i];
    dst.local()[i] = v;
  }
}

template <class T>
__global__ void put_nbi_kernel(symm::array_ref<T> dst, symm::array_ref<T> src, int pe) {
  auto block = cg::this_thread_block();
  auto f = symm::put_nbi(block, symm::remote(dst, pe), src.local());
  f.wait();
}

template <class T>
void set_random(const symm::array<T>& a, std::uint64_t stream) {
  symm_gpu_test::host_to_local(a, symm_test::random_values<T>(a.size(), stream));
}

//! Every PE moves its random data to its right neighbour with each scope, by put and by get, and checks the result.
template <class T>
void exchange_with_all_scopes(symm::world& world, std::size_t count) {
  int me = world.my_pe(), n = world.n_pes();
  int right = (me + 1) % n, left = (me + n - 1) % n;
  symm::array<T> src(world, count), dst(world, count);
  std::uint64_t tag = count * 131;
  set_random(src, tag + static_cast<std::uint64_t>(me));
  auto from_left = symm_test::random_values<T>(count, tag + static_cast<std::uint64_t>(left));
  auto from_right = symm_test::random_values<T>(count, tag + static_cast<std::uint64_t>(right));
  for (scope s : all_scopes) {
    // Misaligned windows too: [1, count - 1) shifts both sides by one element.
    for (std::size_t offset : {std::size_t{0}, static_cast<std::size_t>(count > 2 ? 1 : 0)}) {
      std::size_t len = count - 2 * offset;
      symm_gpu_test::fill_now(dst.local().data(), 0xAB, dst.size_bytes());
      world.barrier();
      put_kernel<T><<<s == scope::grid ? 4 : 1, 256>>>(dst, src, right, offset, len, s);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      auto got = symm_gpu_test::local_to_host(dst);
      for (std::size_t i = offset; i < offset + len; ++i) {
        if (std::memcmp(&got[i], &from_left[i], sizeof(T)) != 0) {
          throw std::runtime_error(fmt::format(
              "PE {}: put ({} scope, {} elements at offset {}) element {} differs", me, name(s), len, offset, i));
        }
      }
      symm_gpu_test::fill_now(dst.local().data(), 0xCD, dst.size_bytes());
      get_kernel<T><<<s == scope::grid ? 4 : 1, 256>>>(dst, src, right, offset, len, s);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      got = symm_gpu_test::local_to_host(dst);
      for (std::size_t i = offset; i < offset + len; ++i) {
        if (std::memcmp(&got[i], &from_right[i], sizeof(T)) != 0) {
          throw std::runtime_error(fmt::format(
              "PE {}: get ({} scope, {} elements at offset {}) element {} differs", me, name(s), len, offset, i));
        }
      }
      world.barrier();
    }
  }
}

} // namespace

TEMPLATE_TEST_CASE("device put and get in every scope move every element", "[gpu][rma]", std::uint8_t, float, double,
                   std::int64_t) {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      for (std::size_t count :
           {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{4097}, std::size_t{1} << 20}) {
        exchange_with_all_scopes<TestType>(world, count);
      }
    }));
  }
}

TEST_CASE("device p and g, and put_nbi with its future, on 2, 4 and 8 PEs", "[gpu][rma]") {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      int me = world.my_pe(), n_pes = world.n_pes();
      int right = (me + 1) % n_pes, left = (me + n_pes - 1) % n_pes;
      const std::size_t count = 100003;
      symm::array<int> src(world, count), dst(world, count);
      set_random(src, 7 + static_cast<std::uint64_t>(me));
      auto expected = symm_test::random_values<int>(count, 7 + static_cast<std::uint64_t>(left));
      world.barrier();
      p_kernel<int><<<64, 256>>>(dst, src, right);
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      PE_REQUIRE(symm_gpu_test::local_to_host(dst) == expected);
      symm_gpu_test::fill_now(dst.local().data(), 0, dst.size_bytes());
      g_kernel<int><<<64, 256>>>(dst, src, left);
      GPU_CHECK(cudaDeviceSynchronize());
      PE_REQUIRE(symm_gpu_test::local_to_host(dst) == expected);
      world.barrier();
      symm_gpu_test::fill_now(dst.local().data(), 0, dst.size_bytes());
      world.barrier();
      put_nbi_kernel<int><<<1, 512>>>(dst, src, right);
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      PE_REQUIRE(symm_gpu_test::local_to_host(dst) == expected);
      world.barrier();
    }));
  }
}

namespace {
__host__ __device__ int stamp(int pe, int round, int i) {
  return (pe * 1000 + round) * 100000 + i;
}

//! NVSHMEM's put-block example, ported word for word with symm::synced(block): the threads fill a staging buffer (each
//! the elements other threads copy: filled from the end) and put it without a __syncthreads of their own, then
//! overwrite it at once; and they get a peer's array and each reads elements other threads fetched. Correct only if
//! the block synchronises before and after each copy, as NVSHMEM's put_block and get_block do. (Launch bounds: the
//! nvshmem build's relocatable device code otherwise uses more registers than 1024 threads may have.)
__global__ void __launch_bounds__(1024)
    synced_block_port(symm::array_ref<int> stage, symm::array_ref<int> dst, symm::array_ref<const int> src,
                      int* fetched, int* out, int me, int right, int round) {
  const auto block = symm::synced(cg::this_thread_block());
  const int n = static_cast<int>(stage.size());
  const int first = n - 1 - static_cast<int>(threadIdx.x);
  auto staged = stage.local();
  for (int i = first; i >= 0; i -= static_cast<int>(blockDim.x))
    staged[i] = stamp(me, round, i);
  symm::put(block, symm::remote(dst, right), staged);
  for (int i = first; i >= 0; i -= static_cast<int>(blockDim.x))
    staged[i] = -1;
  symm::get(block, cuda::std::span<int>(fetched, src.size()), symm::remote(src, right));
  for (int i = first; i >= 0; i -= static_cast<int>(blockDim.x))
    out[i] = fetched[i];
}
} // namespace

TEST_CASE("symm::synced(block): a literal port of NVSHMEM's put_block and get_block is race-free", "[gpu][rma]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), n_pes = world.n_pes();
    const int right = (me + 1) % n_pes, left = (me + n_pes - 1) % n_pes;
    const std::size_t count = std::size_t{1} << 16;
    symm::array<int> stage(world, count), dst(world, count), src(world, count);
    std::vector<int> mine(count), from_right(count);
    for (std::size_t i = 0; i < count; ++i) {
      mine[i] = stamp(me, 999, static_cast<int>(i));
      from_right[i] = stamp(right, 999, static_cast<int>(i));
    }
    symm_gpu_test::host_to_local(src, mine);
    int *fetched = nullptr, *out = nullptr;
    GPU_CHECK(cudaMalloc(&fetched, count * sizeof(int)));
    GPU_CHECK(cudaMalloc(&out, count * sizeof(int)));
    for (int round = 0; round < 20; ++round) {
      symm_gpu_test::fill_now(dst.local().data(), 0xAB, dst.size_bytes());
      symm_gpu_test::fill_now(fetched, 0xCD, count * sizeof(int));
      world.barrier();
      synced_block_port<<<1, 1024>>>(stage, dst, src, fetched, out, me, right, round);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      const auto got = symm_gpu_test::local_to_host(dst);
      const auto read = symm_gpu_test::host_copy_of(out, count);
      for (std::size_t i = 0; i < count; ++i) {
        const int sent = stamp(left, round, static_cast<int>(i));
        if (got[i] != sent) {
          throw std::runtime_error(fmt::format(
              "PE {}: round {}: put element {} is {:#x}, PE {} staged {:#x}", me, round, i, got[i], left, sent));
        }
        if (read[i] != from_right[i]) {
          throw std::runtime_error(fmt::format("PE {}: round {}: get element {} read {:#x}, PE {} holds {:#x}", me,
                                               round, i, read[i], right, from_right[i]));
        }
      }
    }
    GPU_CHECK(cudaFree(fetched));
    GPU_CHECK(cudaFree(out));
  }));
}

namespace {
// Rounds of: put my round stamp into every PE's slot for me, barrier, check every slot holds this round's stamps.
__global__ void barrier_rounds(symm::array_ref<std::uint64_t> slots, symm::world_ref w, int rounds, int channel,
                               unsigned* errors) {
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  for (int r = 1; r <= rounds; ++r) {
    for (int p = static_cast<int>(block.thread_rank()); p < n; p += static_cast<int>(block.num_threads())) {
      symm::remote(slots, p)[static_cast<std::size_t>(me)] = static_cast<std::uint64_t>(r) * 1000 + me;
    }
    symm::barrier_all(block, w, channel);
    for (int p = static_cast<int>(block.thread_rank()); p < n; p += static_cast<int>(block.num_threads())) {
      if (slots.local()[static_cast<std::size_t>(p)] != static_cast<std::uint64_t>(r) * 1000 + p) atomicAdd(errors, 1u);
    }
    symm::sync_all(block, w, channel); // nobody writes round r + 1 before everyone checked round r
  }
}
} // namespace

TEST_CASE("device barriers order puts, on several channels from concurrent streams", "[gpu][barrier]") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      symm::array<std::uint64_t> a(world, static_cast<std::size_t>(world.n_pes()));
      symm::array<std::uint64_t> b(world, static_cast<std::size_t>(world.n_pes()));
      symm::array<std::uint64_t> c(world, static_cast<std::size_t>(world.n_pes()));
      unsigned* errors = nullptr;
      GPU_CHECK(cudaMalloc(&errors, 3 * sizeof(unsigned)));
      symm_gpu_test::fill_now(errors, 0, 3 * sizeof(unsigned));
      cudaStream_t s1, s2, s3;
      GPU_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
      GPU_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
      GPU_CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
      world.barrier(); // every PE's CUDA set-up is done before any waiting kernel runs (gpu_support.cuh)
      // Three barrier sequences at once, on channels 1, 2 and 3: they must not cross. The block of one thread
      // signals and awaits every other PE itself, stepping around the ring from its first peer (at 4 and 8 PEs).
      barrier_rounds<<<1, 128, 0, s1>>>(a, world, 200, 1, errors);
      barrier_rounds<<<1, 32, 0, s2>>>(b, world, 200, 2, errors + 1);
      barrier_rounds<<<1, 1, 0, s3>>>(c, world, 200, 3, errors + 2);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s1));
      GPU_CHECK(cudaStreamSynchronize(s2));
      GPU_CHECK(cudaStreamSynchronize(s3));
      auto counted = symm_gpu_test::host_copy_of(errors, 3);
      PE_REQUIRE_EQ(counted[0], 0u);
      PE_REQUIRE_EQ(counted[1], 0u);
      PE_REQUIRE_EQ(counted[2], 0u);
      GPU_CHECK(cudaStreamDestroy(s1));
      GPU_CHECK(cudaStreamDestroy(s2));
      GPU_CHECK(cudaStreamDestroy(s3));
      GPU_CHECK(cudaFree(errors));
      world.barrier();
    }));
  }
}

TEST_CASE("host-side and stream-ordered operations on the CUDA backend", "[gpu][host]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    PE_REQUIRE(world.backend() == symm_gpu_test::tested_backend);
    int me = world.my_pe(), n = world.n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t count = (std::size_t{8} << 20) / sizeof(double);
    symm::array<double> src(world, count), dst(world, count);
    auto mine = symm_test::random_values<double>(count, 99 + static_cast<std::uint64_t>(me));
    auto lefts = symm_test::random_values<double>(count, 99 + static_cast<std::uint64_t>(left));
    // Blocking host put from host memory, and p/g of single elements.
    symm::remote(dst, right) = mine;
    symm::remote(dst, right)[5] = -1.25;
    world.barrier();
    auto got = symm_gpu_test::local_to_host(dst);
    lefts[5] = -1.25;
    PE_REQUIRE(got == lefts);
    double g = symm::remote(dst, right)[5];
    PE_REQUIRE_EQ(g, -1.25);
    std::vector<double> back = symm::remote(dst, right);
    mine[5] = -1.25;
    PE_REQUIRE(back == mine);
    world.barrier();
    // Stream-ordered put from device memory, and get into device memory, completed through futures.
    symm_gpu_test::host_to_local(src, mine);
    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GPU_CHECK(cudaMemsetAsync(dst.local().data(), 0, dst.size_bytes(), stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    world.barrier();
    auto f = symm::put(stream, symm::remote(dst, right), src.local());
    f.wait();
    world.barrier();
    PE_REQUIRE(symm_gpu_test::local_to_host(dst) == lefts);
    double* landing = nullptr;
    GPU_CHECK(cudaMalloc(&landing, count * sizeof(double)));
    auto g2 = symm::get(stream, cuda::std::span<double>(landing, count), symm::remote(src, left));
    g2.wait();
    PE_REQUIRE(symm_gpu_test::host_copy_of(landing, count) == lefts);
    // Non-blocking host forms on the CUDA backend, completed by quiet().
    auto nb = symm::put_nbi(symm::remote(dst, right).first(10), std::vector<double>(10, 3.5));
    symm::quiet();
    PE_REQUIRE(nb.ready());
    world.barrier();
    PE_REQUIRE_EQ(symm::remote(dst, me)[9].get(), 3.5);
    GPU_CHECK(cudaFree(landing));
    GPU_CHECK(cudaStreamDestroy(stream));
    world.barrier();
  }));
}

TEST_CASE("errors on the CUDA backend name the PE and the values", "[gpu][errors]") {
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        symm::array<float> a(world, 16);
        PE_REQUIRE_ERROR((void) symm::remote(a, 2), symm::errc::invalid_pe, "names PE 2", "n_pes = 2");
        std::vector<float> five(5);
        PE_REQUIRE_ERROR(symm::remote(a, 0) = five, symm::errc::extent_mismatch, "16 elements", "has 5");
        PE_REQUIRE_ERROR(symm::array<double>(world, std::size_t{1} << 40), symm::errc::heap_exhausted, "needs");
        world.barrier();
      },
      {.world = symm_gpu_test::gpu_options()}));
}

TEST_CASE("the nvshmem backend: peers mapped or reached through NVSHMEM RMA, one PE per process", "[gpu][nvshmem]") {
  if (symm_gpu_test::tested_backend != symm::backend::nvshmem) return; // the cuda build of the suite: nothing to do
  // SYMM_NVSHMEM_RMA=1 sends every other PE through NVSHMEM RMA, as for a peer on another node.
  const char* forced = std::getenv("SYMM_NVSHMEM_RMA");
  const bool rma = forced != nullptr && std::string(forced) == "1";
  REQUIRE_NOTHROW(symm::launch(
      2,
      [rma](symm::world& world) {
        const int me = world.my_pe(), other = 1 - me;
        PE_REQUIRE(world.state()->kind() == symm::backend::nvshmem);
        PE_REQUIRE(world.state()->mapped(me));
        PE_REQUIRE_EQ(world.state()->mapped(other), !rma);
        symm::array<float> a(world, 64);
        std::vector<float> mine(64, static_cast<float>(me + 1));
        symm::remote(a, other) = mine; // a host put through the mapping or NVSHMEM, staged from host memory
        world.barrier();
        PE_REQUIRE_EQ(symm::remote(a, me)[63].get(), static_cast<float>(other + 1));
        PE_REQUIRE_EQ(symm::remote(a, other)[5].get(), static_cast<float>(me + 1));
        // Collectives over RMA peers (NVSHMEM's): test_gpu_collectives.cu's [nvshmem] case.
        world.barrier();
      },
      {.world = symm_gpu_test::gpu_options()}));
  try {
    (void) symm::launch(2, [](symm::world&) {},
                        {.mode = symm::launch_mode::threads, .world = symm_gpu_test::gpu_options()});
    FAIL("PEs as threads on the nvshmem backend should be refused");
  } catch (const symm::error& e) {
    REQUIRE(e.code() == symm::errc::unsupported);
    REQUIRE(std::string(e.what()).find("one PE per process") != std::string::npos);
  }
}

namespace {
//! Stores i + value into element i through a plain pointer (remote(x, pe).data()), as a hand-written kernel would.
__global__ void store_through(std::uint32_t* peer, std::size_t n, std::uint32_t value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    peer[i] = static_cast<std::uint32_t>(i) + value;
}
} // namespace

TEST_CASE("array_options on the GPU heap: zeroed arrays read 0 where an array was written, alignment; data() is a "
          "pointer a kernel stores through",
          "[gpu][rma][options]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    constexpr std::size_t n = 1 << 14;
    {
      symm::array<std::uint32_t> dirty(world, n);
      symm_gpu_test::fill_now(dirty.local().data(), 0xab, dirty.size_bytes());
      world.barrier();
    }
    symm::array<std::uint32_t> zeroed(world, n, {.zeroed = true, .alignment = 4096});
    PE_REQUIRE_EQ(reinterpret_cast<std::uintptr_t>(zeroed.local().data()) % 4096, std::uintptr_t{0});
    const std::vector<std::uint32_t> read = symm_gpu_test::local_to_host(zeroed);
    PE_REQUIRE(read == std::vector<std::uint32_t>(n, 0u));

    std::uint32_t* peer = symm::remote(zeroed, other).data();
    if (!world.state()->mapped(other)) {
      PE_REQUIRE(peer == nullptr); // reached only through NVSHMEM RMA: no pointer to give
    } else {
      PE_REQUIRE(peer != nullptr);
      world.barrier(); // every PE has read its zeros before the peer stores
      store_through<<<16, 256>>>(peer, n, 1000u * static_cast<std::uint32_t>(me));
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      const std::vector<std::uint32_t> stored = symm_gpu_test::local_to_host(zeroed);
      for (std::size_t i = 0; i < n; i += 257)
        PE_REQUIRE_EQ(stored[i], static_cast<std::uint32_t>(i) + 1000u * static_cast<std::uint32_t>(other));
    }
    world.barrier();
  }));
}

namespace {
namespace md = cuda::std;
using int_grid = symm::mdarray_ref<int, md::dextents<int, 2>>;

int grid_tag(int pe, int i, int j) {
  return pe * 1000000 + i * 1000 + j;
}

//! Writes grid_tag(pe, i, j) into element (i, j) of this PE's copy of `grid`, from the host.
void upload_tags(symm::mdarray<int, md::dextents<int, 2>>& grid, int pe) {
  const int rows = grid.extent(0), cols = grid.extent(1);
  std::vector<int> tags(grid.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      tags[static_cast<std::size_t>(i * cols + j)] = grid_tag(pe, i, j);
  GPU_CHECK(cudaMemcpy(grid.local().data_handle(), tags.data(), tags.size() * sizeof(int), cudaMemcpyHostToDevice));
}

// My column 7 into the right neighbour's column 0 (strided on both sides), with one block. Then, in a second launch
// after a barrier, my row 3 without its column 0 into its last row (contiguous on both sides: the vectorised path).
// One warp gets a 3 x 4 tile of the left neighbour's copy into a column-major buffer.
__global__ void md_halo_kernel(int_grid grid, int right) {
  symm::put(cg::this_thread_block(), symm::submdspan(symm::remote(grid, right), md::full_extent, 0),
            symm::submdspan(grid.local(), md::full_extent, 7));
}
__global__ void md_row_kernel(int_grid grid, int right) {
  const int last = grid.extent(0) - 1, cols = grid.extent(1);
  symm::put(cg::this_thread_block(), symm::submdspan(symm::remote(grid, right), last, md::pair{1, cols}),
            symm::submdspan(grid.local(), 3, md::pair{1, cols}));
}
__global__ void md_tile_kernel(int_grid grid, int left, int* tile) {
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> out(tile, 3, 4);
  auto from = symm::submdspan(symm::remote(grid, left), md::pair{1, 4}, md::pair{2, 6});
  if (threadIdx.x < 32) symm::get_nbi(cg::tiled_partition<32>(cg::this_thread_block()), out, from).wait();
}

// Tiles whose rows all start 16-byte aligned on both sides (a 40-int grid: 160-byte rows): copied row by row with
// 16-byte vectors, a team of threads a row. A block puts a 32 x 32 tile (128-byte rows, teams of 8); a warp gets a
// 12 x 6 tile (24-byte rows: one vector and an 8-byte tail) into a buffer of 8-int rows; one thread puts a 3 x 4 tile;
// a group of 4 threads puts an 18 x 4 tile (one vector a row, a thread a row: four rows at a time, then two); another
// thread puts a 4 x 8 tile (two vectors a row, four rows at a time).
// No put lands where a put or the get reads (the puts read rows 21-24 columns 0-7 and rows 32-63, the get rows 5-16
// columns 0-5).
__global__ void md_aligned_tiles_kernel(int_grid grid, int right, int left, int* out) {
  symm::put(cg::this_thread_block(), symm::submdspan(symm::remote(grid, right), md::pair{0, 32}, md::pair{8, 40}),
            symm::submdspan(grid.local(), md::pair{32, 64}, md::pair{4, 36}));
  md::mdspan<int, md::dextents<int, 2>> buffer(out, 12, 8);
  if (threadIdx.x < 32)
    symm::get(cg::tiled_partition<32>(cg::this_thread_block()),
              symm::submdspan(buffer, md::full_extent, md::pair{0, 6}),
              symm::submdspan(symm::remote(grid, left), md::pair{5, 17}, md::pair{0, 6}));
  if (threadIdx.x == 0)
    symm::put(symm::this_thread(), symm::submdspan(symm::remote(grid, right), md::pair{40, 43}, md::pair{0, 4}),
              symm::submdspan(grid.local(), md::pair{50, 53}, md::pair{36, 40}));
  if (threadIdx.x == 1)
    symm::put(symm::this_thread(), symm::submdspan(symm::remote(grid, right), md::pair{17, 21}, md::pair{0, 8}),
              symm::submdspan(grid.local(), md::pair{21, 25}, md::pair{0, 8}));
  const auto quad = cg::tiled_partition<4>(cg::this_thread_block());
  if (quad.meta_group_rank() == 8)
    symm::put(quad, symm::submdspan(symm::remote(grid, right), md::pair{43, 61}, md::pair{0, 4}),
              symm::submdspan(grid.local(), md::pair{32, 50}, md::pair{36, 40}));
}

// Teams wider than a lane's share and a group that is not a power of two, on a 28 x 40 grid: a block of 96 threads puts
// a 9 x 12 tile (3 vectors a row: teams of 4 with one lane idle, 24 teams of which 9 have a row), a group of 4 threads
// a 5 x 36 tile (9 vectors a row: lane 0 moves three, the others two; four rows at a time, then one). The puts land in
// rows 0-8 and 18-22 and read rows 9-17 and 23-27.
__global__ void md_team_shapes_kernel(int_grid grid, int right) {
  symm::put(cg::this_thread_block(), symm::submdspan(symm::remote(grid, right), md::pair{0, 9}, md::pair{4, 16}),
            symm::submdspan(grid.local(), md::pair{9, 18}, md::pair{0, 12}));
  const auto quad = cg::tiled_partition<4>(cg::this_thread_block());
  if (quad.meta_group_rank() == 0)
    symm::put(quad, symm::submdspan(symm::remote(grid, right), md::pair{18, 23}, md::pair{4, 40}),
              symm::submdspan(grid.local(), md::pair{23, 28}, md::pair{0, 36}));
}

// A row-major buffer put whole into the right neighbour's column-major array: every element once, the block stepping
// through the remote side's columns (its contiguous dimension) first.
__global__ void md_left_kernel(symm::mdarray_ref<int, md::dextents<int, 2>, md::layout_left> grid, int right,
                               const int* row_major) {
  symm::put(cg::this_thread_block(), symm::remote(grid, right),
            md::mdspan<const int, md::dextents<int, 2>>(row_major, grid.extent(0), grid.extent(1)));
}
} // namespace

TEST_CASE("mdarray on the GPU heap: tiles of aligned rows, copied a row per team of threads; host nbi forms",
          "[gpu][rma][mdarray]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), pes = world.n_pes(), right = (me + 1) % pes, left = (me + pes - 1) % pes;
      constexpr int rows = 64, cols = 40;
      symm::mdarray<int, md::dextents<int, 2>> grid(world, rows, cols);
      upload_tags(grid, me);
      int* out = nullptr;
      GPU_CHECK(cudaMalloc(&out, 12 * 8 * sizeof(int)));
      GPU_CHECK(cudaMemset(out, 0xff, 12 * 8 * sizeof(int)));
      world.barrier();
      md_aligned_tiles_kernel<<<1, 128>>>(grid, right, left, out);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      const std::vector<int> buffer = symm_gpu_test::host_copy_of(out, 12 * 8);
      GPU_CHECK(cudaFree(out));
      world.barrier();
      const std::vector<int> got = symm_gpu_test::host_copy_of(grid.local().data_handle(), grid.size());
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          int want = grid_tag(me, i, j);
          if (i < 32 && j >= 8) want = grid_tag(left, i + 32, j - 4);
          if (i >= 40 && i < 43 && j < 4) want = grid_tag(left, i + 10, j + 36);
          if (i >= 43 && i < 61 && j < 4) want = grid_tag(left, i - 11, j + 36);
          if (i >= 17 && i < 21 && j < 8) want = grid_tag(left, i + 4, j);
          PE_REQUIRE_EQ(got[static_cast<std::size_t>(i * cols + j)], want);
        }
      for (int i = 0; i < 12; ++i) // rows 5-16, columns 0-5 of the left PE's copy: no put writes there
        for (int j = 0; j < 8; ++j)
          PE_REQUIRE_EQ(buffer[static_cast<std::size_t>(i * 8 + j)], j < 6 ? grid_tag(left, i + 5, j) : -1);
      world.barrier();

      // Row-major into column-major, element by element in the remote side's order.
      symm::mdarray<int, md::dextents<int, 2>, md::layout_left> cm(world, 16, 8);
      std::vector<int> rm(16 * 8);
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j)
          rm[static_cast<std::size_t>(i * 8 + j)] = grid_tag(me, i, j);
      int* rm_device = nullptr;
      GPU_CHECK(cudaMalloc(&rm_device, rm.size() * sizeof(int)));
      GPU_CHECK(cudaMemcpy(rm_device, rm.data(), rm.size() * sizeof(int), cudaMemcpyHostToDevice));
      md_left_kernel<<<1, 96>>>(cm, right, rm_device);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      GPU_CHECK(cudaFree(rm_device));
      world.barrier();
      const std::vector<int> cm_read = symm_gpu_test::host_copy_of(cm.local().data_handle(), 16 * 8);
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j)
          PE_REQUIRE_EQ(cm_read[static_cast<std::size_t>(i + 16 * j)], grid_tag(left, i, j));
      world.barrier();

      // The host's non-blocking forms on the GPU heap: a 4 x 5 tile from host memory into the right neighbour's rows
      // 44-47, then a column of it back from this PE's own copy.
      std::vector<int> tile(4 * 5);
      for (std::size_t v = 0; v < tile.size(); ++v)
        tile[v] = -(me * 100 + static_cast<int>(v));
      symm::put_nbi(symm::submdspan(symm::remote(grid, right), md::pair{44, 48}, md::pair{10, 15}),
                    md::mdspan<const int, md::dextents<int, 2>>(tile.data(), 4, 5))
          .wait();
      world.barrier();
      std::vector<int> column(4);
      symm::get_nbi(md::mdspan<int, md::dextents<int, 1>>(column.data(), 4),
                    symm::submdspan(symm::remote(grid, me), md::pair{44, 48}, 12))
          .wait();
      for (int i = 0; i < 4; ++i)
        PE_REQUIRE_EQ(column[static_cast<std::size_t>(i)], -(left * 100 + i * 5 + 2));
      world.barrier();

      // Teams and groups of other shapes (md_team_shapes_kernel), on a grid of their own.
      symm::mdarray<int, md::dextents<int, 2>> shapes(world, 28, cols);
      upload_tags(shapes, me);
      world.barrier();
      md_team_shapes_kernel<<<1, 96>>>(shapes, right);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      const std::vector<int> shaped = symm_gpu_test::host_copy_of(shapes.local().data_handle(), shapes.size());
      for (int i = 0; i < 28; ++i)
        for (int j = 0; j < cols; ++j) {
          int want = grid_tag(me, i, j);
          if (i < 9 && j >= 4 && j < 16) want = grid_tag(left, i + 9, j - 4);
          if (i >= 18 && i < 23 && j >= 4) want = grid_tag(left, i + 5, j - 4);
          PE_REQUIRE_EQ(shaped[static_cast<std::size_t>(i * cols + j)], want);
        }
      world.barrier();
    }));
  }
}

TEST_CASE("mdarray on the GPU heap: strided device put and get of a column and a tile, host put and get of a row "
          "and a column",
          "[gpu][rma][mdarray]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), pes = world.n_pes(), right = (me + 1) % pes, left = (me + pes - 1) % pes;
      constexpr int rows = 300, cols = 33;
      symm::mdarray<int, md::dextents<int, 2>> grid(world, rows, cols);
      upload_tags(grid, me);
      world.barrier();

      md_halo_kernel<<<1, 128>>>(grid, right);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      std::vector<int> got = symm_gpu_test::host_copy_of(grid.local().data_handle(), grid.size());
      for (int i = 0; i < rows; ++i) {
        PE_REQUIRE_EQ(got[static_cast<std::size_t>(i * cols)], grid_tag(left, i, 7));
        PE_REQUIRE_EQ(got[static_cast<std::size_t>(i * cols + 1)], grid_tag(me, i, 1));
      }
      world.barrier(); // read before the row lands

      md_row_kernel<<<1, 128>>>(grid, right);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      world.barrier();
      got = symm_gpu_test::host_copy_of(grid.local().data_handle(), grid.size());
      PE_REQUIRE_EQ(got[static_cast<std::size_t>((rows - 1) * cols)], grid_tag(left, rows - 1, 7));
      for (int j = 1; j < cols; ++j)
        PE_REQUIRE_EQ(got[static_cast<std::size_t>((rows - 1) * cols + j)], grid_tag(left, 3, j));

      int* tile = nullptr;
      GPU_CHECK(cudaMalloc(&tile, 12 * sizeof(int)));
      md_tile_kernel<<<1, 64>>>(grid, left, tile);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      const std::vector<int> tile_read = symm_gpu_test::host_copy_of(tile, 12);
      GPU_CHECK(cudaFree(tile));
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          PE_REQUIRE_EQ(tile_read[static_cast<std::size_t>(i + 3 * j)], grid_tag(left, 1 + i, 2 + j));
      world.barrier();

      // Host forms: a row from host memory into the right neighbour's row 5 (one cudaMemcpy2D), and the left
      // neighbour's last column into a host vector (rows of one element, pitch of a row).
      std::vector<int> row(cols);
      for (int j = 0; j < cols; ++j)
        row[static_cast<std::size_t>(j)] = -(me * 100 + j);
      symm::put(symm::submdspan(symm::remote(grid, right), 5, md::full_extent),
                md::mdspan<const int, md::dextents<int, 1>>(row.data(), cols));
      world.barrier();
      std::vector<int> column(rows);
      symm::get(md::mdspan<int, md::dextents<int, 1>>(column.data(), rows),
                symm::submdspan(symm::remote(grid, left), md::full_extent, cols - 1));
      const int left_of_left = (left + pes - 1) % pes;
      for (int i = 0; i < rows; ++i)
        PE_REQUIRE_EQ(column[static_cast<std::size_t>(i)],
                      i == 5          ? -(left_of_left * 100 + cols - 1)
                      : i == rows - 1 ? grid_tag(left_of_left, 3, cols - 1)
                                      : grid_tag(left, i, cols - 1));
      world.barrier();

      // Stream forms: a 2 x 3 tile from host memory into the right neighbour's corner, and its own corner back.
      cudaStream_t stream = nullptr;
      GPU_CHECK(cudaStreamCreate(&stream));
      std::vector<int> corner{me, me + 1, me + 2, me + 3, me + 4, me + 5};
      symm::put(stream, symm::submdspan(symm::remote(grid, right), md::pair{0, 2}, md::pair{cols - 3, cols}),
                md::mdspan<const int, md::extents<int, 2, 3>>(corner.data()))
          .wait();
      world.barrier();
      std::vector<int> back(6);
      symm::get(stream, md::mdspan<int, md::dextents<int, 2>, md::layout_left>(back.data(), 2, 3),
                symm::submdspan(symm::remote(grid, me), md::pair{0, 2}, md::pair{cols - 3, cols}))
          .wait();
      GPU_CHECK(cudaStreamDestroy(stream));
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          PE_REQUIRE_EQ(back[static_cast<std::size_t>(i + 2 * j)], left + i * 3 + j);
      world.barrier();
    }));
  }
}
