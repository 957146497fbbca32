// symm/detail/env.hpp: where a PE learns its rank, the job size and the rendezvous directory.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/heap_allocator.hpp>
#include <symm/detail/process_state.hpp>
#include <symm/error.hpp>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Everything a PE needs to join its job.
struct job_info {
  int pe = -1;
  int n_pes = 0;
  int local_pe = -1;
  int local_n_pes = 0;
  std::string job_dir; //!< private directory (mode 0700) holding the rendezvous socket
  std::string token;   //!< secret every joining PE presents; empty when the launcher gives none
  std::string source;  //!< which launcher the values came from, for messages
  //! "host:port" where PE 0 listens for a TCP rendezvous (a job across nodes); empty: the Unix socket in job_dir
  std::string bootstrap_addr = {};
  //! What makes this job unique among all jobs, from the launcher ("Slurm job 812.3"); every PE checks at the
  //! rendezvous that the others have the same. Empty for symmrun and symm::launch, whose job_dir is unique already.
  std::string identity = {};
  //! Whether job_dir was derived from `identity` (no launcher made it): PE 0 then removes it after the rendezvous.
  bool derived_dir = false;
  //! Whether local_pe came from the launcher; if not, the world numbers the PEs of each node itself.
  bool local_pe_given = false;
  //! Whether local_n_pes came from the launcher (Slurm gives none: the job size stands in until the world counts).
  bool local_n_pes_given = false;
};

//! Set by symm::launch for the PEs it starts; takes precedence over the environment.
inline thread_local std::optional<job_info> launched_job;

//! The lock of symm's reads and writes of the environment. PEs that are threads of one process read variables while
//! another PE's thread sets CUDA's before CUDA starts (request_eager_module_loading), and setenv may move the table
//! that a concurrent getenv walks: a PE crashed so in getenv. Every symm access to the environment takes this lock.
inline std::mutex& environment_mutex() {
  static std::mutex m;
  return m;
}

inline std::optional<std::string> get_env(const char* name) {
  std::lock_guard lock(environment_mutex());
  if (const char* v = std::getenv(name); v != nullptr) return std::string(v);
  return std::nullopt;
}

//! setenv(name, value) unless the variable is set (the user's choice stays), under environment_mutex().
inline void set_env_default(const char* name, const char* value) {
  std::lock_guard lock(environment_mutex());
  ::setenv(name, value, 0);
}

//! Parses a non-negative decimal integer variable of type Int; garbage is an error that names the variable and its
//! value, and so is a number larger than Int holds (it is not cut to a smaller one).
template <class Int>
std::optional<Int> env_integer(const char* name) {
  auto text = get_env(name);
  if (!text) return std::nullopt;
  Int value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec == std::errc::result_out_of_range && end == text->data() + text->size() && text->front() != '-') {
    SYMM_THROW(errc::environment, "environment variable {}='{}' is too large: at most {}", name, *text,
               std::numeric_limits<Int>::max());
  }
  if (ec != std::errc{} || end != text->data() + text->size() || value < 0) {
    SYMM_THROW(errc::environment, "environment variable {}='{}' is not a non-negative integer", name, *text);
  }
  return value;
}

inline std::optional<int> env_int(const char* name) {
  return env_integer<int>(name);
}

//! Size of the symmetric heap per PE: SYMM_HEAP_SIZE accepts a byte count with an optional K, M or G suffix, up to
//! heap_allocator::max_capacity (a size that does not fit is an error naming it, never a wrapped smaller heap).
inline std::size_t heap_size_from_env(std::size_t fallback) {
  auto text = get_env("SYMM_HEAP_SIZE");
  if (!text || text->empty()) return fallback;
  std::size_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  std::string_view suffix(end, text->data() + text->size());
  std::size_t scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = std::size_t{1} << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = std::size_t{1} << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = std::size_t{1} << 30;
  else if (!suffix.empty() && ec == std::errc{}) ec = std::errc::invalid_argument;
  constexpr std::size_t most = heap_allocator::max_capacity;
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && value > most / scale)) {
    SYMM_THROW(errc::environment, "SYMM_HEAP_SIZE='{}' is more than the largest heap symm maps, {} bytes (64 TiB)",
               *text, most);
  }
  if (ec != std::errc{} || value == 0) {
    SYMM_THROW(errc::environment, "SYMM_HEAP_SIZE='{}' is not a size (examples: 268435456, 256M, 2G)", *text);
  }
  return value * scale;
}

//! A time in milliseconds from `name`, `fallback` when unset; at most 10^12 ms (about 31 years), so that no deadline
//! computed from it can overflow the clock. `zero_means` is added to the error ("0: no bound").
inline std::chrono::milliseconds
env_milliseconds(const char* name, std::chrono::milliseconds fallback, std::string_view zero_means = {}) {
  constexpr std::int64_t most = 1'000'000'000'000;
  const std::optional<std::int64_t> ms = env_integer<std::int64_t>(name);
  if (!ms) return fallback;
  if (*ms > most) {
    SYMM_THROW(errc::environment, "{}={} is too large: at most {} ms{}", name, *ms, most,
               zero_means.empty() ? std::string{} : fmt::format(" ({})", zero_means));
  }
  return std::chrono::milliseconds(*ms);
}

//! SYMM_BOOTSTRAP_TIMEOUT_MS, default 60 s.
inline std::chrono::milliseconds bootstrap_timeout_from_env() {
  return env_milliseconds("SYMM_BOOTSTRAP_TIMEOUT_MS", std::chrono::milliseconds(60000));
}

//! A wait bound in milliseconds from `name` (0: none), `fallback` when unset.
inline std::chrono::milliseconds wait_bound_from_env(const char* name, std::chrono::milliseconds fallback) {
  return env_milliseconds(name, fallback, "0: no bound");
}

//! 64-bit FNV-1a of `text` from `basis`: names and digests of job identities (not a defence against an adversary,
//! which the private job directory is; a way to tell honest jobs apart).
constexpr std::uint64_t fnv1a(std::string_view text, std::uint64_t basis = 0xcbf29ce484222325ull) noexcept {
  std::uint64_t h = basis;
  for (char c : text)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

//! A 128-bit digest of a job identity as 32 hex digits: what PEs compare at the rendezvous.
inline std::string identity_digest(std::string_view identity) {
  return fmt::format("{:016x}{:016x}", fnv1a(identity), fnv1a(identity, 0x84222325cbf29ce4ull));
}

//! The rendezvous directory of a job whose launcher is not symmrun, named after the job's identity so that every PE
//! of one job computes the same path and no two jobs share one.
inline std::string derived_job_dir(std::string_view identity) {
  return fmt::format("/tmp/symm-{}/job-{}", ::getuid(), identity_digest(identity).substr(0, 24));
}

//! The variables that tell one job of `source` (a launcher) from every other, as "NAME=value ..." (sorted as listed),
//! or nothing when the launcher set none of the required ones. SYMM_JOB_ID, when set, is the identity under any
//! launcher: the way out for a launcher that gives none. MPICH's mpiexec (Hydra) gives its PEs no variable of the
//! kind (their kvsname only over the PMI wire, which MPI_Init owns): a job of `one_node` is then told apart by the
//! Hydra proxy that started its PEs, one per node and job.
inline std::string launcher_job_identity(std::string_view source, bool one_node = false) {
  if (auto id = get_env("SYMM_JOB_ID"); id && !id->empty()) return fmt::format("SYMM_JOB_ID={}", *id);
  // `required`: all must be set; `optional`: added when set (they tell apart what the required ones may not).
  const auto join =
      [](std::initializer_list<const char*> required, std::initializer_list<const char*> optional) -> std::string {
    std::string out;
    for (const char* name : required) {
      auto v = get_env(name);
      if (!v || v->empty()) return {};
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, *v);
    }
    for (const char* name : optional) {
      if (auto v = get_env(name); v && !v->empty()) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, *v);
    }
    return out;
  };
  std::string identity;
  if (source == "Open MPI") {
    // PMIx namespace (Open MPI 5, or 4 under PMIx): unique per mpirun; the ORTE job id of Open MPI 4 otherwise.
    identity = join({"PMIX_NAMESPACE"}, {"OMPI_MCA_ess_base_jobid"});
    if (identity.empty()) identity = join({"OMPI_MCA_ess_base_jobid"}, {"OMPI_MCA_orte_hnp_uri"});
  } else if (source == "PMI") {
    identity = join({"PMI_KVSNAME"}, {"PMI_PORT"});
    if (identity.empty()) identity = join({"PMIX_NAMESPACE"}, {});
    if (identity.empty() && one_node) {
      if (const long proxy = ancestor_named("hydra_pmi_proxy"); proxy != 0) {
        char host[256] = {};
        (void) ::gethostname(host, sizeof(host) - 1);
        identity = fmt::format("hydra_pmi_proxy pid {} on {}", proxy, host);
      }
    }
  } else if (source == "Slurm") {
    identity = join({"SLURM_JOB_ID", "SLURM_STEP_ID"}, {"SLURM_CLUSTER_NAME"});
    if (identity.empty()) identity = join({"SLURM_JOB_ID", "SLURM_STEPID"}, {"SLURM_CLUSTER_NAME"});
  } else if (source == "torchrun") {
    // The master endpoint is unique among running jobs (torchrun's store listens there); the run id is "none"
    // unless --rdzv-id gives one, so it cannot tell jobs apart alone; a restarted job is a new world.
    identity = join({"MASTER_ADDR", "MASTER_PORT"}, {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"});
  }
  return identity.empty() ? identity : fmt::format("{}: {}", source, identity);
}

//! What to say when a launcher gives nothing that tells its jobs apart.
inline std::string no_identity_message(std::string_view source) {
  std::string_view looked_for =
      source == "Open MPI" ? "PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid"
      : source == "PMI"    ? "PMI_KVSNAME or PMIX_NAMESPACE"
      : source == "Slurm"  ? "SLURM_JOB_ID and SLURM_STEP_ID"
                           : "MASTER_ADDR and MASTER_PORT";
  return fmt::format(
      "{}: the launcher's variables give this job no identity of its own ({} not set), so symm cannot keep it apart "
      "from another job started the same way: their PEs could meet and form one world. Export a value unique to "
      "this run to every PE, e.g. `export SYMM_JOB_ID=$(uuidgen)` before starting it (mpirun: add -x SYMM_JOB_ID), "
      "or start the job with symmrun",
      source, looked_for);
}

//! Whether the launcher says that every PE of the job runs on this node: its node size equals the job size.
inline bool launcher_says_one_node(const job_info& job) noexcept {
  return job.local_n_pes_given && job.local_n_pes == job.n_pes;
}

//! The TCP rendezvous address: SYMM_BOOTSTRAP_ADDR, else under torchrun, for a job that spans nodes, MASTER_ADDR with
//! MASTER_PORT + 1 (torchrun's own store listens on MASTER_PORT itself); empty otherwise: the Unix socket of one node.
//! A torchrun job of one node (LOCAL_WORLD_SIZE == WORLD_SIZE: `--standalone`, or `--nnodes 1`) meets as symmrun's
//! does, through a Unix socket in a private directory named from its identity, so it needs no token and the CUDA and
//! host backends, which pass file descriptors between the PEs of one node, accept it.
inline std::string bootstrap_addr_from_env(const job_info& job) {
  if (auto addr = get_env("SYMM_BOOTSTRAP_ADDR"); addr && !addr->empty()) return *addr;
  if (job.source != "torchrun" || launcher_says_one_node(job)) return {};
  auto host = get_env("MASTER_ADDR");
  auto port = env_int("MASTER_PORT");
  if (!host || host->empty() || !port) return {};
  if (*port >= 65535) {
    SYMM_THROW(errc::environment,
               "MASTER_PORT={}: symm's rendezvous listens on MASTER_PORT + 1, which is not a port; set "
               "SYMM_BOOTSTRAP_ADDR=host:port",
               *port);
  }
  return fmt::format("{}:{}", *host, *port + 1);
}

//! job_info::source of a program started without a launcher, which runs as a job of one PE.
inline constexpr const char* no_launcher =
    "no launcher (none of SYMM_PE/SYMM_N_PES, OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS, "
    "RANK/WORLD_SIZE is set): one PE";

//! Reads the launcher's variables: symmrun's first, then Open MPI, PMI (MPICH, Intel MPI), Slurm and torchrun. When
//! none is set the program is a job of one PE (source no_launcher); malformed ones throw errc::environment.
inline job_info job_from_environment() {
  if (launched_job) {
    job_info launched = *launched_job;
    if (launched.bootstrap_addr.empty()) launched.bootstrap_addr = bootstrap_addr_from_env(launched);
    return launched;
  }
  job_info info;
  auto take =
      [&](const char* rank, const char* size, const char* local_rank, const char* local_size, const char* source) {
        auto r = env_int(rank);
        auto s = env_int(size);
        if (!r && !s) return false;
        if (!r || !s) {
          SYMM_THROW(errc::environment, "{} is set but {} is not: both are needed to start a PE", r ? rank : size,
                     r ? size : rank);
        }
        info.pe = *r;
        info.n_pes = *s;
        const std::optional<int> local = local_rank ? env_int(local_rank) : std::nullopt;
        info.local_pe = local.value_or(info.pe);
        info.local_pe_given = local.has_value();
        const std::optional<int> local_n = local_size ? env_int(local_size) : std::nullopt;
        info.local_n_pes = local_n.value_or(info.n_pes);
        info.local_n_pes_given = local_n.has_value();
        info.source = source;
        return true;
      };
  if (take("SYMM_PE", "SYMM_N_PES", "SYMM_LOCAL_PE", "SYMM_LOCAL_N_PES", "symmrun")) {
    info.job_dir = get_env("SYMM_JOB_DIR").value_or("");
    info.token = get_env("SYMM_JOB_TOKEN").value_or("");
    if (info.job_dir.empty()) {
      SYMM_THROW(errc::environment, "SYMM_PE is set but SYMM_JOB_DIR is not; start the job with symmrun");
    }
  } else if (take("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                  "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI") ||
             take("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI") ||
             take("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, "Slurm") ||
             take("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun")) {
    info.derived_dir = true; // below, once the rank and size are known to be sane
  } else {
    // No launcher: a job of one PE, as an MPI program started without mpirun (a singleton) or an NVSHMEM one.
    info.pe = 0;
    info.n_pes = 1;
    info.local_pe = 0;
    info.local_n_pes = 1;
    info.source = no_launcher;
    info.derived_dir = true;
  }
  // Other launchers give no token of their own: the user exports one for the job (a TCP rendezvous requires it).
  if (info.token.empty()) info.token = get_env("SYMM_JOB_TOKEN").value_or("");
  info.bootstrap_addr = bootstrap_addr_from_env(info);
  if (info.n_pes < 1)
    SYMM_THROW(errc::environment, "{}: the job size is {}, it must be at least 1", info.source, info.n_pes);
  if (info.pe >= info.n_pes) {
    SYMM_THROW(errc::environment, "{}: this PE's rank {} is not below the job size {}", info.source, info.pe,
               info.n_pes);
  }
  if (info.derived_dir) {
    // The meeting place comes from what makes this job unique, never from a fixed fallback: two jobs that met in
    // one directory would form one world and each exit with the other's data.
    info.identity = launcher_job_identity(info.source, launcher_says_one_node(info));
    // A job of one PE meets nobody, so nothing can mix: it needs no identity from the launcher.
    if (info.identity.empty() && info.n_pes == 1) {
      info.identity = fmt::format("{}: one PE, pid {}", info.source, ::getpid());
    }
    if (info.identity.empty()) SYMM_THROW(errc::environment, "{}", no_identity_message(info.source));
    info.job_dir = derived_job_dir(info.identity);
  }
  return info;
}

} // namespace detail
SYMM_END_NAMESPACE
