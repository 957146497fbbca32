// symm/detail/world_state.hpp: what a live world owns — the bootstrap, the control pages, the heap mappings, the peer
// table and the allocator — and the host-side operations every public type routes through. Host barriers, agreement
// and liveness go through the control pages when the PEs share one node, over the network mesh (net_coordination)
// when they span several (or SYMM_COORDINATION=network).
#pragma once

#include <symm/detail/backend/host/copy_engine.hpp>
#include <symm/detail/backend/host/host_heap.hpp>
#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/collective_tuning.hpp>
#include <symm/detail/control_segment.hpp>
#include <symm/detail/device_wait.hpp>
#include <symm/detail/failure_monitor.hpp>
#include <symm/detail/heap_allocator.hpp>
#include <symm/detail/job_layout.hpp>
#include <symm/detail/net_coordination.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/detail/topology.hpp>
#include <symm/detail/world_interface.hpp>
#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/cuda_heap.hpp>
#  include <symm/detail/backend/cuda/host_atomics.hpp>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

SYMM_BEGIN_NAMESPACE

//! How to start a world. Every field has a default; environment variables override the defaults, not explicit values.
//! Each default is a member initializer, so designated initializers may name any subset of the fields
//! (`symm::world world({.heap_size = N});`) without -Wextra's missing-field-initializers warning.
struct world_options {
  std::optional<symm::backend> backend = std::nullopt; //!< nullopt: SYMM_BACKEND, else (a GPU is usable) nvshmem
                                                       //!< when built with it, cuda otherwise; else host
  std::size_t heap_size = 0;                           //!< bytes per PE; 0: SYMM_HEAP_SIZE, else 256 MiB
  std::chrono::milliseconds bootstrap_timeout{0};      //!< 0: SYMM_BOOTSTRAP_TIMEOUT_MS, else 60 s
  int device = -1; //!< GPU of this PE; -1: SYMM_DEVICE, else local PE modulo GPU count
};

//! The GPU a PE uses (world::device()).
struct device_info {
  int number = -1;        //!< among the GPUs this process sees (CUDA_VISIBLE_DEVICES renumbers them); -1: host backend
  std::string pci_bus_id; //!< "0000:18:00.0": names the GPU across processes whatever CUDA_VISIBLE_DEVICES says
  std::string reason;     //!< why this GPU: "SYMM_DEVICE=1", "local PE 3 of 4 (Open MPI) on GPU 3 % 2", ...
};

//! How this PE's job was started and where its PEs met (docs/launching.md).
struct launcher_info {
  std::string name;       //!< "symmrun", "Open MPI", "PMI", "Slurm", "torchrun", "symm::launch", or a job of one PE
  std::string identity;   //!< what tells this job from others, from the launcher's variables; empty under symmrun
  std::string rendezvous; //!< "Unix socket /tmp/symm-0/job-…/boot.sock" or "TCP address host:port"
};

namespace detail {

inline constexpr std::size_t default_heap_size = std::size_t{256} << 20;
//! Host backend: non-blocking copies up to this size are made by the calling thread (world_state::copy_async): on the
//! 2-core CPU machine 256 KiB took ~5 us to copy, which is what handing a copy to the engine's thread and hearing back
//! cost there when busy (4.9 us), and a tenth of what it cost idle (~45 us; docs/benchmarks-host).
inline constexpr std::size_t host_inline_copy_bytes = std::size_t{256} << 10;

inline symm::backend choose_backend(const world_options& options) {
  if (options.backend) return *options.backend;
  if (auto name = get_env("SYMM_BACKEND")) {
    if (*name == "host") return symm::backend::host;
    if (*name == "cuda") return symm::backend::cuda;
    if (*name == "nvshmem") return symm::backend::nvshmem;
    SYMM_THROW(errc::environment, "SYMM_BACKEND='{}' is not a backend; use 'host', 'cuda' or 'nvshmem'", *name);
  }
#if SYMM_CUDA_BACKEND()
  // A program built with the NVSHMEM backend was built for it.
  if (cuda_device_count() > 0) return SYMM_NVSHMEM_BACKEND() ? symm::backend::nvshmem : symm::backend::cuda;
#endif
  return symm::backend::host;
}

//! The PEs that take part in one collective operation: a team's members in team order (world PE numbers), where the
//! team's host barrier lives (channel `channel` on the control page of its root, members[0]), and the team's count of
//! collective operations, which indexes the request slots.
struct collective_group {
  std::span<const int> members;
  int channel = 0;
  std::uint64_t* sequence = nullptr;
  std::string_view name; //!< how messages name the team
};

//! What collective_kind::team_collective's first argument packs: the collective (bits 0-7: broadcast, fcollect,
//! alltoall, reduce, allreduce, reduce_scatter), the operation (bits 8-15: none, plus, multiplies, min, max, bit_and,
//! bit_or, bit_xor, a user's), the element size (bits 16-31) and kind (bits 32-39: other, signed, unsigned, floating,
//! bool), the root plus one (bits 40-62; 0: none). Encoded by symm/collectives.hpp.
inline std::string describe_collective_call(std::int64_t code) {
  static constexpr std::string_view collectives[] = {
      "?", "broadcast", "fcollect", "alltoall", "reduce", "allreduce", "reduce_scatter"};
  static constexpr std::string_view ops[] = {
      "", "plus", "multiplies", "min", "max", "bit_and", "bit_or", "bit_xor", "a user's operation"};
  static constexpr std::string_view kinds[] = {"", "signed ", "unsigned ", "floating-point ", "bool "};
  const auto field = [&](int shift, int bits) {
    return static_cast<std::size_t>((code >> shift) & ((std::int64_t{1} << bits) - 1));
  };
  const std::size_t which = field(0, 8), op = field(8, 8), size = field(16, 16), kind = field(32, 8);
  const std::size_t root = field(40, 22);
  std::string out(which < std::size(collectives) ? collectives[which] : "?");
  if (op != 0) out += fmt::format("({})", op < std::size(ops) ? ops[op] : "?");
  out += fmt::format(" of {}{}-byte elements", kind < std::size(kinds) ? kinds[kind] : "", size);
  if (root != 0) out += fmt::format(", root {}", root - 1);
  return out;
}

//! One PE's request, for the table of a mismatch error.
inline std::string describe(const collective_request& r) {
  switch (r.kind) {
    case collective_kind::allocate:
      return fmt::format("collective heap operation #{}: allocate bytes {}, alignment {}{}", r.sequence, r.args[0],
                         static_cast<std::uint64_t>(r.args[1]), r.args[2] != 0 ? ", zero-filled" : "");
    case collective_kind::free:
      return fmt::format("collective heap operation #{}: free offset {}", r.sequence, r.args[0]);
    case collective_kind::split_strided:
      return fmt::format("collective operation #{}: split_strided(start = {}, stride = {}, size = {})", r.sequence,
                         r.args[0], r.args[1], r.args[2]);
    case collective_kind::split_2d:
      return fmt::format("collective operation #{}: split_2d(x_range = {})", r.sequence, r.args[0]);
    case collective_kind::destroy_team: return fmt::format("collective operation #{}: destroy the team", r.sequence);
    case collective_kind::barrier: return fmt::format("collective operation #{}: a barrier", r.sequence);
    case collective_kind::finalize: return fmt::format("collective operation #{}: finalize the world", r.sequence);
    case collective_kind::team_collective:
      return fmt::format("collective operation #{}: {} with src of {} and dst of {} elements", r.sequence,
                         describe_collective_call(r.args[0]), r.args[1], r.args[2]);
    case collective_kind::team_alltoallv:
      return fmt::format("collective operation #{}: alltoallv of {}-byte elements in rows of {}", r.sequence,
                         r.args[0] & 0xffff, r.args[1]);
    case collective_kind::mdarray_shape: {
      const auto code = static_cast<std::uint64_t>(r.args[0]);
      const std::uint64_t rank = code & 0xff, first = code >> 16;
      std::string extents = fmt::format("extent {} = {}", first, r.args[1]);
      if (first + 1 < rank) extents += fmt::format(", extent {} = {}", first + 1, r.args[2]);
      return fmt::format("collective operation #{}: a symm::mdarray of rank {} ({}) with {}", r.sequence, rank,
                         (code >> 8 & 1) != 0 ? "layout_left" : "layout_right", extents);
    }
    case collective_kind::none: break;
  }
  return fmt::format("collective operation #{}: nothing", r.sequence);
}

//! Every PE's control page has the layout of its program's SYMM_MAX_TEAMS: given every PE's value (`all`), the error
//! of PE `me` when some PE's differs from its own, else empty. Every PE finds one when any does.
inline std::string max_teams_mismatch(const std::vector<std::int32_t>& all, int me, std::int32_t mine = max_teams) {
  for (std::size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe] != mine) {
      return fmt::format("PE {}: this PE's program was built with SYMM_MAX_TEAMS = {} and PE {}'s with {}: every PE "
                         "of a job must use the same value (it sizes the control page that the PEs share)",
                         me, mine, pe, all[pe]);
    }
  }
  return {};
}

//! Collective, before any control page is mapped: a job whose programs differ in SYMM_MAX_TEAMS, or whose PEs were
//! given different collective tunings, is refused on every PE.
inline void require_same_build_and_tuning(bootstrap& boot, int me, const collective_tuning& tuning,
                                          const std::string& tuning_problem) {
  struct told {
    std::int32_t max_teams;
    std::uint32_t tuning;
  };
  const std::vector<told> all =
      boot.allgather_value(told{max_teams, tuning_problem.empty() ? tuning.agreed() : refused_tuning});
  if (!tuning_problem.empty()) SYMM_THROW(errc::environment, "{}", tuning_problem);
  std::vector<std::int32_t> teams;
  std::vector<std::uint32_t> tunings;
  for (const told& t : all) {
    teams.push_back(t.max_teams);
    tunings.push_back(t.tuning);
  }
  if (const std::string problem = max_teams_mismatch(teams, me); !problem.empty()) {
    SYMM_THROW(errc::invalid_argument, "{}", problem);
  }
  if (const std::string problem = collective_tuning_mismatch(tunings, me); !problem.empty()) {
    SYMM_THROW(errc::environment, "{}", problem);
  }
}

//! A live world (symm::world holds it in a shared_ptr; views point at it through world_interface).
class world_state final : public world_interface {
public:
  explicit world_state(const world_options& options) : job_(job_from_environment()) {
    kind_ = choose_backend(options);
    heap_bytes_ = options.heap_size != 0 ? options.heap_size : heap_size_from_env(default_heap_size);
    if (heap_bytes_ > heap_allocator::max_capacity) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: world_options::heap_size = {} bytes is more than the largest heap symm maps, {} bytes (64 "
                 "TiB)",
                 job_.pe, heap_bytes_, heap_allocator::max_capacity);
    }
    auto timeout = options.bootstrap_timeout.count() != 0 ? options.bootstrap_timeout : bootstrap_timeout_from_env();
    collective_bound_ = wait_bound_from_env("SYMM_COLLECTIVE_TIMEOUT_MS", default_collective_bound);
    barrier_bound_ = wait_bound_from_env("SYMM_BARRIER_TIMEOUT_MS", std::chrono::milliseconds(0));
    const std::chrono::milliseconds failure_poll = failure_poll_from_env();
    boot_ = std::make_unique<bootstrap>(job_, timeout);
    job_layout layout = detect_layout(*boot_);
    std::string tuning_problem;
    tuning_ = collective_tuning_from_env(job_.pe, tuning_problem);
    require_same_build_and_tuning(*boot_, job_.pe, tuning_, tuning_problem);
    // The node's PE count as every PE found it: a launcher that gives no local size (Slurm) left the job size there.
    // A launcher that gives no local rank left the global one, which on a second node is no local rank at all.
    job_.local_n_pes = pes_on_node(layout, job_.pe);
    if (!job_.local_pe_given) job_.local_pe = index_on_node(layout, job_.pe);
    if (kind_ != symm::backend::nvshmem && (layout.n_nodes > 1 || boot_->over_tcp())) {
      // Every PE sees the same layout, so all refuse alike: nobody is left waiting.
      SYMM_THROW(errc::unsupported,
                 "PE {}: the {} backend cannot make a world across nodes ({}{}): it shares each PE's heap through file "
                 "descriptors passed over a Unix socket of one node. Use SYMM_BACKEND=nvshmem for a world across "
                 "nodes (or, on one node, unset SYMM_BOOTSTRAP_ADDR and SYMM_NODE_NAME)",
                 job_.pe, to_string(kind_), describe_nodes(layout),
                 boot_->over_tcp() ? fmt::format("; met over {}", boot_->where()) : std::string{});
    }
    // Over TCP no descriptor can travel: each PE keeps only its own control page (host_heap).
    host_ = std::make_unique<host_heap>(*boot_, kind_ == symm::backend::host ? heap_bytes_ : 0);
    controls_.assign(host_->controls(), host_->controls() + job_.n_pes);
    all_pes_.resize(static_cast<std::size_t>(job_.n_pes));
    std::iota(all_pes_.begin(), all_pes_.end(), 0);
    if (layout.mode == coordination::network) {
      net_ = std::make_unique<net_coordination>(*boot_, std::move(layout), timeout);
      net_->watch_host_waits(&controls_[static_cast<std::size_t>(job_.pe)]->host_waits);
      live_ = liveness(controls_, job_.pe, net_.get());
    } else {
      live_ = liveness(controls_, job_.pe);
    }
    pe_control& mine = *controls_[static_cast<std::size_t>(job_.pe)];
    atomic_at(mine.pid).store(static_cast<std::uint32_t>(::getpid()), std::memory_order_relaxed);
    atomic_at(mine.state).store(static_cast<std::uint32_t>(pe_state::running), std::memory_order_release);
    if (kind_ == symm::backend::host) {
      topology_ = detail::topology::host(job_.n_pes);
      peer_bases_.assign(host_->bases(), host_->bases() + job_.n_pes);
      device_peer_bases_ = peer_bases_.data();
    } else {
#if SYMM_CUDA_BACKEND()
      cuda_ = std::make_unique<cuda_heap>(*boot_, job_, heap_bytes_, options.device,
                                          kind_ == symm::backend::nvshmem ? heap_source::nvshmem : heap_source::vmm);
      heap_bytes_ = cuda_->heap_bytes();
      topology_ = cuda_->topology(); // a copy: it outlives the heap, which finalize releases
      peer_bases_.assign(cuda_->bases(), cuda_->bases() + job_.n_pes);
      device_peer_bases_ = cuda_->device_table();
#else
      SYMM_THROW(errc::unsupported,
                 "PE {}: the {} backend was asked for, but this program was built without CUDA "
                 "(SYMM_ENABLE_CUDA=0); rebuild with the CUDA toolkit or use SYMM_BACKEND=host",
                 job_.pe, to_string(kind_));
#endif
    }
    allocator_.emplace(heap_bytes_);
    // The first blocks of every heap belong to symm, at the same offsets everywhere, zeroed: the header at offset 0
    // (where device waits find the failure word, detail/device_wait.hpp), then the system area (device barrier flags).
    const auto header = allocator_->allocate(heap_header_bytes, heap_allocator::min_alignment);
    auto system = allocator_->allocate(system_area_bytes(job_.n_pes), heap_allocator::min_alignment);
    if (!header || *header != 0) system.reset();
    if (!system) {
      SYMM_THROW(errc::heap_exhausted,
                 "PE {}: the heap of {} bytes cannot hold symm's own {} bytes of barrier flags; "
                 "raise SYMM_HEAP_SIZE",
                 job_.pe, heap_bytes_, heap_header_bytes + system_area_bytes(job_.n_pes));
    }
    system_offset_ = *system;
    boot_->barrier();
    if (tuning_.debug) {
      const launcher_info how = launcher();
      std::fprintf(stderr, "symm: debug: PE %d of %d (%d of %d on its node): started by %s%s%s, met through %s\n",
                   job_.pe, job_.n_pes, job_.local_pe, job_.local_n_pes, how.name.c_str(),
                   how.identity.empty() ? "" : "; job ", how.identity.c_str(), how.rendezvous.c_str());
      std::fprintf(stderr, "symm: debug: topology: %s\n", topology().describe(job_.pe).c_str());
    }
#if SYMM_CUDA_BACKEND()
    // Last, and it never throws: a world that fails to start never leaves the thread behind.
    if (cuda_) start_failure_monitor(failure_poll);
#else
    (void) failure_poll;
#endif
  }

  world_state(const world_state&) = delete;
  world_state& operator=(const world_state&) = delete;
  ~world_state() = default;

  //! Collective end of the world: completes outstanding operations, waits for every PE, then unmaps. When this PE is
  //! leaving because of an exception, it tells the others instead of waiting for them, so none of them hangs. Returns
  //! the error the finalize barrier found (a PE that had already left, or failed), already printed to stderr, for the
  //! caller to end the PE with (symm::world's destructor); none when it went well or this PE is unwinding.
  std::optional<error> finalize(bool unwinding) noexcept {
    std::optional<error> found;
    if (!alive_) return found;
    pe_control& mine = *controls_[static_cast<std::size_t>(job_.pe)];
    // From here on the PEs leave, and a peer that finalized first is no failure: no kernel of this PE runs any more
    // (the world's end comes after them), so the monitor has nothing left to tell.
    monitor_.reset();
    if (unwinding) {
      alive_ = false;
#if SYMM_CUDA_BACKEND()
      if (cuda_) cuda_->abandon();
#endif
      mark_failed(fmt::format("PE {} left its world's scope by an exception", job_.pe));
    } else {
      try {
        quiet("the world's finalize");
        agree(collective_request{0, collective_kind::finalize, {0, 0, 0}, team_channels_}, world_group(),
              "the world's finalize");
      } catch (const error& e) {
        std::fprintf(stderr, "symm: PE %d: finalize: %s\n", job_.pe, e.what());
        std::fflush(stderr);
        mark_failed(fmt::format("PE {} failed in finalize", job_.pe));
        found = e;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "symm: PE %d: finalize: %s\n", job_.pe, e.what());
        std::fflush(stderr);
        mark_failed(fmt::format("PE {} failed in finalize", job_.pe));
        found = error(errc::system, fmt::format("PE {}: finalize: {}", job_.pe, e.what()));
      }
      alive_ = false;
      if (atomic_at(mine.state).load() != static_cast<std::uint32_t>(pe_state::failed)) {
        atomic_at(mine.state).store(static_cast<std::uint32_t>(pe_state::finalized), std::memory_order_release);
        if (net_) net_->mark_finalized();
      }
    }
    engine_.reset();
#if SYMM_CUDA_BACKEND()
    cuda_.reset();
#endif
    return found;
  }

  //! Records why this PE failed in its control page, where every waiting PE looks (over the network: sends it to
  //! every PE).
  void mark_failed(std::string_view why) noexcept {
    std::fflush(nullptr); // the other PEs may end the job at once: what this PE printed comes out first
    pe_control& mine = *controls_[static_cast<std::size_t>(job_.pe)];
    std::size_t n = std::min(why.size(), sizeof(mine.failure) - 1);
    std::memcpy(mine.failure, why.data(), n);
    mine.failure[n] = '\0';
    atomic_at(mine.state).store(static_cast<std::uint32_t>(pe_state::failed), std::memory_order_release);
    if (net_) return net_->mark_failed(why);
    for (auto* page : controls_) {
      for (auto& channel : page->barriers)
        futex_wake_all(&channel.generation); // team barriers too
    }
  }

  [[nodiscard]] int my_pe() const noexcept override {
    return job_.pe;
  }
  [[nodiscard]] int n_pes() const noexcept override {
    return job_.n_pes;
  }
  [[nodiscard]] const job_info& job() const noexcept {
    return job_;
  }
  [[nodiscard]] symm::backend kind() const noexcept override {
    return kind_;
  }
  [[nodiscard]] bool alive() const noexcept {
    return alive_;
  }
  [[nodiscard]] std::size_t heap_bytes() const noexcept {
    return heap_bytes_;
  }
  [[nodiscard]] std::byte* const* peer_bases() const noexcept {
    return peer_bases_.data();
  }
  [[nodiscard]] std::byte* const* device_peer_bases() const noexcept {
    return device_peer_bases_;
  }
  //! Whether this PE reaches PE `pe`'s heap through a mapping (always, except on the nvshmem backend for peers on
  //! other nodes, which it reaches through NVSHMEM RMA: detail/peer_table.hpp).
  [[nodiscard]] bool mapped(int pe) const noexcept {
    return !is_rma_address(peer_bases_[static_cast<std::size_t>(pe)]);
  }
  [[nodiscard]] const liveness& peers() const noexcept {
    return live_;
  }
  //! The thread that tells this PE's kernels of a failed peer (GPU backends, unless SYMM_FAILURE_POLL_MS=0), or null.
  [[nodiscard]] const failure_monitor* monitor() const noexcept {
    return monitor_.get();
  }
  //! Whether host barriers, agreement and liveness go over the network mesh rather than the control pages.
  [[nodiscard]] bool network_coordination() const noexcept {
    return net_ != nullptr;
  }
  [[nodiscard]] pe_control& control(int pe) const noexcept {
    return *controls_[static_cast<std::size_t>(pe)];
  }
  //! Counts the calling thread as in a host wait for data until the mark ends (see agree's give-up rule).
  [[nodiscard]] host_wait_mark mark_host_wait() const noexcept {
    return host_wait_mark(control(job_.pe), net_.get());
  }
  [[nodiscard]] const heap_allocator& allocator() const noexcept {
    return *allocator_;
  }
  //! What SYMM_COLLECTIVE_ALGORITHM, SYMM_COLLECTIVE_BLOCKS (the same on every PE) and SYMM_DEBUG asked for.
  [[nodiscard]] const collective_tuning& tuning() const noexcept {
    return tuning_;
  }
  //! Blocks of a stream collective's kernel that every PE can keep resident at once (detail::collective_block_limit).
  [[nodiscard]] unsigned collective_block_limit() const noexcept {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->collective_block_limit();
#endif
    return 1;
  }
  //! How the PEs reach each other's GPUs (detail/topology.hpp): gathered by the cuda and nvshmem backends' heap at
  //! start-up (cuda_heap::topology); on the host backend every link is `host` (shared memory of one node, no GPU).
  [[nodiscard]] const detail::topology& topology() const noexcept {
    return topology_;
  }
  //! SYMM_DEBUG: whether plan `key` of collective kind `kind` on a team of `n_pes` is new to this world (then it is
  //! remembered). Host threads may issue collectives at once.
  bool plan_is_new(int kind, int n_pes, std::uint64_t key) {
    const std::lock_guard lock(printed_plans_mutex_);
    return printed_plans_.insert({kind, n_pes, key}).second;
  }

  //! Offset of symm's own block (device barrier flags) in every heap.
  [[nodiscard]] std::size_t system_offset() const noexcept {
    return system_offset_;
  }
  //! Bytes of that block: the world's device barrier flags (per channel, one arrival word per PE and this PE's epoch
  //! counter), then the teams' device barrier flags (at team_flags_offset()), then the flags of the kernels that
  //! host-issued collectives launch (at collective_flags_offset()), then this PE's status words (status_offset()).
  static constexpr std::size_t system_area_bytes(int n_pes) noexcept {
    return world_flags_bytes(n_pes) + team_flags_bytes(n_pes) + collective_flags_bytes(n_pes) + status_bytes;
  }
  //! Offset of the teams' device barrier flags in every heap: per channel, one arrival count per PE (written by that
  //! PE), then this PE's count of its own arrivals at each PE. Counting per pair of PEs, not per PE, lets teams that
  //! overlap use one channel one after another.
  [[nodiscard]] std::size_t team_flags_offset() const noexcept {
    return system_offset_ + world_flags_bytes(job_.n_pes);
  }
  //! Offset of the flags of host-issued collectives' kernels (symm/collectives.hpp): collective_flag_channels channels
  //! (one per block of such a kernel) laid out like the teams' flags. symm's own: no user barrier can disturb them.
  [[nodiscard]] std::size_t collective_flags_offset() const noexcept {
    return team_flags_offset() + team_flags_bytes(job_.n_pes);
  }
  //! Offset of the words where symm's kernels leave what went wrong on this PE for the host to report (the stream
  //! alltoallv's status, detail/alltoallv_device.hpp); zero while nothing did.
  [[nodiscard]] std::size_t status_offset() const noexcept {
    return collective_flags_offset() + collective_flags_bytes(job_.n_pes);
  }
  static constexpr std::size_t status_bytes = 256;
  static constexpr std::size_t world_flags_bytes(int n_pes) noexcept {
    return static_cast<std::size_t>(device_channels) * (static_cast<std::size_t>(n_pes) + 1) * sizeof(std::uint64_t);
  }
  static constexpr int collective_flag_channels = static_cast<int>(max_collective_blocks);
  static constexpr std::size_t collective_flags_bytes(int n_pes) noexcept {
    return static_cast<std::size_t>(collective_flag_channels) * 2 * static_cast<std::size_t>(n_pes) *
           sizeof(std::uint64_t);
  }
  static constexpr std::size_t team_flags_bytes(int n_pes) noexcept {
    return static_cast<std::size_t>(device_channels) * 2 * static_cast<std::size_t>(n_pes) * sizeof(std::uint64_t);
  }
#if SYMM_CUDA_BACKEND()
  [[nodiscard]] cuda_heap* cuda() const noexcept {
    return cuda_.get();
  }
#endif
  [[nodiscard]] launcher_info launcher() const {
    std::string met = job_.n_pes == 1   ? std::string("nothing (a job of one PE meets nobody)")
                    : boot_->over_tcp() ? boot_->where()
                                        : "Unix socket " + boot_->where();
    return {job_.source, job_.identity, std::move(met)};
  }

  [[nodiscard]] device_info device() const {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return {cuda_->device(), cuda_->pci_bus_id(), cuda_->device_reason()};
#endif
    return {};
  }

  void require_alive(std::string_view what) const {
    if (!alive_) SYMM_THROW(errc::finalized, "PE {}: {} after its world was finalized", job_.pe, what);
  }

  //! A barrier user code asked for (barrier_all, sync_all, barrier_scope; a team's with `group`): an agreement step
  //! like any collective, so that a PE in a barrier and a PE in another collective (an allocation, a free, the
  //! finalize) get an error naming both calls, instead of a barrier that pairs with the other's allocation.
  void barrier(std::string_view what = "barrier_all") {
    barrier(world_group(), what);
  }
  void barrier(const collective_group& group, std::string_view what) {
    agree(collective_request{0, collective_kind::barrier, {0, 0, 0}, team_channels_}, group, what);
  }

  //! The wait alone, for steps of an operation the PEs already agreed on (the end of a collective's work): the
  //! team's channel of its root's control page (or through its root over the network); no sockets, no fixed sleeps.
  //! False when `deadline` passed first, or `give_up()` said so (shared-memory coordination only; the network mesh
  //! has its own liveness).
  template <class GiveUp = bool (*)()>
  bool wait_for_all(
      const collective_group& group, std::string_view what, wait_deadline deadline = std::nullopt,
      GiveUp&& give_up = [] { return false; }) {
    require_alive(what);
    if (net_) {
      net_->barrier(group.members, group.channel, what);
      return true;
    }
    return barrier_wait(control(group.members[0]).barriers[group.channel],
                        static_cast<std::uint32_t>(group.members.size()), live_, what, deadline, give_up);
  }

  //! The world as a collective group: every PE, channel 0 of PE 0, the world's count of collective operations.
  [[nodiscard]] collective_group world_group() noexcept {
    return collective_group{all_pes_, 0, &collective_sequence_, "the world"};
  }

  //! Host barrier channels of the teams this PE belongs to (channel 0: the world's). Team creation picks a channel no
  //! member uses, so a PE is in at most one live team per channel.
  [[nodiscard]] const channel_set& team_channels() const noexcept {
    return team_channels_;
  }
  void claim_team_channel(int channel) noexcept {
    team_channels_.insert(channel);
  }
  void release_team_channel(int channel) noexcept {
    team_channels_.erase(channel);
  }

  //! Collective allocation: checks that every PE asked the same (bytes, alignment, zero fill), then runs the
  //! deterministic allocator. `alignment`: a power of two, at most max_alignment(). `zeroed`: this PE's bytes are set
  //! to 0 (on the GPU on the cuda and nvshmem backends), and no PE returns before every PE has zeroed its part, so a
  //! put made right after the allocation is never overwritten by the target's zeroing.
  std::size_t allocate(std::size_t bytes, std::size_t alignment, std::string_view what, bool zeroed = false) {
    agree(
        collective_request{
            0, collective_kind::allocate, {to_arg(bytes), to_arg(alignment), zeroed ? 1 : 0}, team_channels_},
        world_group(), what);
    auto offset = allocator_->allocate(bytes, alignment);
    if (!offset) {
      SYMM_THROW(errc::heap_exhausted,
                 "PE {}: {} needs {} bytes{} but the symmetric heap's largest free block is {} "
                 "bytes ({} of {} bytes in use); raise SYMM_HEAP_SIZE or world_options::heap_size (now {} bytes)",
                 job_.pe, what, bytes,
                 alignment > heap_allocator::min_alignment ? fmt::format(" aligned to {}", alignment) : std::string{},
                 allocator_->largest_free_block(), allocator_->bytes_in_use(), heap_bytes_, heap_bytes_);
    }
    if (zeroed) {
      try {
        zero_local(*offset, bytes);
      } catch (...) {
        allocator_->deallocate(*offset); // this PE fails; its world's end tells the others
        throw;
      }
      (void) wait_for_all(world_group(), what);
    }
    return *offset;
  }

  //! The largest alignment an allocation can promise on this PE: the alignment of its own heap's base (a page or more
  //! on the host backend, the VMM granularity on cuda), since heap offsets are what the PEs agree on.
  [[nodiscard]] std::size_t max_alignment() const noexcept {
    const auto base = reinterpret_cast<std::uintptr_t>(peer_bases_[static_cast<std::size_t>(job_.pe)]);
    if (base == 0) return heap_allocator::max_capacity;
    return std::min<std::size_t>(std::uintptr_t{1} << std::countr_zero(base), heap_allocator::max_capacity);
  }

  //! Collective free of the block at `offset`: every PE must free the same block at the same point.
  void deallocate(std::size_t offset, std::string_view what) {
    if (allocator_->block_size(offset) == 0) {
      SYMM_THROW(errc::invalid_free,
                 "PE {}: {} frees offset {}, which is not an allocated block of the symmetric heap "
                 "(freed twice, or never allocated)",
                 job_.pe, what, offset);
    }
    quiet(what);
    agree(collective_request{0, collective_kind::free, {to_arg(offset), 0, 0}, team_channels_}, world_group(), what);
    allocator_->deallocate(offset);
  }

  //! Sets `bytes` bytes of this PE's own heap at `offset` to 0: a memset on the host backend, a cudaMemset on the GPU
  //! heaps (complete on return).
  void zero_local(std::size_t offset, std::size_t bytes) {
    if (bytes == 0) return;
    std::byte* local = peer_bases_[static_cast<std::size_t>(job_.pe)] + offset;
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->zero(local, bytes);
#endif
    std::memset(local, 0, bytes);
  }

  //! Blocking copy between any two addresses this PE can reach (local or peer heap, or private memory).
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->copy(dst, src, bytes);
#endif
    std::memmove(dst, src, bytes);
  }

  void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
               std::size_t rows) override {
    if (width == 0 || rows == 0) return;
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->copy_2d(dst, dst_pitch, src, src_pitch, width, rows);
#endif
    copy_rows({dst, dst_pitch, src, src_pitch, width, rows});
  }

  //! Non-blocking copy; the completion turns ready when the bytes are in place.
  std::shared_ptr<completion> copy_async(void* dst, const void* src, std::size_t bytes) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->copy_async(dst, src, bytes);
#endif
    if (!engine_) {
      SYMM_THROW(errc::finalized, "PE {}: a non-blocking copy of {} bytes after the world's finalize", my_pe(), bytes);
    }
    // Handing a copy to the engine's thread and learning that it is done costs 5-45 us (a wake-up each way); a copy of
    // up to host_inline_copy_bytes costs no more than that here, so it is made now and its future is complete at once
    // (benchmarks/bench_host.cpp: put_nbi of 8 B waited one by one 46 us -> 0.014 us on an idle 2-core machine).
    if (bytes <= host_inline_copy_bytes) {
      std::memmove(dst, src, bytes);
      return completed();
    }
    return engine_->submit(dst, src, bytes);
  }

  std::shared_ptr<completion> copy_2d_async(std::vector<copy_2d_spec> copies) override {
    std::size_t bytes = 0;
    for (const copy_2d_spec& c : copies)
      bytes += c.bytes();
    if (bytes == 0) return completed();
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->copy_2d_async(copies);
#endif
    if (!engine_) {
      SYMM_THROW(errc::finalized, "PE {}: a non-blocking strided copy of {} bytes after the world's finalize", my_pe(),
                 bytes);
    }
    if (bytes <= host_inline_copy_bytes) { // as copy_async
      for (const copy_2d_spec& c : copies)
        copy_rows(c);
      return completed();
    }
    return engine_->submit(std::move(copies));
  }

  stream_state copy_2d_on_stream(void* stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                                 std::size_t width, std::size_t rows, const char* what) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_)
      return cuda_->copy_2d_on(static_cast<cudaStream_t>(stream), dst, dst_pitch, src, src_pitch, width, rows, what);
#endif
    (void) dst_pitch, (void) src_pitch, (void) width, (void) rows;
    return copy_on_stream(stream, dst, src, 0, what); // the errors of a stream-ordered call without a CUDA heap
  }

  stream_state copy_on_stream(void* stream, void* dst, const void* src, std::size_t bytes, const char* what) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return cuda_->copy_on(static_cast<cudaStream_t>(stream), dst, src, bytes, what);
#endif
    (void) stream, (void) dst, (void) src, (void) bytes;
    require_alive(what);              // finalize let go of the CUDA heap
    require_cuda_backend(this, what); // a host-backend world has none
    SYMM_THROW(errc::unsupported,
               "PE {}: {} on the {} backend from a translation unit built without it (SYMM_ENABLE_CUDA=0)", my_pe(),
               what, to_string(kind_));
  }

  //! Wakes the host threads asleep on the 4-byte word `word` of PE pe's heap, if its control page counts any: the fence
  //! pairs with the one in host_wait (detail/host_wait.hpp has the protocol).
  void wake_word_waiters(int pe, const void* word) const noexcept override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (atomic_at(control(pe).sleepers).load(std::memory_order_seq_cst) != 0) {
      futex_wake_all(static_cast<std::uint32_t*>(const_cast<void*>(word)));
    }
  }

  std::uint64_t host_atomic(const void* address, atomic_type_code type, atomic_op op, std::uint64_t operand,
                            std::uint64_t expected) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return run_host_atomic(*cuda_, my_pe(), address, type, op, operand, expected);
#endif
    (void) address, (void) type, (void) op, (void) operand, (void) expected;
    require_alive("a host-side atomic"); // finalize let go of the GPU heap
    SYMM_THROW(errc::unsupported,
               "PE {}: a host-side atomic through the GPU on the {} backend, whose heap is host memory", my_pe(),
               to_string(kind_));
  }

  pending_value host_atomic_nbi(const void* address, atomic_type_code type, atomic_op op, std::uint64_t operand,
                                std::uint64_t expected, bool wants_value, const char* what) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return start_host_atomic(*cuda_, my_pe(), address, type, op, operand, expected, wants_value, what);
#endif
    (void) address, (void) type, (void) op, (void) operand, (void) expected, (void) wants_value, (void) what;
    require_alive("a non-blocking host-side atomic");
    SYMM_THROW(errc::unsupported,
               "PE {}: a non-blocking atomic through the GPU on the {} backend, whose heap is host memory", my_pe(),
               to_string(kind_));
  }

  pending_value read_nbi(const void* address, std::size_t bytes) override {
#if SYMM_CUDA_BACKEND()
    if (cuda_) return start_gpu_read(*cuda_, address, bytes);
#endif
    (void) address, (void) bytes;
    require_alive("get_nbi of one element");
    SYMM_THROW(errc::unsupported,
               "PE {}: a non-blocking read through the GPU on the {} backend, whose heap is host memory", my_pe(),
               to_string(kind_));
  }

  //! Completes every operation this PE started. `what` names the symm call, for errors.
  void quiet(std::string_view what) {
#if SYMM_CUDA_BACKEND()
    if (cuda_) cuda_->quiet(what);
#else
    (void) what;
#endif
    if (engine_) engine_->drain();
  }

  //! A collective operation's agreement step: publishes this PE's request in its slot for the team, waits for the
  //! team's PEs (the team's barrier), then compares every member's request and throws errc::allocation_mismatch with
  //! each PE's request when they differ (check level 1). `gathered`, when given, receives every member's request in
  //! team order, payload included. With `check` false it only publishes and waits: a team's destruction, after which
  //! the team's slots belong to the channel's next team and must not be read.
  //!
  //! Slots are indexed by the team's channel and the parity of its sequence: a PE writes slot s + 2 only after the
  //! barrier of operation s + 1, which every member reaches after it finished reading the slots of operation s. Over
  //! the network the team's root gathers the requests and hands the table to every member.
  void agree(collective_request request, const collective_group& group, std::string_view what,
             std::vector<collective_request>* gathered = nullptr, bool check = true) {
    require_alive(what);
    require_not_failed(what);
    if (!net_) live_.check(what); // after a failure a barrier could pair with a dead PE's last arrival
    // What this PE printed goes out before it meets its peers: if they disagree, the first PE to find it ends the
    // job, and its launcher stops this PE wherever it is (even between the release and its own flush).
    std::fflush(nullptr);
    request.sequence = ++*group.sequence;
    request.unwinding = releasing_while_unwinding_ ? 1 : 0;
    // Slow is not wrong: a PE that has not arrived is waited for, and compared only once it has. Only past the bound
    // (symm's own collectives: SYMM_COLLECTIVE_TIMEOUT_MS; barriers: SYMM_BARRIER_TIMEOUT_MS, none by default) does
    // the wait end, with an error that names who did not come.
    const std::chrono::milliseconds bound =
        request.kind == collective_kind::barrier ? barrier_bound_ : collective_bound_;
    const auto started = std::chrono::steady_clock::now();
    if (net_) {
      net_meeting met = net_->exchange(group.members, group.channel, request, what,
                                       bound.count() > 0 ? wait_deadline(started + bound) : std::nullopt);
      if (met.end == net_meeting::outcome::abandoned) abandon_unwinding_release(what);
      if (met.end == net_meeting::outcome::late) throw_not_arrived_network(request, group, what, started, met);
      if (gathered != nullptr) *gathered = met.table;
      if (check && SYMM_CHECK_LEVEL(1)) {
        compare_requests(request, group, what, [&](std::size_t i) { return met.table[i]; });
      }
      return;
    }
    auto slot = [&](int pe) -> collective_request& {
      return control(pe).requests[group.channel][request.sequence & 1];
    };
    slot(job_.pe) = request;
    // A release made while an exception propagates is not waited for by PEs blocked in a wait for data: if every PE
    // that has not come is in one, this PE's exception most likely ends it, and they would wait for it for ever.
    bool abandoned = false;
    const auto give_up = [&] {
      if (request.unwinding == 0) return false;
      for (int pe : group.members) {
        if (slot(pe).sequence != request.sequence && atomic_at(control(pe).host_waits).load() == 0) return false;
      }
      return abandoned = true;
    };
    if (!wait_for_all(group, what, bound.count() > 0 ? wait_deadline(started + bound) : std::nullopt, give_up)) {
      if (abandoned) abandon_unwinding_release(what);
      throw_not_arrived(request, group, what, std::chrono::steady_clock::now() - started, slot);
    }
    if (gathered != nullptr) {
      gathered->clear();
      for (int pe : group.members)
        gathered->push_back(slot(pe));
    }
    if (!check || !SYMM_CHECK_LEVEL(1)) return;
    compare_requests(request, group, what, [&](std::size_t i) { return slot(group.members[i]); });
  }

  //! Marks the collectives this PE makes until the returned guard ends as releases made while an exception propagates
  //! (collective_request::unwinding), so that a PE they do not match reports this PE as failed, not a mismatch.
  [[nodiscard]] auto releasing_while_unwinding() noexcept {
    struct guard {
      bool* flag;
      bool before;
      ~guard() { *flag = before; }
    };
    return guard{&releasing_while_unwinding_, std::exchange(releasing_while_unwinding_, true)};
  }

  //! SYMM_COLLECTIVE_TIMEOUT_MS when unset: ten minutes, what a debugger session at one breakpoint may take.
  static constexpr std::chrono::milliseconds default_collective_bound{600'000};

private:
  //! A PE marked failed (a bound passed, a release failed while unwinding) takes part in no collective any more: the
  //! others have been told, and its barrier arrivals may be unmatched.
  void require_not_failed(std::string_view what) const {
    pe_control& mine = control(job_.pe);
    if (atomic_at(mine.state).load(std::memory_order_acquire) == static_cast<std::uint32_t>(pe_state::failed)) {
      SYMM_THROW(errc::peer_failed, "PE {}: {} after this PE failed: {}", job_.pe, what,
                 std::string_view(mine.failure, strnlen(mine.failure, sizeof(mine.failure))));
    }
  }

  //! A release made while unwinding that the PEs not come would never join: this PE fails (the others learn why).
  [[noreturn]] void abandon_unwinding_release(std::string_view what) {
    mark_failed(
        fmt::format("PE {} left its scope by an exception (its own error, which PE {} reports)", job_.pe, job_.pe));
    SYMM_THROW(errc::peer_failed,
               "PE {}: {} while an exception propagated: abandoned, because the PEs that did not come are in "
               "waits for data (wait_until and the like), not in this collective",
               job_.pe, what);
  }

  //! The error of an agreement wait that passed its bound: who has not arrived (their slots still hold an earlier
  //! operation), in what state their processes are, and how to change the bound. Marks this PE failed first, so that
  //! the late PEs, once they come, get an error rather than a barrier that never completes.
  template <class SlotOf>
  [[noreturn]] void
  throw_not_arrived(const collective_request& request, const collective_group& group, std::string_view what,
                    std::chrono::steady_clock::duration waited, SlotOf&& slot) {
    std::string missing;
    for (int pe : group.members) {
      if (slot(pe).sequence == request.sequence) continue;
      const std::uint32_t pid = atomic_at(control(pe).pid).load(std::memory_order_relaxed);
      const std::string condition = process_condition(pid);
      const auto& slots = control(pe).requests[group.channel]; // its latest is in either parity's slot
      const collective_request& latest = slots[0].sequence > slots[1].sequence ? slots[0] : slots[1];
      const bool waits_for_data = atomic_at(control(pe).host_waits).load(std::memory_order_relaxed) != 0;
      missing += fmt::format("\n  PE {} (pid {}{}{}{}): last arrived at {}", pe, pid, condition.empty() ? "" : ", ",
                             condition, waits_for_data ? ", in a host wait for data" : "",
                             latest.sequence == 0 ? "none of this team's collectives" : describe(latest));
    }
    throw_timeout(request, group, what, waited, "", missing);
  }

  //! throw_not_arrived over the network: who did not come as the root saw it (or, when the root itself did not
  //! answer, the root), with process states where the PE is on this node.
  [[noreturn]] void throw_not_arrived_network(
      const collective_request& request, const collective_group& group, std::string_view what,
      std::chrono::steady_clock::time_point started, const net_meeting& met) {
    const job_layout& layout = net_->layout();
    std::string missing;
    for (const net_late_member& late : met.late) {
      const auto index = static_cast<std::size_t>(late.pe);
      const std::string condition =
          layout.nodes[index] == layout.nodes[static_cast<std::size_t>(job_.pe)]
              ? process_condition(layout.pids[index])
              : std::string{};
      std::string seen = late.arrived_before != 0 ? "last arrived at " + describe(late.last)
                                                  : std::string("none of this team's collectives");
      if (met.reported_by == job_.pe && late.pe == group.members[0]) {
        seen = "the team's root: it has not answered this PE's arrival";
      }
      missing += fmt::format(
          "\n  PE {} (pid {}, node {}{}{}{}): {}", late.pe, layout.pids[index], layout.nodes[index],
          condition.empty() ? "" : ", ", condition, late.in_host_wait != 0 ? ", in a host wait for data" : "", seen);
    }
    throw_timeout(request, group, what, std::chrono::steady_clock::now() - started,
                  met.reported_by != job_.pe ? fmt::format(" (as PE {}, the team's root, found)", met.reported_by) : "",
                  missing);
  }

  //! The timeout error itself; marks this PE failed first, so that the late PEs, once they come, get an error rather
  //! than a barrier that never completes.
  [[noreturn]] void
  throw_timeout(const collective_request& request, const collective_group& group, std::string_view what,
                std::chrono::steady_clock::duration waited, std::string_view source, std::string_view missing) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
    const bool barrier = request.kind == collective_kind::barrier;
    std::string text = fmt::format(
        "PE {}: {} ({}) waited {} ms for PEs of {} that did not arrive{}; they are alive, so this is no mismatch: they "
        "are slow, paused or waiting elsewhere:{}\n{} bounds this wait (now {} ms; 0: no bound)",
        job_.pe, what, describe(request), ms, group.name, source, missing,
        barrier ? "SYMM_BARRIER_TIMEOUT_MS" : "SYMM_COLLECTIVE_TIMEOUT_MS",
        (barrier ? barrier_bound_ : collective_bound_).count());
    mark_failed(fmt::format("PE {} gave up waiting in {} after {} ms", job_.pe, what, ms));
    SYMM_THROW(errc::timeout, "{}", text);
  }

  //! Throws errc::allocation_mismatch with each member's request when they differ from this PE's. `request_of(i)`:
  //! the request of member i (team order).
  template <class RequestOf>
  void compare_requests(const collective_request& request, const collective_group& group, std::string_view what,
                        RequestOf&& request_of) const {
    bool same = true, heap_only = true;
    int unwinding_pe = -1; // a PE that released an object while an exception propagated on it
    for (std::size_t i = 0; i < group.members.size(); ++i) {
      const collective_request theirs = request_of(i);
      same = same && theirs.sequence == request.sequence && theirs.kind == request.kind &&
             std::equal(std::begin(theirs.args), std::end(theirs.args), std::begin(request.args));
      heap_only = heap_only && (theirs.kind == collective_kind::allocate || theirs.kind == collective_kind::free);
      if (theirs.unwinding != 0 && unwinding_pe < 0) unwinding_pe = group.members[i];
    }
    if (same) return;
    // The job is breaking: what this PE printed must come out before its launcher stops it (a pipe is fully buffered).
    std::fflush(nullptr);
    if (unwinding_pe >= 0 && unwinding_pe != job_.pe && request.unwinding == 0) {
      // Its own error is the cause, and that PE reports it: here it is a failed peer, not a mismatch to blame.
      SYMM_THROW(errc::peer_failed,
                 "PE {} waited in {} but PE {} left its scope by an exception (its own error, which PE {} reports) and "
                 "released a symmetric object on the way, which this PE did not do: {}",
                 job_.pe, what, unwinding_pe, unwinding_pe,
                 describe(request_of(static_cast<std::size_t>(
                     std::find(group.members.begin(), group.members.end(), unwinding_pe) - group.members.begin()))));
    }
    const bool whole_world = group.channel == 0;
    std::string table;
    for (std::size_t i = 0; i < group.members.size(); ++i) {
      int pe = group.members[i];
      table += whole_world ? fmt::format("\n  PE {}: {}", pe, describe(request_of(i)))
                           : fmt::format("\n  PE {} (team PE {}): {}", pe, i, describe(request_of(i)));
    }
    if (heap_only) {
      SYMM_THROW(errc::allocation_mismatch,
                 "PE {}: {}: the PEs did not ask for the same collective allocation; every "
                 "PE must allocate and free symmetric objects with the same sizes in the same order:{}",
                 job_.pe, what, table);
    }
    SYMM_THROW(errc::allocation_mismatch,
               "PE {}: {}: the PEs of {} did not ask for the same collective operation; "
               "every PE of a team must make the same collective calls (team splits and destruction, allocations) in "
               "the same order with the same arguments:{}",
               job_.pe, what, group.name, table);
  }

  static std::int64_t to_arg(std::size_t value) noexcept {
    return static_cast<std::int64_t>(value);
  }

#if SYMM_CUDA_BACKEND()
  //! Every `period` (0: never) the monitor asks the liveness check, from its own thread, whether another PE failed; the
  //! first PE it names goes into the failure word, failed PE + 1, where this PE's kernels' waits see it. Every period
  //! it also prints why a kernel's wait trapped, once one did (the trap record), so a world of one PE has one too:
  //! a program that ends at the CUDA error of its trapped kernel would otherwise never say why (the heap's teardown
  //! prints it too, when the monitor did not). Never throws: a monitor that cannot start (no thread left) costs the
  //! kernels their early news, not the world.
  void start_failure_monitor(std::chrono::milliseconds period) noexcept {
    wait_trap_record* record = cuda_->trap_record();
    if (period.count() <= 0 || record == nullptr) return;
    std::uint32_t* word = &record->failure_code; // cuda_heap::failure_word(), from the record in hand
    try {
      monitor_ = std::make_unique<failure_monitor>(
          period, [this] { return live_.failed_peer(); },
          [word](int pe) { std::atomic_ref<std::uint32_t>(*word).store(failure_code(pe), std::memory_order_release); },
          [record] { report_wait_trap(*record, stderr); });
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "symm: PE %d: warning: the failure monitor did not start (%s): this PE's kernels see a failed peer "
                   "only at their wait bounds\n",
                   job_.pe, e.what());
    }
  }
#endif

  job_info job_;
  symm::backend kind_{};
  std::size_t heap_bytes_ = 0;
  std::unique_ptr<bootstrap> boot_;
  std::unique_ptr<host_heap> host_;
  std::unique_ptr<net_coordination> net_; // set when the PEs coordinate over the network
  std::vector<pe_control*> controls_;
  liveness live_;
  std::vector<std::byte*> peer_bases_;
  std::byte* const* device_peer_bases_ = nullptr;
  std::optional<heap_allocator> allocator_;
  std::vector<int> all_pes_;
  std::uint64_t collective_sequence_ = 0;
  channel_set team_channels_ = world_channel_only();
  std::size_t system_offset_ = 0;
  collective_tuning tuning_;
  detail::topology topology_;
  std::mutex printed_plans_mutex_;
  std::set<std::tuple<int, int, std::uint64_t>> printed_plans_; // SYMM_DEBUG: (kind, team size, plan) printed once
  std::chrono::milliseconds collective_bound_{0};               // 0: none
  std::chrono::milliseconds barrier_bound_{0};
  bool releasing_while_unwinding_ = false; // set by release_collectively around a release made while unwinding
  bool alive_ = true;
  // Made with the world, not at the first put_nbi, so that any thread of the PE may start one (docs/api.md, Threads);
  // its worker thread starts with the first copy. Reset by finalize.
  std::unique_ptr<copy_engine> engine_ = std::make_unique<copy_engine>();
#if SYMM_CUDA_BACKEND()
  std::unique_ptr<cuda_heap> cuda_;
#endif
  // Last, so that it stops before anything it reads (the liveness check) or writes (cuda_'s failure word) goes away.
  std::unique_ptr<failure_monitor> monitor_;
};

//! The runtime behind a view's world pointer (array_ref::world(), pe_span::world()): every world_interface is one.
inline world_state* state_of(world_interface* world) noexcept {
  return static_cast<world_state*>(world);
}
inline const world_state* state_of(const world_interface* world) noexcept {
  return static_cast<const world_state*>(world);
}

//! The world the calling thread made most recently and has not destroyed: what host free functions without a world
//! argument (barrier_all, quiet, wait_until) act on when called from that thread.
inline thread_local world_state* current_world = nullptr;

//! Every live world of this process, so that a thread that made none (a std::thread of a PE) finds its PE's world.
//! A process holds one world, except under symm::launch in threads mode, where each PE thread holds its own: while
//! such a launch runs, no thread is given a world it did not make, even when only one is live at that moment (one PE
//! has not made its world yet, or has ended), since that world may be another PE's.
class live_worlds {
public:
  static void add(world_state* world) {
    std::lock_guard lock(mutex());
    list().push_back(world);
  }
  static void remove(world_state* world) noexcept {
    std::lock_guard lock(mutex());
    std::erase(list(), world);
  }
  //! The only live world, or null: none, or several, or PEs running as threads (then `count` says how many worlds
  //! are live and `thread_pes` that PE threads run).
  static world_state* only(std::size_t& count, bool& thread_pes) noexcept {
    std::lock_guard lock(mutex());
    count = list().size();
    thread_pes = thread_pe_launches() > 0;
    return count == 1 && !thread_pes ? list().front() : nullptr;
  }

  //! Held by symm::launch in threads mode while its PE threads run.
  class thread_pes_running {
  public:
    thread_pes_running() {
      std::lock_guard lock(mutex());
      ++thread_pe_launches();
    }
    ~thread_pes_running() {
      std::lock_guard lock(mutex());
      --thread_pe_launches();
    }
    thread_pes_running(const thread_pes_running&) = delete;
    thread_pes_running& operator=(const thread_pes_running&) = delete;
  };

private:
  static int& thread_pe_launches() noexcept {
    static int launches = 0;
    return launches;
  }
  static std::mutex& mutex() noexcept {
    static std::mutex m;
    return m;
  }
  static std::vector<world_state*>& list() noexcept {
    static std::vector<world_state*> worlds;
    return worlds;
  }
};

//! The world a free function acts on: the calling thread's, else the process's only one; null when there is none (or
//! several, and this thread made none of them: symm cannot tell which PE is calling).
inline world_state* find_current_world() noexcept {
  if (current_world != nullptr) return current_world;
  std::size_t count = 0;
  bool thread_pes = false;
  return live_worlds::only(count, thread_pes);
}

inline world_state& require_current_world(std::string_view what) {
  if (current_world != nullptr) return *current_world;
  std::size_t count = 0;
  bool thread_pes = false;
  if (world_state* only = live_worlds::only(count, thread_pes)) return *only;
  if (thread_pes) {
    SYMM_THROW(errc::not_initialized,
               "{} was called from a thread that made no symm::world while symm::launch runs PEs as threads of this "
               "process ({} worlds live), so symm cannot tell which PE is calling; call it from a PE's own thread, or "
               "use that world's members (world.quiet(), world.barrier())",
               what, count);
  }
  if (count == 0) {
    SYMM_THROW(errc::not_initialized,
               "{} was called with no symm::world alive in this process; construct a "
               "symm::world first (or run inside symm::launch)",
               what);
  }
  SYMM_THROW(errc::not_initialized,
             "{} was called from a thread that made no symm::world, and this process holds {} worlds, so symm cannot "
             "tell which PE is calling; call it from the thread that made the world, or use that world's members "
             "(world.quiet(), world.barrier())",
             what, count);
}

} // namespace detail
SYMM_END_NAMESPACE
