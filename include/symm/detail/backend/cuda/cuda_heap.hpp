// symm/detail/backend/cuda/cuda_heap.hpp: the CUDA backend's symmetric heap. Each PE creates one VMM segment on its
// GPU, exports it as a POSIX fd, the bootstrap passes every fd to every PE (SCM_RIGHTS), and each PE maps all of them.
// The peer table (each PE's heap base as mapped here) lives on the host and in device memory, for kernels.
#pragma once

#include <symm/detail/backend/cuda/check.hpp>
#include <symm/detail/backend/cuda/host_atomics_kernels.hpp>
#include <symm/detail/backend/cuda/module_loading.hpp>
#include <symm/detail/backend/cuda/result_words.hpp>
#include <symm/detail/backend/cuda/vmm_segment.hpp>
#include <symm/detail/backend/nvshmem/nvshmem_heap.hpp>
#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/collective_tuning.hpp>
#include <symm/detail/completion.hpp>
#include <symm/detail/copy_2d.hpp>
#include <symm/detail/device_choice.hpp>
#include <symm/detail/device_wait.hpp>
#include <symm/detail/env.hpp>
#include <symm/detail/job_layout.hpp>
#include <symm/detail/topology.hpp>
#include <symm/detail/wait_trap_record.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! How many GPUs this process sees; 0 when there is no usable driver or device (never throws). symm's first CUDA call
//! (backend choice, heap creation), so it asks for eager module loading first (module_loading.hpp).
inline int cuda_device_count() noexcept {
  request_eager_module_loading();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void) cudaGetLastError();
    return 0;
  }
  return count;
}

//! Completion of an operation ordered on a stream: complete once the stream has run up to it. No event is recorded per
//! operation (that costs more host time than a small copy), and nothing is allocated (the state lives in the future):
//! ready() and wait() look at the whole stream, so wait() also waits for work enqueued on the stream after the
//! operation. The stream already orders what follows it, so a future of a stream operation does not wait when it is
//! destroyed.
//!
//! An operation issued while its stream is being captured into a CUDA graph did not run: it runs at each launch of
//! the graph. Its future has nothing to wait for, and querying or synchronising a capturing stream would invalidate the
//! capture, so ready() and wait() throw errc::unsupported naming the operation instead.
struct stream_operation_behaviour {
  //! Whether `stream` is being captured into a graph now (false when CUDA cannot tell, e.g. for the legacy stream).
  static bool is_capturing(cudaStream_t stream) noexcept {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
      (void) cudaGetLastError();
      return false;
    }
    return status != cudaStreamCaptureStatusNone;
  }
  static bool ready(const stream_state& s) {
    if (s.recorded) throw_recorded(s, "ready()");
    cudaError_t status = cudaStreamQuery(static_cast<cudaStream_t>(s.stream));
    if (status == cudaErrorNotReady) return false;
    if (status != cudaSuccess) throw_cuda_error(status, "cudaStreamQuery of a stream-ordered operation");
    return true;
  }
  static void wait(const stream_state& s) {
    if (s.recorded) throw_recorded(s, "wait()");
    SYMM_TRY_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(s.stream)));
  }
  [[noreturn]] static void throw_recorded(const stream_state& s, const char* call) {
    SYMM_THROW(errc::unsupported,
               "PE {}: future::{} of {}, which was recorded into a CUDA graph (its stream was being captured when it "
               "was issued): it runs each time the graph is launched, so this future has nothing to wait for; "
               "synchronise the stream the graph is launched on instead (cudaGraphLaunch, then cudaStreamSynchronize)",
               s.pe, call, s.what);
  }
  static constexpr stream_state::operations_table table{&ready, &wait};
};

//! The completion state of an operation just enqueued on `stream` by PE `pe`; `what` names it (a string literal).
inline stream_state stream_operation(cudaStream_t stream, const char* what, int pe) noexcept {
  return stream_state{&stream_operation_behaviour::table, stream, what, pe,
                      stream_operation_behaviour::is_capturing(stream)};
}

//! The same as a completion object, where one is needed (host non-blocking copies, a composed completion).
class stream_completion final : public completion {
public:
  stream_completion(cudaStream_t stream, const char* what, int pe) noexcept
      : state_(stream_operation(stream, what, pe)) {}
  explicit stream_completion(const stream_state& state) noexcept : state_(state) {}
  bool ready() override { return stream_operation_behaviour::ready(state_); }
  void wait() override { stream_operation_behaviour::wait(state_); }

private:
  stream_state state_;
};

//! Where a GPU heap's memory comes from: a VMM segment of symm's, mapped by every PE of the node (the cuda backend), or
//! NVSHMEM's symmetric heap (the nvshmem backend, detail/backend/nvshmem/nvshmem_heap.hpp).
enum class heap_source { vmm, nvshmem };

class cuda_heap {
public:
  //! Collective. `device`: world_options::device (< 0: not set); detail::choose_device applies the policy.
  cuda_heap(bootstrap& boot, const job_info& job, std::size_t heap_bytes, int device,
            heap_source source = heap_source::vmm) {
    const char* backend_name = source == heap_source::nvshmem ? "nvshmem" : "cuda";
    if (source == heap_source::nvshmem && !SYMM_NVSHMEM_BACKEND()) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: the nvshmem backend was asked for, but this program was built without it "
                 "(SYMM_ENABLE_NVSHMEM=0); build it with symm_nvshmem_dep (docs/backends.md) or use SYMM_BACKEND=cuda",
                 job.pe);
    }
    const device_choice choice = choose_device(gather_device_facts(job, device, backend_name));
    pe_ = job.pe;
    device_ = choice.device;
    device_reason_ = choice.reason;
    SYMM_TRY_CUDA(cudaSetDevice(device_));
    char bus_id[32] = {};
    SYMM_TRY_CUDA(cudaDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof(bus_id)), device_));
    pci_bus_id_ = bus_id;
    std::vector<gpu_user> users = check_gpu_sharing(boot, job);
    peer_problem problem;
    const std::vector<pair_facts> asked = ask_about_peers(users, job.pe, problem);
    // NVSHMEM reaches peers without peer access through its proxy: only symm's own mapping needs it.
    if (source == heap_source::vmm) check_peer_access(boot, job, users, problem);
    topology_ = gather_topology(boot, job, std::move(users), asked);
    warn_if_lazy_module_loading(job.pe);
    // Loading symm's host-side kernels and pinning their words can wait for running kernels: do it now, before any
    // kernel of this job runs (see module_loading.hpp).
    prepare_host_side_kernels(device_);
    SYMM_TRY_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    result_words_ = result_word_pool::make(); // pinned now, before any kernel runs (result_words.hpp)
    discarded_result_ = result_words_->take();
    const auto n = static_cast<std::size_t>(job.n_pes);
    if (source == heap_source::nvshmem) {
#if SYMM_NVSHMEM_BACKEND()
      nvshmem_.emplace(boot, job, heap_bytes);
      bases_.assign(nvshmem_->bases(), nvshmem_->bases() + n);
      heap_bytes_ = nvshmem_->heap_bytes();
#endif
    } else {
      map_vmm_heap(boot, job, heap_bytes);
    }
    SYMM_TRY_CUDA(cudaMalloc(reinterpret_cast<void**>(&device_table_), n * sizeof(std::byte*)));
    SYMM_TRY_CUDA(cudaMemcpy(device_table_, bases_.data(), n * sizeof(std::byte*), cudaMemcpyHostToDevice));
    // A fresh heap reads as zeros, like the host backend's, so that signals and flags start at 0.
    std::byte* const mine = bases_[static_cast<std::size_t>(job.pe)];
    SYMM_TRY_CUDA(cudaMemsetAsync(mine, 0, heap_bytes_, stream_));
    // The trap record, whose first member is the failure word (detail/wait_trap_record.hpp): host memory that this
    // PE's kernels read (the word) and write (why a wait trapped) and its host side writes (the word) and reads while
    // they run, or after a trap ended the context. Its device address goes into the heap's header, where every device
    // wait that holds a view of the heap finds it. Pinned now, before any kernel of this job runs.
    SYMM_TRY_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&trap_record_), sizeof(wait_trap_record),
                                cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(static_cast<void*>(trap_record_), 0, sizeof(wait_trap_record));
    std::atomic_thread_fence(std::memory_order_release);
    void* device_word = nullptr;
    SYMM_TRY_CUDA(cudaHostGetDevicePointer(&device_word, trap_record_, 0));
    SYMM_TRY_CUDA(cudaMemcpyAsync(
        mine + failure_slot_offset, &device_word, sizeof(device_word), cudaMemcpyHostToDevice, stream_));
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream_));
  }

  cuda_heap(const cuda_heap&) = delete;
  cuda_heap& operator=(const cuda_heap&) = delete;
  ~cuda_heap() {
    if (stream_ != nullptr) SYMM_ASSERT_CUDA(cudaStreamSynchronize(stream_));
#if SYMM_NVSHMEM_BACKEND()
    nvshmem_.reset(); // collective (unless abandoned), while the stream and the table still exist
#endif
    if (device_table_ != nullptr) SYMM_ASSERT_CUDA(cudaFree(device_table_));
    if (trap_record_ != nullptr) {
      // A kernel's wait that trapped and that the failure monitor did not report (no monitor, or the trap came last).
      report_wait_trap(*trap_record_, stderr);
      SYMM_ASSERT_CUDA(cudaFreeHost(trap_record_));
    }
    if (result_words_) result_words_->heap_ended(); // the stream was synchronised above: every value is final
    if (stream_ != nullptr) SYMM_ASSERT_CUDA(cudaStreamDestroy(stream_));
  }

  //! This PE leaves because of an error: release nothing that would wait for the other PEs (NVSHMEM's teardown).
  void abandon() noexcept {
#if SYMM_NVSHMEM_BACKEND()
    if (nvshmem_) nvshmem_->abandon();
#endif
  }

  [[nodiscard]] std::byte* const* bases() const noexcept {
    return bases_.data();
  }
  [[nodiscard]] std::byte* const* device_table() const noexcept {
    return device_table_;
  }
  [[nodiscard]] std::size_t heap_bytes() const noexcept {
    return heap_bytes_;
  }
  [[nodiscard]] int device() const noexcept {
    return device_;
  }
  //! The GPU's PCI bus id ("0000:18:00.0"), which names it across processes whatever CUDA_VISIBLE_DEVICES says.
  [[nodiscard]] const std::string& pci_bus_id() const noexcept {
    return pci_bus_id_;
  }
  //! Why this GPU (detail::choose_device): "SYMM_DEVICE=1", "local PE 3 of 4 (Open MPI) on GPU 3 % 2", ...
  [[nodiscard]] const std::string& device_reason() const noexcept {
    return device_reason_;
  }
  //! Blocks of a stream collective's kernel every PE can keep resident at once (detail::collective_block_limit).
  [[nodiscard]] unsigned collective_block_limit() const noexcept {
    return collective_block_limit_;
  }
  //! How the PEs reach each other's GPUs (detail/topology.hpp), the same on every PE.
  [[nodiscard]] const detail::topology& topology() const noexcept {
    return topology_;
  }
  //! This PE's failure word (mapped pinned host memory; detail/device_wait.hpp): 0, or a failed PE's number + 1 once
  //! the world's failure monitor found one. The monitor must stop before this heap goes away.
  [[nodiscard]] std::uint32_t* failure_word() const noexcept {
    return trap_record_ != nullptr ? &trap_record_->failure_code : nullptr;
  }
  //! This PE's trap record (detail/wait_trap_record.hpp), which holds the failure word: why a kernel's wait trapped,
  //! readable after the trap. Null only before the constructor allocated it.
  [[nodiscard]] wait_trap_record* trap_record() const noexcept {
    return trap_record_;
  }
  //! The stream host-side operations without a stream argument use (non-blocking with respect to stream 0).
  [[nodiscard]] cudaStream_t stream() const noexcept {
    return stream_;
  }
#if SYMM_NVSHMEM_BACKEND()
  //! The NVSHMEM part of an nvshmem-backend heap (null on the cuda backend).
  [[nodiscard]] nvshmem_heap* nvshmem() noexcept {
    return nvshmem_ ? &*nvshmem_ : nullptr;
  }
#endif

  //! Blocking copy between any two addresses (device heap, peer mappings, host memory): complete on return.
  void copy(void* dst, const void* src, std::size_t bytes) {
    enqueue_copy(stream_, dst, src, bytes);
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream_));
  }

  //! Blocking copy of `rows` rows of `width` bytes with pitches (world_interface::copy_2d): one cudaMemcpy2DAsync, or
  //! a copy a row through NVSHMEM when a side is a peer reached only by NVSHMEM RMA (a tagged address).
  void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
               std::size_t rows) {
    enqueue_copy_2d(stream_, dst, dst_pitch, src, src_pitch, width, rows);
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream_));
  }
  //! copy_2d ordered on `stream` (world_interface::copy_2d_on_stream).
  stream_state copy_2d_on(cudaStream_t stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                          std::size_t width, std::size_t rows, const char* what) {
    enqueue_copy_2d(stream, dst, dst_pitch, src, src_pitch, width, rows);
    return stream_operation(stream, what, pe_);
  }

  //! Sets `bytes` bytes of this PE's own heap at `local` to 0 on the device: complete on return.
  void zero(void* local, std::size_t bytes) {
    SYMM_TRY_CUDA(cudaMemsetAsync(local, 0, bytes, stream_));
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream_));
  }

  //! The completion state of an operation just enqueued on symm's own stream, which no user captures into a graph:
  //! no capture query.
  [[nodiscard]] stream_state own_stream_operation(const char* what) const noexcept {
    return stream_state{&stream_operation_behaviour::table, stream_, what, pe_, false};
  }

  //! A word for the value of one operation about to be enqueued on symm's own stream (detail::result_word).
  [[nodiscard]] std::shared_ptr<result_word> take_result_word() {
    return result_words_->take();
  }
  //! Where an operation whose value nobody reads (a non-fetching nbi atomic) may write it: one word, shared.
  [[nodiscard]] std::uint64_t* discarded_result() const noexcept {
    return discarded_result_->bits;
  }

  //! A non-blocking copy on symm's own stream.
  std::shared_ptr<completion> copy_async(void* dst, const void* src, std::size_t bytes) {
    enqueue_copy(stream_, dst, src, bytes);
    return std::make_shared<stream_completion>(own_stream_operation("a non-blocking copy"));
  }

  //! The 2-D copies of a non-blocking strided put or get on symm's own stream: one completion, the stream's order
  //! making the last copy's the whole list's.
  std::shared_ptr<completion> copy_2d_async(const std::vector<copy_2d_spec>& copies) {
    for (const copy_2d_spec& c : copies)
      enqueue_copy_2d(stream_, c.dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.rows);
    return std::make_shared<stream_completion>(own_stream_operation("a non-blocking strided copy"));
  }

  //! A copy ordered on the caller's stream; its completion follows the stream (stream_operation, `what` names the
  //! operation).
  stream_state copy_on(cudaStream_t stream, void* dst, const void* src, std::size_t bytes, const char* what) {
    enqueue_copy(stream, dst, src, bytes);
    return stream_operation(stream, what, pe_);
  }

  //! Completes this PE's host-issued operations (all on its stream); `what` names the symm call, for errors.
  void quiet(std::string_view what) {
    if (const cudaError_t status = cudaStreamSynchronize(stream_); status != cudaSuccess) {
      throw_cuda_error(status, fmt::format("PE {}: {}: cudaStreamSynchronize of symm's stream", pe_, what));
    }
  }

private:
  //! Enqueues a copy on `stream`: through the peer mapping, or through NVSHMEM for a peer reached by RMA.
  void enqueue_copy(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
#if SYMM_NVSHMEM_BACKEND()
    if (is_rma_address(dst) || is_rma_address(src)) {
      nvshmem_->copy_on(stream, dst, src, bytes);
      return;
    }
#endif
    SYMM_TRY_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  }

  void enqueue_copy_2d(cudaStream_t stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                       std::size_t width, std::size_t rows) {
    if (is_rma_address(dst) || is_rma_address(src)) {
      for (std::size_t r = 0; r < rows; ++r)
        enqueue_copy(stream, static_cast<std::byte*>(dst) + r * dst_pitch,
                     static_cast<const std::byte*>(src) + r * src_pitch, width);
      return;
    }
    SYMM_TRY_CUDA(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDefault, stream));
  }

  //! What detail::choose_device needs, from the job, the options, the environment and the driver.
  static device_facts gather_device_facts(const job_info& job, int option_device, const char* backend_name) {
    device_facts facts = detail::device_facts_of(job);
    facts.backend = backend_name;
    facts.option_device = option_device;
    facts.symm_device = get_env("SYMM_DEVICE");
    facts.visible = get_env("CUDA_VISIBLE_DEVICES");
    facts.device_count = cuda_device_count();
    return facts;
  }

  //! Collective: every PE tells the others its node, GPU, process, the GPU's compute mode and whether MPS answers;
  //! detail::judge_gpu_sharing says what follows. Every PE throws the same error, so none is left waiting. Returns what
  //! the PEs told.
  std::vector<gpu_user> check_gpu_sharing(bootstrap& boot, const job_info& job) {
    struct told {
      char node[max_node_name + 1];
      char bus_id[32];
      std::uint32_t pid;
      std::uint32_t sm_count;
      std::uint8_t exclusive, mps;
    } mine{};
    const std::string node = node_name(job.pe);
    std::memcpy(mine.node, node.data(), node.size());
    std::memcpy(mine.bus_id, pci_bus_id_.data(), std::min(pci_bus_id_.size(), sizeof(mine.bus_id) - 1));
    mine.pid = static_cast<std::uint32_t>(::getpid());
    int mode = cudaComputeModeDefault;
    SYMM_TRY_CUDA(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device_));
    mine.exclusive = mode == cudaComputeModeExclusiveProcess;
    mine.mps = mps_daemon_reachable();
    int sm_count = 0;
    SYMM_TRY_CUDA(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device_));
    mine.sm_count = static_cast<std::uint32_t>(sm_count);
    const auto all = boot.allgather_value(mine);
    std::vector<gpu_user> users;
    unsigned min_sm_count = mine.sm_count;
    for (std::size_t pe = 0; pe < all.size(); ++pe) {
      users.push_back({static_cast<int>(pe), std::string(all[pe].node, strnlen(all[pe].node, sizeof(all[pe].node))),
                       std::string(all[pe].bus_id, strnlen(all[pe].bus_id, sizeof(all[pe].bus_id))), all[pe].pid,
                       all[pe].exclusive != 0, all[pe].mps != 0});
      min_sm_count = std::min(min_sm_count, all[pe].sm_count);
    }
    collective_block_limit_ = detail::collective_block_limit(min_sm_count, max_pes_per_gpu(users));
    const gpu_sharing verdict = judge_gpu_sharing(users, job.pe);
    if (!verdict.error.empty()) SYMM_THROW(errc::unsupported, "PE {}: {}", job.pe, verdict.error);
    // symmrun has said the same before starting the PEs.
    if (!verdict.warning.empty() && job.source != "symmrun") {
      std::fprintf(stderr, "symm: warning: %s\n", verdict.warning.c_str());
    }
    return users;
  }

  //! What the driver says of the way from this PE's GPU to the GPU of every other PE of its node (peer access, native
  //! atomics, P2P performance rank): one pair_facts per PE, `asked` set where the driver answered; `first` gets the
  //! first peer in PE order that cannot be used (detail::classify_peer). A peer GPU this process does not see
  //! (CUDA_VISIBLE_DEVICES) cannot be asked about: its mapping says. Throws nothing of the driver's: a PE that threw
  //! alone would leave the others waiting.
  std::vector<pair_facts> ask_about_peers(const std::vector<gpu_user>& users, int me_pe, peer_problem& first) const {
    std::vector<pair_facts> facts(users.size());
    const gpu_user& me = users[static_cast<std::size_t>(me_pe)];
    for (const gpu_user& other : users) {
      if (other.node != me.node || other.bus_id == me.bus_id) continue;
      int peer_device = -1, access = 0, atomics = 0, rank = -1;
      const bool visible = cudaDeviceGetByPCIBusId(&peer_device, other.bus_id.c_str()) == cudaSuccess;
      if (!visible) (void) cudaGetLastError();
      // A failed query is told like a missing path, not thrown.
      if (visible && (cudaDeviceCanAccessPeer(&access, device_, peer_device) != cudaSuccess ||
                      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device_, peer_device) !=
                          cudaSuccess)) {
        (void) cudaGetLastError();
        if (first.peer < 0) first = {other.pe, peer_path::query_failed};
        continue;
      }
      const peer_path path = classify_peer(visible, access != 0, atomics != 0);
      if (path != peer_path::usable && path != peer_path::not_visible && first.peer < 0) first = {other.pe, path};
      if (!visible) continue;
      // The rank only describes the link (detail/topology.hpp): a failure to give it refuses nothing.
      if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, device_, peer_device) != cudaSuccess) {
        (void) cudaGetLastError();
        rank = -1;
      }
      facts[static_cast<std::size_t>(other.pe)] = {
          1, static_cast<std::uint8_t>(access != 0), static_cast<std::uint8_t>(atomics != 0), rank};
    }
    return facts;
  }

  //! Collective, before any heap is mapped: the PEs tell each other the first peer each cannot use (ask_about_peers),
  //! and every PE throws the same error naming it (detail::judge_peer_access), instead of a failed mapping on some PEs
  //! or atomics that are not atomic.
  static void check_peer_access(bootstrap& boot, const job_info& job, const std::vector<gpu_user>& users,
                                peer_problem mine) {
    const std::string problem = judge_peer_access(users, boot.allgather_value(mine));
    if (!problem.empty()) SYMM_THROW(errc::unsupported, "PE {}: {}", job.pe, problem);
  }

  //! Collective: every PE tells the others what it asked of the driver (`mine`, one pair_facts per PE, of which only
  //! its node's PEs travel: facts_from_node_rows), and each makes the same topology from all of it
  //! (detail::make_topology).
  static detail::topology gather_topology(bootstrap& boot, const job_info& job, std::vector<gpu_user> users,
                                          const std::vector<pair_facts>& mine) {
    const std::vector<std::vector<int>> nodes = pes_by_node(users);
    const std::size_t width = node_row_width(nodes);
    std::vector<pair_facts> row(width);
    const std::vector<int>& local = nodes[static_cast<std::size_t>(job.pe)];
    for (std::size_t i = 0; i < local.size(); ++i)
      row[i] = mine[static_cast<std::size_t>(local[i])];
    const std::vector<std::byte> all = boot.allgather(std::as_bytes(std::span(row)));
    std::vector<pair_facts> rows(width * users.size());
    std::memcpy(rows.data(), all.data(), std::min(all.size(), rows.size() * sizeof(pair_facts)));
    return make_topology(std::move(users), facts_from_node_rows(nodes, rows, width));
  }
  //! The cuda backend's heap: a VMM segment on this GPU, exported, exchanged and mapped by every PE.
  void map_vmm_heap(bootstrap& boot, const job_info& job, std::size_t heap_bytes) {
    segment_.emplace(device_, heap_bytes);
    struct shape {
      std::uint64_t size;
      std::int32_t device;
    };
    auto shapes = boot.allgather_value(shape{segment_->size(), device_});
    unique_fd exported(segment_->export_fd());
    auto fds = boot.allgather_fd(exported.get());
    exported.reset();

    const auto n = static_cast<std::size_t>(job.n_pes);
    bases_.resize(n);
    peers_.resize(n);
    std::size_t usable = segment_->size();
    for (std::size_t p = 0; p < n; ++p) {
      usable = std::min<std::size_t>(usable, shapes[p].size);
      if (static_cast<int>(p) == job.pe) {
        bases_[p] = static_cast<std::byte*>(segment_->base());
        continue;
      }
      peers_[p].emplace(fds[p].get(), shapes[p].size, shapes[p].device, device_);
      bases_[p] = static_cast<std::byte*>(peers_[p]->base());
    }
    heap_bytes_ = usable;
  }

  int pe_ = -1;
  int device_ = 0;
  std::string pci_bus_id_;
  std::string device_reason_;
  cudaStream_t stream_ = nullptr;
  std::optional<local_segment> segment_;
  std::vector<std::optional<peer_mapping>> peers_;
  std::vector<std::byte*> bases_;
  std::byte** device_table_ = nullptr;
  wait_trap_record* trap_record_ = nullptr;
  std::size_t heap_bytes_ = 0;
  unsigned collective_block_limit_ = 1;
  detail::topology topology_;
  std::shared_ptr<result_word_pool> result_words_;
  std::shared_ptr<result_word> discarded_result_;
#if SYMM_NVSHMEM_BACKEND()
  std::optional<nvshmem_heap> nvshmem_;
#endif
};

} // namespace detail
SYMM_END_NAMESPACE
