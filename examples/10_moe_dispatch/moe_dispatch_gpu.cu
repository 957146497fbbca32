// Mixture-of-experts dispatch and combine on the GPU, all on one stream: a router kernel sorts every (token, expert)
// row by the PE of its expert and counts them, the stream form of symm::alltoallv sends the rows (and a side row
// saying which token and which expert) with counts that exist only in device memory, an expert kernel applies each
// PE's experts to what arrived (its row count from the received counts, on the device), a second alltoallv sends the
// results back the way they came, and a kernel sums them with the router's weights into the output tokens. The host
// queues everything and waits once, at the end; then every PE checks its output against a serial reference.
// Run it with `symmrun -n 4 --mps ./moe_dispatch_gpu`.
#include <symm/alltoallv.hpp>
#include <symm/symm.hpp>

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <vector>

#include "moe_dispatch.hpp"

//! The router, one block: this PE's send_counts (rows per target PE) and its rows sorted by target PE, stably (pair
//! j = t * top_k + s before pair j + 1 for the same PE), each with its (token, expert); position[j] is pair j's row,
//! where its result comes back after the combine.
__global__ void route(symm::array_ref<float> send_rows, symm::array_ref<std::uint32_t> send_meta,
                      symm::array_ref<std::uint64_t> send_counts, std::size_t* position, int me, int n) {
  using namespace moe_dispatch;
  const auto target = [&](std::size_t j) {
    return pe_of_expert(expert_of(me, j / top_k, static_cast<int>(j % top_k)), n);
  };
  for (int k = static_cast<int>(threadIdx.x); k < n; k += static_cast<int>(blockDim.x)) {
    std::uint64_t count = 0;
    for (std::size_t j = 0; j < pairs; ++j)
      count += target(j) == k ? 1u : 0u;
    send_counts.local()[static_cast<std::size_t>(k)] = count;
  }
  for (std::size_t j = threadIdx.x; j < pairs; j += blockDim.x) {
    const int to = target(j);
    std::size_t row = 0; // the pairs for the PEs before `to`, and those for `to` before pair j
    for (std::size_t i = 0; i < pairs; ++i)
      row += target(i) < to || (target(i) == to && i < j) ? 1u : 0u;
    position[j] = row;
    const std::size_t t = j / top_k;
    for (std::size_t h = 0; h < hidden; ++h)
      send_rows.local()[row * hidden + h] = input(me, t, h);
    send_meta.local()[row * meta_length] = static_cast<std::uint32_t>(t);
    send_meta.local()[row * meta_length + 1] =
        static_cast<std::uint32_t>(expert_of(me, t, static_cast<int>(j % top_k)));
  }
}

//! The experts: every row that arrived (how many: the sum of recv_counts, read here on the device) through the expert
//! its side row names, after checking that it is the token it claims to be from the PE that sent it and that the
//! expert lives here. Also copies recv_counts into back_counts, the combine's send counts.
__global__ void apply_experts(symm::array_ref<const float> recv_rows, symm::array_ref<const std::uint32_t> recv_meta,
                              const std::uint64_t* recv_counts, symm::array_ref<float> expert_rows,
                              symm::array_ref<std::uint64_t> back_counts, int me, int n, unsigned long long* wrong) {
  using namespace moe_dispatch;
  std::uint64_t rows = 0;
  for (int k = 0; k < n; ++k)
    rows += recv_counts[k];
  const std::uint64_t capacity = recv_rows.size() / hidden;
  if (rows > capacity) rows = capacity; // rows past capacity were never written (and the future throws)
  const std::size_t first = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  if (first < static_cast<std::size_t>(n)) back_counts.local()[first] = recv_counts[first];
  unsigned long long bad = 0;
  for (std::size_t i = first; i < rows * hidden; i += stride) {
    const std::size_t row = i / hidden, h = i % hidden;
    int from = 0; // the PE whose block of rows holds this one: rows [begin, end) came from PE `from`
    for (std::uint64_t end = recv_counts[0]; row >= end; end += recv_counts[from])
      ++from;
    const std::size_t t = recv_meta.local()[row * meta_length];
    const int e = static_cast<int>(recv_meta.local()[row * meta_length + 1]);
    const float x = recv_rows.local()[i];
    if (t >= tokens || pe_of_expert(e, n) != me || x != input(from, t, h)) ++bad;
    expert_rows.local()[i] = expert_compute(e, x);
  }
  if (bad != 0) atomicAdd(wrong, bad);
}

//! The combine's last step: each output token is its experts' results, back in the rows they left from, weighted by
//! the router. Also checks that every PE returned as many rows as this PE sent it.
__global__ void weighted_sum(symm::array_ref<const float> returned_rows, const std::uint64_t* returned_counts,
                             symm::array_ref<const std::uint64_t> send_counts, const std::size_t* position, float* out,
                             int n, unsigned long long* wrong) {
  using namespace moe_dispatch;
  const std::size_t first = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  if (first < static_cast<std::size_t>(n) && returned_counts[first] != send_counts.local()[first])
    atomicAdd(wrong, 1ull);
  for (std::size_t i = first; i < tokens * hidden; i += stride) {
    const std::size_t t = i / hidden, h = i % hidden;
    float sum = 0.0f;
    for (int s = 0; s < top_k; ++s)
      sum += weight_of(s) * returned_rows.local()[position[t * top_k + static_cast<std::size_t>(s)] * hidden + h];
    out[i] = sum;
  }
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace moe_dispatch;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "moe_dispatch_gpu: no GPU is visible; run the host example moe_dispatch instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  if (!pes_fit(n)) {
    if (me == 0)
      fmt::print(stderr, "moe_dispatch_gpu: run it on 1, 2, 4 or 8 PEs ({} experts spread evenly)\n", experts);
    return 2;
  }
  const auto n_pes = static_cast<std::size_t>(n);
  const std::size_t capacity = n_pes * pairs; // the worst case: every PE routes all its pairs to this PE's experts
  symm::array<float> send_rows(world, pairs * hidden), recv_rows(world, capacity * hidden);
  symm::array<std::uint32_t> send_meta(world, pairs * meta_length), recv_meta(world, capacity * meta_length);
  symm::array<std::uint64_t> send_counts(world, n_pes), back_counts(world, n_pes);
  symm::array<float> expert_rows(world, capacity * hidden), returned_rows(world, pairs * hidden);
  const symm::team everyone = world.team(); // lives while the stream uses its view

  // This PE's own device memory: the counts the alltoallv kernels write, where each pair's row is, the output tokens
  // and a counter of wrong values.
  std::uint64_t *recv_counts = nullptr, *returned_counts = nullptr;
  std::size_t* position = nullptr;
  float* out = nullptr;
  unsigned long long* wrong = nullptr;
  check(cudaMalloc(&recv_counts, n_pes * sizeof(std::uint64_t)), "cudaMalloc");
  check(cudaMalloc(&returned_counts, n_pes * sizeof(std::uint64_t)), "cudaMalloc");
  check(cudaMalloc(&position, pairs * sizeof(std::size_t)), "cudaMalloc");
  check(cudaMalloc(&out, tokens * hidden * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&wrong, sizeof(*wrong)), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaMemsetAsync(wrong, 0, sizeof(*wrong), stream), "cudaMemsetAsync");
  const std::span<std::uint64_t> arrived(recv_counts, n_pes), came_back(returned_counts, n_pes);

  // 1. Route, 2. dispatch (the rows, then their (token, expert) with the same counts), 3. the experts, 4. combine:
  // back to PE k go exactly the recv_counts[k] rows that came from it, in the order they came, so each returns to
  // the row it left from. All queued on the stream; nothing waits.
  route<<<1, 128, 0, stream>>>(send_rows, send_meta, send_counts, position, me, n);
  check(cudaGetLastError(), "route launch");
  auto dispatched = symm::alltoallv(stream, everyone, recv_rows, arrived, send_rows, send_counts, hidden);
  auto described = symm::alltoallv(stream, everyone, recv_meta, arrived, send_meta, send_counts, meta_length);
  apply_experts<<<8, 256, 0, stream>>>(recv_rows, recv_meta, recv_counts, expert_rows, back_counts, me, n, wrong);
  check(cudaGetLastError(), "apply_experts launch");
  auto combined = symm::alltoallv(stream, everyone, returned_rows, came_back, expert_rows, back_counts, hidden);
  weighted_sum<<<4, 256, 0, stream>>>(returned_rows, returned_counts, send_counts, position, out, n, wrong);
  check(cudaGetLastError(), "weighted_sum launch");

  // The only wait: each future throws errc::extent_mismatch if its dst could not hold what arrived.
  dispatched.wait();
  described.wait();
  combined.wait();

  std::vector<float> result(tokens * hidden);
  unsigned long long wrong_values = 0;
  check(cudaMemcpy(result.data(), out, result.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(&wrong_values, wrong, sizeof(wrong_values), cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t h = 0; h < hidden; ++h)
      wrong_values += result[t * hidden + h] == reference(me, t, h) ? 0u : 1u;
  if (wrong_values != 0)
    std::fprintf(stderr, "moe_dispatch_gpu: PE %d: %llu values or counts were wrong\n", me, wrong_values);
  symm::array<int> ok(world, n_pes);
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong_values == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : std::vector<int>(symm::remote(ok, 0)))
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("moe_dispatch: {} PEs, {} tokens each, top-{} of {} experts: dispatch and combine match the serial "
                 "reference\n",
                 n, tokens, top_k, experts);
    } else {
      fmt::print("moe_dispatch: {} of {} PEs got wrong values\n", failures, n);
    }
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  for (void* p : {static_cast<void*>(recv_counts), static_cast<void*>(returned_counts), static_cast<void*>(position),
                  static_cast<void*>(out), static_cast<void*>(wrong)})
    check(cudaFree(p), "cudaFree");
  world.barrier();
  return wrong_values == 0 && failures == 0 ? 0 : 1;
}
