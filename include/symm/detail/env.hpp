// symm/detail/env.hpp: where a PE learns its rank, the job size and the rendezvous directory.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/error.hpp>

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <initializer_list>
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
};

//! Set by symm::launch for the PEs it starts; takes precedence over the environment.
inline thread_local std::optional<job_info> launched_job;

inline std::optional<std::string> get_env(const char* name) {
  if (const char* v = std::getenv(name); v != nullptr) return std::string(v);
  return std::nullopt;
}

//! The value of the first of `names` that is set, else `fallback`.
inline std::string first_env(std::initializer_list<const char*> names, const char* fallback) {
  for (const char* name : names) {
    if (auto v = get_env(name)) return *v;
  }
  return fallback;
}

//! Parses a non-negative decimal integer variable; garbage is an error that names the variable and its value.
inline std::optional<int> env_int(const char* name) {
  auto text = get_env(name);
  if (!text) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc{} || end != text->data() + text->size() || value < 0) {
    SYMM_THROW(errc::environment, "environment variable {}='{}' is not a non-negative integer", name, *text);
  }
  return value;
}

//! Size of the symmetric heap per PE: SYMM_HEAP_SIZE accepts a byte count with an optional K, M or G suffix.
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
  else if (!suffix.empty()) ec = std::errc::invalid_argument;
  if (ec != std::errc{} || value == 0) {
    SYMM_THROW(errc::environment, "SYMM_HEAP_SIZE='{}' is not a size (examples: 268435456, 256M, 2G)", *text);
  }
  return value * scale;
}

//! A directory for the rendezvous socket when the launcher is not symmrun: derived from the job's id so that
//! every PE of one job computes the same path.
inline std::string derived_job_dir(std::string_view job_key) {
  std::string base = fmt::format("/tmp/symm-{}", ::getuid());
  return fmt::format("{}/job-{}", base, job_key);
}

//! The TCP rendezvous address: SYMM_BOOTSTRAP_ADDR, else under torchrun MASTER_ADDR with MASTER_PORT + 1 (torchrun's
//! own store listens on MASTER_PORT itself); empty when neither is set (the Unix socket of one node).
inline std::string bootstrap_addr_from_env(std::string_view source) {
  if (auto addr = get_env("SYMM_BOOTSTRAP_ADDR"); addr && !addr->empty()) return *addr;
  if (source != "torchrun") return {};
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

//! Reads the launcher's variables: symmrun's first, then Open MPI, PMI (MPICH, Intel MPI), Slurm and torchrun.
//! Throws errc::environment when none is set, naming the variables it looked for.
inline job_info job_from_environment() {
  if (launched_job) {
    job_info launched = *launched_job;
    if (launched.bootstrap_addr.empty()) launched.bootstrap_addr = bootstrap_addr_from_env(launched.source);
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
        info.local_pe = local_rank ? env_int(local_rank).value_or(info.pe) : info.pe;
        info.local_n_pes = local_size ? env_int(local_size).value_or(info.n_pes) : info.n_pes;
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
                  "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI")) {
    info.job_dir = derived_job_dir(first_env({"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}, "ompi"));
  } else if (take("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI")) {
    info.job_dir = derived_job_dir(get_env("PMI_KVSNAME").value_or("pmi"));
  } else if (take("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, "Slurm")) {
    info.job_dir = derived_job_dir(
        fmt::format("{}.{}", get_env("SLURM_JOB_ID").value_or("0"), get_env("SLURM_STEP_ID").value_or("0")));
  } else if (take("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun")) {
    info.job_dir = derived_job_dir(first_env({"TORCHELASTIC_RUN_ID", "MASTER_PORT"}, "torch"));
  } else {
    SYMM_THROW(errc::environment,
               "no launcher found: none of SYMM_PE/SYMM_N_PES (symmrun), OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, "
               "SLURM_PROCID/NTASKS or RANK/WORLD_SIZE is set. Start the program with `symmrun -n N prog`, an MPI "
               "or Slurm launcher, or run PEs inside one program with symm::launch(n, fn)");
  }
  // Other launchers give no token of their own: the user exports one for the job (a TCP rendezvous requires it).
  if (info.token.empty()) info.token = get_env("SYMM_JOB_TOKEN").value_or("");
  info.bootstrap_addr = bootstrap_addr_from_env(info.source);
  if (info.n_pes < 1)
    SYMM_THROW(errc::environment, "{}: the job size is {}, it must be at least 1", info.source, info.n_pes);
  if (info.pe >= info.n_pes) {
    SYMM_THROW(errc::environment, "{}: this PE's rank {} is not below the job size {}", info.source, info.pe,
               info.n_pes);
  }
  return info;
}

} // namespace detail
SYMM_END_NAMESPACE
