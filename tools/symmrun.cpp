// symmrun: starts the N processes (PEs) of one symm job on this host and supervises them.
//
// Protocol (read by symm's bootstrap; see docs/launching.md): PE k of N gets SYMM_PE=k, SYMM_N_PES=N,
// SYMM_LOCAL_PE=k, SYMM_LOCAL_N_PES=N, SYMM_JOB_DIR (a fresh 0700 directory in which PE 0 creates
// boot.sock) and SYMM_JOB_TOKEN (32 random hex digits). symmrun removes the job directory on every exit
// path it can see; when one PE fails it takes the others down and returns that PE's status.
//
// Design: one thread, one poll() loop. The signals symmrun reacts to are blocked and read from a
// signalfd, so child exits, forwarded signals, PE output and deadlines are handled in one place and no
// handler ever interrupts a system call. All PEs share one process group (led by PE 0) so that a
// single killpg() also reaches the processes they start.

#include <symm/detail/device_choice.hpp>
#include <symm/detail/process_state.hpp>
#include <symm/version.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

extern char** environ;

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int max_pes = 4096;
// How long PEs get between SIGTERM and SIGKILL once the job is being taken down.
constexpr auto kill_grace = 1s;
// --tag-output holds at most this much of one unfinished line per stream before passing it on.
constexpr std::size_t max_line_bytes = 64 * 1024;

constexpr int exit_failure = 1;          // symmrun itself could not do its job
constexpr int exit_usage = 2;            // bad command line
constexpr int exit_timeout = 124;        // --timeout expired (the value timeout(1) uses)
constexpr int exit_cannot_execute = 126; // found but exec() refused it (the value shells use)
constexpr int exit_not_found = 127;      // the program cannot be found or run (the value shells use)

// ---------------------------------------------------------------------------------------------
// Errors and messages

// Thrown for every condition that ends symmrun; carries the exit status. Caught in main() after the
// RAII objects (PEs, MPS daemon, job directory) have been cleaned up.
class fatal_error : public std::runtime_error {
public:
  fatal_error(int exit_code, const std::string& message) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

private:
  int exit_code_;
};

template <class... Args>
[[noreturn]] void fail(int exit_code, fmt::format_string<Args...> format, Args&&... args) {
  throw fatal_error(exit_code, fmt::format(format, std::forward<Args>(args)...));
}

// Like fail(), for a failed system call: appends errno's description.
template <class... Args>
[[noreturn]] void fail_sys(fmt::format_string<Args...> format, Args&&... args) {
  const int error = errno; // before formatting can overwrite it
  throw fatal_error(exit_failure,
                    fmt::format("{}: {}", fmt::format(format, std::forward<Args>(args)...), std::strerror(error)));
}

template <class T, class... Args>
T check_sys(T result, fmt::format_string<Args...> format, Args&&... args) {
  if (result == T(-1)) {
    fail_sys(format, std::forward<Args>(args)...);
  }
  return result;
}

// Writes all of text, waiting when fd is non-blocking and full. symmrun's own output bypasses stdio so
// that nothing sits in a buffer across fork() and a closed stdout cannot throw from a destructor.
bool write_all(int fd, std::string_view text) noexcept {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n >= 0) {
      text.remove_prefix(static_cast<std::size_t>(n));
    } else if (errno == EAGAIN) {
      pollfd writable{fd, POLLOUT, 0};
      ::poll(&writable, 1, -1);
    } else if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

// One diagnostic line on stderr, prefixed with "symmrun: ".
template <class... Args>
void say(fmt::format_string<Args...> format, Args&&... args) noexcept {
  try {
    std::string line = "symmrun: ";
    fmt::format_to(std::back_inserter(line), format, std::forward<Args>(args)...);
    line += '\n';
    write_all(STDERR_FILENO, line);
  } catch (...) { // out of memory while reporting: nothing better to do
  }
}

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal)) {
    return fmt::format("SIG{}", abbrev);
  }
  return fmt::format("signal {}", signal);
}

// "exited with status 3", "was killed by signal SIGKILL".
std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {}{}", signal_name(WTERMSIG(status)),
                       WCOREDUMP(status) ? " (core dumped)" : "");
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

// The shell convention: the exit status, or 128 + the signal that killed the process.
int exit_code_of(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// ---------------------------------------------------------------------------------------------
// File descriptors

class unique_fd {
public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

private:
  int fd_ = -1;
};

struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

// Both ends close on exec: a child gets a pipe only through an explicit dup2().
pipe_ends make_pipe() {
  std::array<int, 2> fds{};
  check_sys(::pipe2(fds.data(), O_CLOEXEC), "cannot create a pipe");
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

unique_fd open_dev_null(int flags) {
  return unique_fd(check_sys(::open("/dev/null", flags | O_CLOEXEC), "cannot open /dev/null"));
}

// A child started with fd 0, 1 or 2 closed would find one of symmrun's pipes there.
void ensure_standard_fds() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null_fd = check_sys(::open("/dev/null", O_RDWR), "cannot open /dev/null");
      if (null_fd != fd) { // open() returns the lowest free descriptor, which is fd
        fail(exit_failure, "standard descriptor {} is closed and could not be reopened", fd);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Command line

struct options {
  int npes = 0;
  bool tag_output = false;
  std::optional<std::chrono::duration<double>> timeout;
  std::string timeout_text; // as given, for the message
  bool mps = false;
  std::vector<int> gpus;
  std::vector<std::string> command; // the program and its arguments
};

enum class action { run, help, version };

struct command_line {
  action what = action::run;
  options opts;
};

constexpr std::string_view usage_text = R"(Usage: symmrun -n N [options] [--] program [args...]

Starts N processes (PEs) of a symm program on this host and supervises them. PE k gets SYMM_PE=k,
SYMM_N_PES=N and a private job directory and token; if one PE fails, the others are stopped.

Options:
  -n, --npes N         number of PEs to start, 1 to 4096 (required)
      --tag-output     prefix every line a PE writes to stdout or stderr with "[pe K] "
      --timeout SECS   terminate the job after SECS seconds (may be fractional); exit status 124
      --mps            start a private CUDA MPS daemon for this job (several PEs per GPU)
      --gpus LIST      comma-separated CUDA device numbers, given to PEs round-robin as SYMM_DEVICE
  -h, --help           print this help and exit
      --version        print the version and exit

Exit status: 0 when every PE exits with 0; else the status of the first PE that failed (128 + the
signal number if it was killed by a signal), 124 after --timeout, 127 if the program cannot be run,
2 for a bad command line, 1 if symmrun itself fails.
)";

int parse_npes(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 1 || value > max_pes) {
    fail(exit_usage, "invalid number of PEs '{}': expected an integer from 1 to {}", text, max_pes);
  }
  return value;
}

std::chrono::duration<double> parse_timeout(std::string_view text) {
  double seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // The upper bound keeps the deadline representable in steady_clock's nanoseconds.
  if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 1e9) {
    fail(exit_usage, "invalid --timeout '{}': expected a positive number of seconds", text);
  }
  return std::chrono::duration<double>(seconds);
}

std::vector<int> parse_gpus(std::string_view text) {
  std::vector<int> gpus;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view entry = text.substr(start, comma - start);
    int device = -1;
    const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), device);
    if (entry.empty() || error != std::errc{} || end != entry.data() + entry.size() || device < 0) {
      fail(exit_usage, "invalid --gpus list '{}': '{}' is not a CUDA device number", text, entry);
    }
    gpus.push_back(device);
    if (comma == text.size()) {
      return gpus;
    }
    start = comma + 1;
  }
}

command_line parse_command_line(std::span<char* const> args) {
  command_line result;
  options& opts = result.opts;
  bool npes_given = false;
  std::vector<std::string_view> seen; // options given so far: each may be given once (mpirun's -n 2 -n 3 is an error)
  std::size_t i = 1;
  for (; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!arg.starts_with('-') || arg == "-") {
      break; // the program; everything after it belongs to the program
    }
    // Split "--name=value" and "-nVALUE".
    std::string_view name = arg;
    std::optional<std::string_view> attached;
    if (arg.starts_with("--")) {
      if (const auto equals = arg.find('='); equals != std::string_view::npos) {
        name = arg.substr(0, equals);
        attached = arg.substr(equals + 1);
      }
    } else if (arg.size() > 2) {
      name = arg.substr(0, 2);
      attached = arg.substr(2);
    }
    const auto value = [&]() -> std::string_view {
      if (attached) {
        return *attached;
      }
      if (i + 1 >= args.size()) {
        fail(exit_usage, "option {} needs a value (see symmrun --help)", name);
      }
      return args[++i];
    };
    const auto no_value = [&] {
      if (attached) {
        fail(exit_usage, "option {} takes no value, but got '{}' (see symmrun --help)", name, *attached);
      }
    };

    const std::string_view canonical = name == "-n" ? "--npes" : name == "-h" ? "--help" : name;
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) {
      fail(exit_usage, "option {} is given more than once (as '{}' the last time); give it once (see symmrun --help)",
           canonical, arg);
    }
    seen.push_back(canonical);

    if (name == "-n" || name == "--npes") {
      opts.npes = parse_npes(value());
      npes_given = true;
    } else if (name == "--tag-output") {
      no_value();
      opts.tag_output = true;
    } else if (name == "--timeout") {
      opts.timeout_text = value();
      opts.timeout = parse_timeout(opts.timeout_text);
    } else if (name == "--mps") {
      no_value();
      opts.mps = true;
    } else if (name == "--gpus") {
      opts.gpus = parse_gpus(value());
    } else if (name == "-h" || name == "--help") {
      no_value();
      result.what = action::help;
      return result;
    } else if (name == "--version") {
      no_value();
      result.what = action::version;
      return result;
    } else {
      fail(exit_usage, "unknown option '{}' (see symmrun --help)", arg);
    }
  }
  if (!npes_given) {
    fail(exit_usage, "missing -n N, the number of PEs to start (see symmrun --help)");
  }
  if (i == args.size()) {
    fail(exit_usage, "no program given; usage: symmrun -n N [options] [--] program [args...]");
  }
  opts.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return result;
}

// ---------------------------------------------------------------------------------------------
// Programs

// errno-style reason why path cannot be executed, or 0 if it can.
int why_not_executable(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return errno;
  }
  if (S_ISDIR(info.st_mode)) {
    return EISDIR;
  }
  if (!S_ISREG(info.st_mode)) {
    return EACCES;
  }
  return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

std::string search_path() {
  if (const char* path = std::getenv("PATH")) {
    return path;
  }
  std::string path(::confstr(_CS_PATH, nullptr, 0), '\0'); // what execvp() would use
  ::confstr(_CS_PATH, path.data(), path.size());
  path.pop_back();
  return path;
}

// The path of an executable named like execvp() would look it up, or nothing.
std::optional<std::string> find_on_path(const std::string& name) {
  const std::string path = search_path();
  std::string_view dirs = path;
  while (true) {
    const std::size_t colon = std::min(dirs.find(':'), dirs.size());
    const std::string_view dir = dirs.substr(0, colon);
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    if (why_not_executable(candidate) == 0) {
      return candidate;
    }
    if (colon == dirs.size()) {
      return std::nullopt;
    }
    dirs.remove_prefix(colon + 1);
  }
}

// Checked before any PE starts, so that a typo fails once and clearly instead of N times.
std::string resolve_program(const std::string& name) {
  if (name.empty()) {
    fail(exit_not_found, "the program name is empty");
  }
  if (name.find('/') != std::string::npos) {
    if (const int why = why_not_executable(name); why != 0) {
      fail(exit_not_found, "cannot run program '{}': {}", name, std::strerror(why));
    }
    return name;
  }
  if (auto path = find_on_path(name)) {
    return *path;
  }
  fail(exit_not_found, "program '{}' not found: no executable file of that name in any directory on PATH", name);
}

// execve() wants char* const[]; the strings must outlive the returned pointers.
std::vector<char*> pointers_to(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& s : strings) {
    pointers.push_back(const_cast<char*>(s.c_str()));
  }
  pointers.push_back(nullptr);
  return pointers;
}

// A helper command with its output redirected; the PEs have their own, stricter start (see job).
struct helper_io {
  int stdin_fd = -1; // -1: inherit
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// The posix_spawn*() calls return an error number instead of setting errno.
void check_spawn(int error, std::string_view what, const std::string& path) {
  if (error != 0) {
    fail(exit_failure, "cannot start {}: {}: {}", path, what, std::strerror(error));
  }
}

// posix_spawn()'s file actions and attributes, released on every path.
class spawn_setup {
public:
  spawn_setup() {
    check_spawn(::posix_spawn_file_actions_init(&actions_), "posix_spawn_file_actions_init", "a helper");
    if (const int error = ::posix_spawnattr_init(&attributes_); error != 0) {
      ::posix_spawn_file_actions_destroy(&actions_);
      check_spawn(error, "posix_spawnattr_init", "a helper");
    }
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
  ~spawn_setup() {
    ::posix_spawnattr_destroy(&attributes_);
    ::posix_spawn_file_actions_destroy(&actions_);
  }
  posix_spawn_file_actions_t* actions() noexcept { return &actions_; }
  posix_spawnattr_t* attributes() noexcept { return &attributes_; }

private:
  posix_spawn_file_actions_t actions_{};
  posix_spawnattr_t attributes_{};
};

pid_t spawn_helper(const std::string& path, const std::vector<std::string>& args, char* const* envp,
                   const helper_io& io) {
  spawn_setup setup;
  const std::array<std::pair<int, int>, 3> redirects{
      {{io.stdin_fd, STDIN_FILENO}, {io.stdout_fd, STDOUT_FILENO}, {io.stderr_fd, STDERR_FILENO}}};
  for (const auto& [from, to] : redirects) {
    if (from >= 0) {
      check_spawn(::posix_spawn_file_actions_adddup2(setup.actions(), from, to), "dup2", path);
    }
  }
  // symmrun blocks the signals it handles and ignores SIGPIPE; a helper starts with neither.
  sigset_t none;
  sigset_t defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  check_spawn(::posix_spawnattr_setsigmask(setup.attributes(), &none), "sigmask", path);
  check_spawn(::posix_spawnattr_setsigdefault(setup.attributes(), &defaults), "sigdefault", path);
  check_spawn(::posix_spawnattr_setflags(setup.attributes(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF), "flags",
              path);

  const std::vector<char*> argv = pointers_to(args);
  pid_t pid = -1;
  check_spawn(::posix_spawn(&pid, path.c_str(), setup.actions(), setup.attributes(), argv.data(), envp), "posix_spawn",
              path);
  return pid;
}

// Waits for a helper at most `limit`; kills it after that. Returns its wait status if it ended by itself.
std::optional<int> wait_helper(pid_t pid, clock_type::duration limit) {
  const auto deadline = clock_type::now() + limit;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return status;
    }
    if (done == -1 && errno != EINTR) {
      fail_sys("waitpid for helper process {}", pid);
    }
    if (clock_type::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) == -1 && errno == EINTR) {
      }
      return std::nullopt;
    }
    std::this_thread::sleep_for(5ms);
  }
}

// ---------------------------------------------------------------------------------------------
// Random tokens

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  std::size_t filled = 0;
  while (filled < bytes) {
    const ssize_t n = ::getrandom(buffer.data() + filled, bytes - filled, 0);
    if (n == -1) {
      if (errno == EINTR) {
        continue;
      }
      fail_sys("getrandom");
    }
    filled += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (const unsigned char byte : buffer) {
    fmt::format_to(std::back_inserter(hex), "{:02x}", byte);
  }
  return hex;
}

// ---------------------------------------------------------------------------------------------
// Job directory

// The library binds "<job dir>/boot.sock"; a Unix socket path holds at most sizeof(sun_path) - 1 bytes.
constexpr std::size_t job_name_hex_bytes = 6;
constexpr std::size_t job_suffix_length =
    std::string_view("/job-").size() + 2 * job_name_hex_bytes + std::string_view("/boot.sock").size();
constexpr std::size_t max_socket_path = sizeof(sockaddr_un::sun_path) - 1;

struct base_directory {
  std::string path;
  unique_fd fd; // job directories are created relative to this, so the path cannot be swapped meanwhile
};

std::optional<base_directory> xdg_runtime_base() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg == nullptr || xdg[0] != '/' || std::strlen(xdg) + job_suffix_length > max_socket_path) {
    return std::nullopt;
  }
  unique_fd fd(::open(xdg, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || info.st_uid != ::geteuid() || ::access(xdg, W_OK | X_OK) != 0) {
    return std::nullopt; // set but unusable (common in containers): fall back quietly
  }
  return base_directory{xdg, std::move(fd)};
}

// /tmp/symm-<uid>, created 0700. /tmp is shared, so anything already there that we would not have
// created ourselves (a symlink, another user's directory) is refused rather than used.
base_directory private_tmp_base() {
  const uid_t uid = ::geteuid();
  std::string path = fmt::format("/tmp/symm-{}", uid);
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    fail_sys("cannot create {}", path);
  }
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP || errno == ENOTDIR) {
      fail(exit_failure, "{} is not a directory (a symlink or a file is in the way); remove it and run again", path);
    }
    fail_sys("cannot open {}", path);
  }
  struct stat info {};
  check_sys(::fstat(fd.get(), &info), "cannot stat {}", path);
  if (info.st_uid != uid) {
    fail(exit_failure, "{} belongs to uid {}, not to you (uid {}); remove it or set XDG_RUNTIME_DIR", path, info.st_uid,
         uid);
  }
  if ((info.st_mode & 07777) != 0700) {
    check_sys(::fchmod(fd.get(), 0700), "cannot make {} private (chmod 0700)", path);
  }
  return {std::move(path), std::move(fd)};
}

// The job's private directory: created 0700 on construction, removed with its contents on destruction.
class job_directory {
public:
  job_directory() {
    std::optional<base_directory> base = xdg_runtime_base();
    if (!base) {
      base = private_tmp_base();
    }
    for (int attempt = 0; attempt < 16; ++attempt) {
      const std::string name = fmt::format("job-{}", random_hex(job_name_hex_bytes));
      if (::mkdirat(base->fd.get(), name.c_str(), 0700) == 0) {
        path_ = fmt::format("{}/{}", base->path, name);
        // mkdir() applies the umask; the directory must be exactly 0700 whatever the umask is.
        check_sys(::fchmodat(base->fd.get(), name.c_str(), 0700, 0), "cannot chmod 0700 {}", path_);
        return;
      }
      if (errno != EEXIST) {
        fail_sys("cannot create a job directory in {}", base->path);
      }
    }
    fail(exit_failure, "cannot create a job directory with a unique name in {}", base->path);
  }
  job_directory(const job_directory&) = delete;
  job_directory& operator=(const job_directory&) = delete;
  ~job_directory() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
    if (error) {
      say("warning: cannot remove the job directory {}: {}", path_, error.message());
    }
  }

  const std::string& path() const noexcept { return path_; }

private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Environment

// symmrun's environment without the variables named in `dropped` and with `overrides` ("NAME=value")
// replacing any variable of the same name.
std::vector<std::string>
make_environment(const std::vector<std::string>& overrides, std::span<const std::string_view> dropped = {}) {
  const auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view name = name_of(*entry);
    const bool replaced = std::ranges::any_of(overrides, [&](const std::string& o) { return name_of(o) == name; }) ||
                          std::ranges::find(dropped, name) != dropped.end();
    if (!replaced) {
      env.emplace_back(*entry);
    }
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// ---------------------------------------------------------------------------------------------
// CUDA MPS

// The number of GPUs nvidia-smi lists, or nothing if it is missing or fails.
std::optional<int> count_gpus() {
  const std::optional<std::string> nvidia_smi = find_on_path("nvidia-smi");
  if (!nvidia_smi) {
    return std::nullopt;
  }
  pipe_ends output = make_pipe();
  const unique_fd null = open_dev_null(O_RDWR);
  const pid_t pid =
      spawn_helper(*nvidia_smi, {"nvidia-smi", "-L"}, environ, {null.get(), output.write.get(), null.get()});
  output.write.reset();

  // A wedged driver can make nvidia-smi hang; a warning is not worth waiting long for.
  const auto deadline = clock_type::now() + 10s;
  std::string text;
  while (clock_type::now() < deadline) {
    pollfd readable{output.read.get(), POLLIN, 0};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now());
    if (::poll(&readable, 1, static_cast<int>(std::max<long>(left.count(), 0))) <= 0) {
      continue;
    }
    std::array<char, 4096> buffer{};
    const ssize_t n = ::read(output.read.get(), buffer.data(), buffer.size());
    if (n <= 0) {
      break;
    }
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  const std::optional<int> status = wait_helper(pid, 1s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return std::nullopt;
  }
  int gpus = 0; // one "GPU i: name (UUID: ...)" line per GPU; MIG devices are indented below theirs
  for (std::string_view rest = text; !rest.empty();) {
    const std::size_t newline = std::min(rest.find('\n'), rest.size());
    gpus += rest.substr(0, newline).starts_with("GPU ") ? 1 : 0;
    rest.remove_prefix(std::min(newline + 1, rest.size()));
  }
  return gpus > 0 ? std::optional<int>(gpus) : std::nullopt;
}

// Several PEs on one GPU without MPS is correct but ~6000x slower per synchronisation; say so once.
void warn_if_pes_time_slice(const options& opts) {
  if (opts.npes < 2 || opts.mps) {
    return;
  }
  const std::optional<int> gpus = count_gpus();
  if (!gpus) {
    return;
  }
  int usable = *gpus;
  if (!opts.gpus.empty()) {
    usable = std::min(usable, static_cast<int>(std::set<int>(opts.gpus.begin(), opts.gpus.end()).size()));
  }
  if (opts.npes <= usable || symm::detail::mps_daemon_reachable()) {
    return;
  }
  say("warning: {} PEs share {} GPU{} and no CUDA MPS daemon is running: kernels of PEs sharing a GPU "
      "time-slice without MPS (~4.5 ms per round trip instead of ~0.7 µs); pass --mps to start one for this job",
      opts.npes, usable, usable == 1 ? "" : "s");
}

// Checks `done` every 10 ms until it holds or `limit` has passed; returns whether it held.
template <class Condition>
bool poll_until(Condition done, clock_type::duration limit) {
  const auto deadline = clock_type::now() + limit;
  while (!done()) {
    if (clock_type::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Whether a process that is not symmrun's child has ended; a zombie its parent has not yet reaped has.
bool process_ended(pid_t pid) {
  if (::kill(pid, 0) == -1 && errno == ESRCH) {
    return true;
  }
  const unique_fd fd(::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC));
  std::array<char, 512> text{};
  const ssize_t n = fd ? ::read(fd.get(), text.data(), text.size()) : -1;
  if (n <= 0) {
    return true;
  }
  // "pid (name) state ...": the name may contain anything, so look after its last ')'.
  const std::string_view stat(text.data(), static_cast<std::size_t>(n));
  const std::size_t name_end = stat.rfind(')');
  return name_end != std::string_view::npos && name_end + 2 < stat.size() &&
         (stat[name_end + 2] == 'Z' || stat[name_end + 2] == 'X');
}

// A private MPS control daemon whose pipe and log directories live in the job directory, so it serves
// this job only and its sockets disappear with the job. Stopped ("quit") on destruction.
class mps_daemon {
public:
  explicit mps_daemon(const job_directory& dir)
      : pipe_directory_(dir.path() + "/mps"), log_directory_(dir.path() + "/mps-log"),
        output_path_(dir.path() + "/mps-control.out") {
    const std::optional<std::string> control = find_on_path("nvidia-cuda-mps-control");
    if (!control) {
      fail(exit_failure, "--mps: nvidia-cuda-mps-control not found on PATH (it comes with the NVIDIA driver)");
    }
    control_ = *control;
    check_sys(::mkdir(pipe_directory_.c_str(), 0700), "cannot create {}", pipe_directory_);
    check_sys(::mkdir(log_directory_.c_str(), 0700), "cannot create {}", log_directory_);
    env_ = make_environment(variables());

    // -d forks the daemon and returns; the daemon keeps its stdout and stderr, so they go to a file
    // rather than to a pipe whose end we would then never see.
    const unique_fd null = open_dev_null(O_RDONLY);
    const unique_fd output(check_sys(::open(output_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                                     "cannot create {}", output_path_));
    const pid_t pid = spawn_helper(control_, {"nvidia-cuda-mps-control", "-d"}, pointers_to(env_).data(),
                                   {null.get(), output.get(), output.get()});
    const std::optional<int> status = wait_helper(pid, 30s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      fail(exit_failure, "--mps: '{} -d' {}{}", control_,
           status ? describe_status(*status) : "did not return within 30 s", diagnostics());
    }
    // The daemon creates its control socket after -d returns; a PE that looks earlier would run without MPS.
    if (!wait_for_control_socket(10s)) {
      quit();
      fail(exit_failure, "--mps: the MPS daemon did not create {}/control within 10 s{}", pipe_directory_,
           diagnostics());
    }
  }
  mps_daemon(const mps_daemon&) = delete;
  mps_daemon& operator=(const mps_daemon&) = delete;
  ~mps_daemon() { quit(); }

  // What the PEs need to find this daemon.
  std::vector<std::string> variables() const {
    return {"CUDA_MPS_PIPE_DIRECTORY=" + pipe_directory_, "CUDA_MPS_LOG_DIRECTORY=" + log_directory_};
  }

private:
  bool wait_for_control_socket(clock_type::duration limit) const {
    const std::string socket = pipe_directory_ + "/control";
    return poll_until(
        [&] {
          struct stat info {};
          return ::stat(socket.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
        },
        limit);
  }

  // The daemon writes its pid next to its sockets.
  std::optional<pid_t> daemon_pid() const {
    const std::string file = pipe_directory_ + "/nvidia-cuda-mps-control.pid";
    const unique_fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    std::array<char, 32> text{};
    const ssize_t n = fd ? ::read(fd.get(), text.data(), text.size()) : -1;
    pid_t pid = 0;
    if (n <= 0 || std::from_chars(text.data(), text.data() + n, pid).ec != std::errc{} || pid <= 0) {
      return std::nullopt;
    }
    return pid;
  }

  void quit() noexcept {
    if (quit_sent_) {
      return;
    }
    quit_sent_ = true;
    try {
      // Read before "quit": the daemon may remove the file as it exits. (Its sockets stay behind.)
      const std::optional<pid_t> daemon = daemon_pid();
      pipe_ends input = make_pipe();
      write_all(input.write.get(), "quit\n"); // fits in the pipe buffer
      input.write.reset();
      const unique_fd null = open_dev_null(O_WRONLY);
      const pid_t pid = spawn_helper(
          control_, {"nvidia-cuda-mps-control"}, pointers_to(env_).data(), {input.read.get(), null.get(), null.get()});
      const std::optional<int> status = wait_helper(pid, 10s);
      if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        say("warning: stopping the MPS daemon ('echo quit | {}') {}", control_,
            status ? describe_status(*status) : "did not return within 10 s");
      } else if (daemon && !poll_until([&] { return process_ended(*daemon); }, 5s)) {
        // Its directories are removed next; a daemon still using them would fail in confusing ways.
        say("warning: the MPS daemon of this job (pid {}) is still running 5 s after 'quit'", *daemon);
      }
    } catch (const std::exception& error) {
      say("warning: cannot stop the MPS daemon: {}", error.what());
    }
  }

  // The control program's output and the daemon's log, to explain a failed start.
  std::string diagnostics() const {
    std::string text;
    for (const std::string& file : {output_path_, log_directory_ + "/control.log"}) {
      unique_fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
      std::array<char, 2048> buffer{};
      const ssize_t n = fd ? ::read(fd.get(), buffer.data(), buffer.size()) : 0;
      if (n > 0) {
        text += fmt::format("\n--- {} ---\n{}", file, std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      }
    }
    return text;
  }

  std::string pipe_directory_;
  std::string log_directory_;
  std::string output_path_;
  std::string control_;
  std::vector<std::string> env_;
  bool quit_sent_ = false;
};

// What /proc says a process is doing, in words, for messages about PEs that did not end.
std::string process_state(pid_t pid) {
  switch (const char state = symm::detail::process_state_code(pid)) {
    case '\0': return "gone";
    case 'T': return "stopped (SIGSTOP or ^Z), not hung";
    case 't': return "stopped by a debugger, not hung";
    case 'R': return "running";
    case 'S': return "asleep (waiting for something)";
    case 'D': return "in an uninterruptible wait (paging, I/O)";
    case 'Z': return "exited, not yet reaped";
    default: return fmt::format("in state '{}'", state);
  }
}

// ---------------------------------------------------------------------------------------------
// Signals

constexpr std::array forwarded_signals{SIGINT, SIGTERM, SIGHUP};

// Blocks SIGCHLD and the forwarded signals for the rest of symmrun's life and delivers them through a
// signalfd. Children restore `original_mask()` before exec.
class signal_channel {
public:
  signal_channel() {
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    for (const int signal : forwarded_signals) {
      // A SIGHUP ignored from the start (nohup) stays ignored, by symmrun and the PEs: a hangup ends nothing.
      // SIGINT and SIGTERM are handled even when ignored (a shell's `&` ignores SIGINT): they end the job.
      struct sigaction current {};
      check_sys(::sigaction(signal, nullptr, &current), "sigaction");
      if (signal == SIGHUP && current.sa_handler == SIG_IGN) {
        continue;
      }
      sigaddset(&handled, signal);
      forwarded_.push_back(signal);
    }
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap the PEs unseen (and waitpid() fail).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    check_sys(::sigaction(SIGCHLD, &default_action, nullptr), "sigaction(SIGCHLD)");
    check_sys(::sigprocmask(SIG_BLOCK, &handled, &original_mask_), "sigprocmask");
    fd_ = unique_fd(check_sys(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK), "signalfd"));
  }

  int fd() const noexcept { return fd_.get(); }
  const sigset_t& original_mask() const noexcept { return original_mask_; }
  // The signals symmrun forwards to the PEs; each PE gets them with their default action (mpirun does the same), so
  // that one ignored by inheritance (SIGINT under a shell's `&`) still ends the PEs it is forwarded to.
  std::span<const int> forwarded() const noexcept { return forwarded_; }

  // The next pending signal, if any.
  std::optional<int> next() {
    signalfd_siginfo info{};
    const ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == sizeof info) {
      return static_cast<int>(info.ssi_signo);
    }
    if (n == -1 && errno != EAGAIN && errno != EINTR) {
      fail_sys("cannot read from the signalfd");
    }
    return std::nullopt;
  }

private:
  sigset_t original_mask_{};
  unique_fd fd_;
  std::vector<int> forwarded_;
};

// Ends symmrun the way the signal would have, after cleanup, so a calling shell sees an interrupted job.
[[noreturn]] void die_by_signal(int signal) {
  std::signal(signal, SIG_DFL);
  ::raise(signal); // pending: it is still blocked
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::_exit(128 + signal);
}

// ---------------------------------------------------------------------------------------------
// Output relay for --tag-output

// Forwards one PE stream to symmrun's stdout or stderr a whole line at a time, each line prefixed
// "[pe K] " and written with the lines around it in one write(), so lines of different PEs never mix.
class line_relay {
public:
  line_relay(unique_fd source, int sink, int pe)
      : source_(std::move(source)), sink_(sink), prefix_(fmt::format("[pe {}] ", pe)) {
    const int flags = check_sys(::fcntl(source_.get(), F_GETFL), "fcntl");
    check_sys(::fcntl(source_.get(), F_SETFL, flags | O_NONBLOCK), "cannot make a PE output pipe non-blocking");
  }

  int fd() const noexcept { return source_.get(); }
  bool is_open() const noexcept { return static_cast<bool>(source_); }

  // Passes on what can be read now; returns false when nothing could (the pipe is empty or closed).
  bool pump() {
    std::array<char, 64 * 1024> buffer; // left uninitialised: read() fills it
    const ssize_t n = ::read(source_.get(), buffer.data(), buffer.size());
    if (n > 0) {
      forward(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      return true;
    }
    if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
      return false;
    }
    finish(); // end of file or a broken pipe
    return false;
  }

  // Writes an unfinished last line with a newline and stops reading.
  void finish() {
    if (!partial_.empty()) {
      write_all(sink_, fmt::format("{}{}\n", prefix_, partial_));
      partial_.clear();
    }
    source_.reset();
  }

private:
  void forward(std::string_view data) {
    std::string out;
    std::size_t newline;
    while ((newline = data.find('\n')) != std::string_view::npos) {
      out += prefix_;
      out += partial_;
      out += data.substr(0, newline + 1);
      partial_.clear();
      data.remove_prefix(newline + 1);
    }
    partial_ += data;
    if (partial_.size() >= max_line_bytes) { // bounded memory beats an intact endless line
      out += fmt::format("{}{}\n", prefix_, partial_);
      partial_.clear();
    }
    write_all(sink_, out); // a closed stdout (EPIPE) only drops the text; the PEs keep running
  }

  unique_fd source_;
  int sink_;
  std::string prefix_;
  std::string partial_;
};

// ---------------------------------------------------------------------------------------------
// The job

struct job_result {
  int exit_code = 0;
  int die_by_signal = 0; // after cleanup, end symmrun by this signal (one it received)
};

// What a PE's child process reports through its exec pipe when it cannot start.
enum class child_step : int { process_group, death_signal, redirect, exec };
struct child_failure {
  child_step step;
  int error;
};

// Everything a PE's child needs between fork() and exec(), prepared beforehand: the child only makes
// system calls (no allocation), as is safe after fork().
struct pe_launch {
  const char* path;
  char* const* argv;
  char* const* envp;
  pid_t process_group; // 0: start a new one (PE 0)
  pid_t parent;
  int stdin_fd;  // -1: inherit
  int stdout_fd; // -1: inherit
  int stderr_fd; // -1: inherit
  int report_fd; // write end of the exec pipe
  const sigset_t* signal_mask;
  std::span<const int> default_signals; // given their default action in the PE
  const struct sigaction* sigpipe_action;
  const rlimit* open_files;
};

[[noreturn]] void exec_pe(const pe_launch& launch) noexcept {
  const auto report = [&](child_step step) {
    const child_failure failure{step, errno};
    [[maybe_unused]] const ssize_t n = ::write(launch.report_fd, &failure, sizeof failure);
    ::_exit(exit_not_found);
  };
  if (::setpgid(0, launch.process_group) != 0) {
    report(child_step::process_group);
  }
  // If symmrun is killed (even by SIGKILL), its PEs must not live on as orphans.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    report(child_step::death_signal);
  }
  if (::getppid() != launch.parent) { // symmrun died before prctl() took effect
    ::_exit(exit_failure);
  }
  const std::array<std::pair<int, int>, 3> redirects{
      {{launch.stdin_fd, STDIN_FILENO}, {launch.stdout_fd, STDOUT_FILENO}, {launch.stderr_fd, STDERR_FILENO}}};
  for (const auto& [from, to] : redirects) {
    if (from >= 0 && ::dup2(from, to) == -1) {
      report(child_step::redirect);
    }
  }
  // Undo what symmrun changed for itself; everything else (an ignored SIGHUP under nohup) is inherited.
  // These cannot fail with the valid arguments prepared by the parent.
  ::sigaction(SIGPIPE, launch.sigpipe_action, nullptr);
  for (const int signal : launch.default_signals) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(signal, &default_action, nullptr);
  }
  ::setrlimit(RLIMIT_NOFILE, launch.open_files);
  ::sigprocmask(SIG_SETMASK, launch.signal_mask, nullptr);
  ::execve(launch.path, launch.argv, launch.envp);
  report(child_step::exec);
  ::_exit(exit_not_found); // not reached
}

class job {
public:
  job(const options& opts, signal_channel& signals, const struct sigaction& sigpipe_action, std::string job_dir)
      : opts_(opts), signals_(signals), sigpipe_action_(sigpipe_action), job_dir_(std::move(job_dir)) {
    check_sys(::getrlimit(RLIMIT_NOFILE, &open_files_), "getrlimit");
    if (opts_.tag_output) {
      raise_open_file_limit();
    }
  }
  job(const job&) = delete;
  job& operator=(const job&) = delete;

  // Whatever path leads here (an exception while starting, a bug), no PE outlives symmrun.
  ~job() {
    if (running_ == 0) {
      return;
    }
    signal_job(SIGKILL);
    for (const pe_process& pe : pes_) {
      if (pe.running) {
        while (::waitpid(pe.pid, nullptr, 0) == -1 && errno == EINTR) {
        }
      }
    }
  }

  // Starts PE 0 .. N-1 with symmrun's environment, `job_variables` and each PE's own variables.
  void start(const std::string& program_path, const std::vector<std::string>& job_variables) {
    // Set per PE below; without --gpus, a SYMM_DEVICE the user set (the last name) applies to every PE.
    static constexpr std::array<std::string_view, 5> per_pe_names{
        "SYMM_PE", "SYMM_N_PES", "SYMM_LOCAL_PE", "SYMM_LOCAL_N_PES", "SYMM_DEVICE"};
    const std::size_t replaced = opts_.gpus.empty() ? per_pe_names.size() - 1 : per_pe_names.size();
    const std::vector<std::string> env_common =
        make_environment(job_variables, std::span(per_pe_names).first(replaced));
    const std::vector<char*> argv = pointers_to(opts_.command);
    const unique_fd null = open_dev_null(O_RDONLY);
    // Only PE 0 reads symmrun's stdin, and not from a terminal: the PEs are in a background process
    // group, where a read from the terminal would stop them.
    const int pe0_stdin = ::isatty(STDIN_FILENO) ? null.get() : -1;
    pes_.reserve(static_cast<std::size_t>(opts_.npes));
    for (int pe = 0; pe < opts_.npes; ++pe) {
      std::vector<std::string> overrides{
          fmt::format("SYMM_PE={}", pe), fmt::format("SYMM_N_PES={}", opts_.npes), fmt::format("SYMM_LOCAL_PE={}", pe),
          fmt::format("SYMM_LOCAL_N_PES={}", opts_.npes)};
      if (!opts_.gpus.empty()) {
        overrides.push_back(
            fmt::format("SYMM_DEVICE={}", opts_.gpus[static_cast<std::size_t>(pe) % opts_.gpus.size()]));
      }
      std::vector<std::string> env = env_common;
      env.insert(env.end(), overrides.begin(), overrides.end());
      const std::vector<char*> envp = pointers_to(env);

      pipe_ends report = make_pipe();
      std::optional<pipe_ends> out;
      std::optional<pipe_ends> err;
      if (opts_.tag_output) {
        out = make_pipe();
        err = make_pipe();
      }
      const pe_launch launch{
          program_path.c_str(),
          argv.data(),
          envp.data(),
          pe == 0 ? 0 : process_group_,
          ::getpid(),
          pe == 0 ? pe0_stdin : null.get(),
          out ? out->write.get() : -1,
          err ? err->write.get() : -1,
          report.write.get(),
          &signals_.original_mask(),
          signals_.forwarded(),
          &sigpipe_action_,
          &open_files_};
      const pid_t pid = ::fork();
      if (pid == -1) {
        fail_sys("cannot start PE {} of {} (fork)", pe, opts_.npes);
      }
      if (pid == 0) {
        exec_pe(launch);
      }
      if (pe == 0) {
        process_group_ = pid;
      }
      pes_.push_back({pid, true});
      pe_index_.emplace(pid, pe);
      ++running_;
      if (out) {
        relays_.emplace_back(std::move(out->read), STDOUT_FILENO, pe);
        relays_.emplace_back(std::move(err->read), STDERR_FILENO, pe);
      }
      report.write.reset();
      // Waiting for exec() per PE costs little and stops at the first PE that cannot start.
      wait_for_exec(report.read.get(), pe, pid);
    }
  }

  // Runs the job to its end; see job_result.
  job_result supervise() {
    if (opts_.timeout) {
      timeout_deadline_ = clock_type::now() + std::chrono::ceil<clock_type::duration>(*opts_.timeout);
    }
    std::vector<pollfd> fds;
    std::vector<line_relay*> fd_relays;
    while (running_ > 0) {
      fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
      fd_relays.assign(1, nullptr);
      for (line_relay& relay : relays_) {
        if (relay.is_open()) {
          fds.push_back({relay.fd(), POLLIN, 0});
          fd_relays.push_back(&relay);
        }
      }
      if (::poll(fds.data(), fds.size(), poll_timeout_ms()) == -1 && errno != EINTR) {
        fail_sys("poll");
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) {
          fd_relays[i]->pump();
        }
      }
      if (fds[0].revents != 0) {
        while (const std::optional<int> signal = signals_.next()) {
          if (*signal == SIGCHLD) {
            reap();
          } else {
            on_signal(*signal);
          }
        }
      }
      on_deadlines();
    }
    // Processes a PE left behind in the job's process group end with the job.
    if (process_group_ > 0 && ::killpg(process_group_, SIGKILL) != 0 && errno != ESRCH && errno != EPERM) {
      say("warning: cannot signal the job's process group {}: {}", process_group_, std::strerror(errno));
    }
    // Everything the PEs wrote is in the pipes now; take what is there, but do not wait for others
    // (a grandchild) that may still hold a pipe open.
    for (line_relay& relay : relays_) {
      while (relay.is_open() && relay.pump()) {
      }
      if (relay.is_open()) {
        relay.finish();
      }
    }
    return result();
  }

  // A terminating signal received before the PEs start: nothing to forward, just stop.
  static std::optional<int> pending_termination(signal_channel& signals) {
    while (const std::optional<int> signal = signals.next()) {
      if (*signal != SIGCHLD) {
        return signal;
      }
    }
    return std::nullopt;
  }

private:
  struct pe_process {
    pid_t pid;
    bool running; // not yet reaped
  };

  void raise_open_file_limit() {
    // --tag-output keeps two pipes per PE open in symmrun, plus a few of its own.
    const rlim_t needed = 2 * static_cast<rlim_t>(opts_.npes) + 64;
    if (open_files_.rlim_cur >= needed) {
      return;
    }
    if (open_files_.rlim_max != RLIM_INFINITY && open_files_.rlim_max < needed) {
      fail(exit_failure, "--tag-output with {} PEs needs {} open files, but the limit is {} (see ulimit -n)",
           opts_.npes, needed, open_files_.rlim_max);
    }
    const rlimit raised{needed, open_files_.rlim_max};
    check_sys(::setrlimit(RLIMIT_NOFILE, &raised), "cannot raise the open file limit to {}", needed);
  }

  void wait_for_exec(int report_fd, int pe, pid_t pid) {
    child_failure failure{};
    ssize_t n;
    while ((n = ::read(report_fd, &failure, sizeof failure)) == -1 && errno == EINTR) {
    }
    if (n == 0) {
      return; // closed by a successful exec()
    }
    if (n != sizeof failure) {
      fail(exit_failure, "cannot learn whether PE {} (pid {}) started", pe, pid);
    }
    const char* reason = std::strerror(failure.error);
    switch (failure.step) {
      case child_step::process_group:
        fail(exit_failure, "cannot put PE {} into the job's process group: {}", pe, reason);
      case child_step::death_signal: fail(exit_failure, "cannot set PE {}'s parent-death signal: {}", pe, reason);
      case child_step::redirect: fail(exit_failure, "cannot redirect PE {}'s standard streams: {}", pe, reason);
      case child_step::exec:
        fail(failure.error == ENOENT ? exit_not_found : exit_cannot_execute, "cannot execute '{}' for PE {}: {}",
             opts_.command.front(), pe, reason);
    }
    fail(exit_failure, "PE {} failed to start", pe);
  }

  void reap() {
    while (true) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid == 0 || (pid == -1 && errno == ECHILD)) {
        return;
      }
      if (pid == -1) {
        if (errno == EINTR) {
          continue;
        }
        fail_sys("waitpid");
      }
      if (const auto found = pe_index_.find(pid); found != pe_index_.end()) {
        on_pe_exit(found->second, status);
      }
    }
  }

  void on_pe_exit(int pe, int status) {
    pes_[static_cast<std::size_t>(pe)].running = false;
    --running_;
    if (!stopping_ && on_global_exit()) {
      return;
    }
    const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (!failed && !stopping_ && running_ > 0 && !first_early_exit_) {
      first_early_exit_ = pe; // may explain a failure of the others (a PE that left without finalizing symm)
    }
    if (!failed || stopping_) {
      return; // after the first failure or a timeout, the others' ends are our doing
    }
    say("PE {} (pid {}) {}", pe, pes_[static_cast<std::size_t>(pe)].pid, describe_status(status));
    if (first_early_exit_) {
      // A PE that exits while the others wait for it in a barrier, a collective or a wait makes them fail; the
      // line above then names a consequence, this one the PE that may have caused it.
      say("note: PE {} (pid {}) had already exited with status 0 while the other PEs were still running",
          *first_early_exit_, pes_[static_cast<std::size_t>(*first_early_exit_)].pid);
    }
    first_failure_ = exit_code_of(status);
    stop();
  }

  // A PE that called symm::global_exit(code) left "PE CODE" in the job directory before it exited (symm/world.hpp):
  // the job ends with that code, 0 included, whichever PE's exit is seen first.
  bool on_global_exit() {
    std::FILE* file = std::fopen((job_dir_ + "/global_exit").c_str(), "r");
    if (file == nullptr) {
      return false;
    }
    int pe = -1;
    int code = 0;
    const bool read = std::fscanf(file, "%d %d", &pe, &code) == 2;
    std::fclose(file);
    if (!read) {
      return false;
    }
    say("PE {} called symm::global_exit({}); stopping the other PEs", pe, code);
    first_failure_ = code & 0xff; // what the PE's own exit status carries
    stop();
    return true;
  }

  void on_signal(int signal) {
    if (received_signal_ == 0) {
      received_signal_ = signal;
      say("received {}; forwarding it to the PEs", signal_name(signal));
      signal_job(signal);
    } else {
      say("received {} again; killing the PEs", signal_name(signal));
      signal_job(SIGKILL);
    }
  }

  void on_deadlines() {
    const auto now = clock_type::now();
    if (timeout_deadline_ && now >= *timeout_deadline_) {
      timeout_deadline_.reset();
      if (!stopping_) {
        say("timeout: the job ran longer than --timeout {} s; terminating its {} running PE{}", opts_.timeout_text,
            running_, running_ == 1 ? "" : "s");
        // Paused is not hung: say which PEs were stopped (SIGSTOP, ^Z, a debugger) and which were running or waiting.
        for (std::size_t pe = 0; pe < pes_.size(); ++pe) {
          if (pes_[pe].running) {
            say("timeout: PE {} (pid {}) was {}", pe, pes_[pe].pid, process_state(pes_[pe].pid));
          }
        }
        timed_out_ = true;
        stop();
      }
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
      kill_deadline_.reset();
      signal_job(SIGKILL);
    }
  }

  // SIGTERM now, SIGKILL after kill_grace to whatever is left.
  void stop() {
    stopping_ = true;
    signal_job(SIGTERM);
    kill_deadline_ = clock_type::now() + kill_grace;
  }

  void signal_job(int signal) noexcept {
    if (running_ == 0 || process_group_ <= 0) { // killpg(0) would signal symmrun's own group
      return;
    }
    if (::killpg(process_group_, signal) != 0 && errno != ESRCH) {
      say("warning: cannot send {} to the job's process group {}: {}", signal_name(signal), process_group_,
          std::strerror(errno));
    }
    // A PE that moved itself into another process group is still part of the job.
    for (const pe_process& pe : pes_) {
      if (pe.running && ::getpgid(pe.pid) != process_group_) {
        ::kill(pe.pid, signal);
      }
    }
  }

  int poll_timeout_ms() const {
    std::optional<clock_type::time_point> next;
    for (const auto& deadline : {timeout_deadline_, kill_deadline_}) {
      if (deadline && (!next || *deadline < *next)) {
        next = deadline;
      }
    }
    if (!next) {
      return -1;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - clock_type::now()).count();
    return static_cast<int>(std::clamp<decltype(left)>(left, 0, 60'000));
  }

  job_result result() const {
    if (received_signal_ != 0) {
      return {128 + received_signal_, received_signal_};
    }
    if (timed_out_) {
      return {exit_timeout, 0};
    }
    return {first_failure_.value_or(0), 0};
  }

  const options& opts_;
  signal_channel& signals_;
  struct sigaction sigpipe_action_;
  std::string job_dir_;
  rlimit open_files_{};

  std::vector<pe_process> pes_;
  std::unordered_map<pid_t, int> pe_index_;
  std::vector<line_relay> relays_;
  pid_t process_group_ = 0;
  int running_ = 0;

  std::optional<clock_type::time_point> timeout_deadline_;
  std::optional<clock_type::time_point> kill_deadline_;
  bool stopping_ = false;
  bool timed_out_ = false;
  int received_signal_ = 0;
  std::optional<int> first_failure_;
  std::optional<int> first_early_exit_; // the first PE that exited with status 0 before the others
};

// ---------------------------------------------------------------------------------------------

job_result run(int argc, char** argv) {
  ensure_standard_fds();
  const command_line parsed = parse_command_line({argv, static_cast<std::size_t>(argc)});
  if (parsed.what == action::help) {
    write_all(STDOUT_FILENO, usage_text);
    return {};
  }
  if (parsed.what == action::version) {
    write_all(STDOUT_FILENO,
              fmt::format("symmrun (symm) {}.{}.{}\n", symm::version_major, symm::version_minor, symm::version_patch));
    return {};
  }
  const options& opts = parsed.opts;
  const std::string program_path = resolve_program(opts.command.front());
  warn_if_pes_time_slice(opts);

  // From here on there is something to clean up, so signals must reach the event loop, not kill us.
  signal_channel signals;
  struct sigaction ignore_pipe {};
  struct sigaction original_sigpipe {};
  ignore_pipe.sa_handler = SIG_IGN;
  check_sys(::sigaction(SIGPIPE, &ignore_pipe, &original_sigpipe), "sigaction");

  const job_directory dir;
  std::vector<std::string> variables{"SYMM_JOB_DIR=" + dir.path(), "SYMM_JOB_TOKEN=" + random_hex(16)};
  std::optional<mps_daemon> mps;
  if (opts.mps) {
    mps.emplace(dir);
    std::ranges::copy(mps->variables(), std::back_inserter(variables));
  }
  if (const std::optional<int> signal = job::pending_termination(signals)) {
    say("received {} before the PEs started; stopping", signal_name(*signal));
    return {128 + *signal, *signal};
  }
  job pes(opts, signals, original_sigpipe, dir.path());
  pes.start(program_path, variables);
  return pes.supervise();
}

} // namespace

int main(int argc, char** argv) {
  job_result result;
  try {
    result = run(argc, argv);
  } catch (const fatal_error& error) {
    say("{}", error.what());
    result.exit_code = error.exit_code();
  } catch (const std::exception& error) {
    say("internal error: {}", error.what());
    result.exit_code = exit_failure;
  }
  if (result.die_by_signal != 0) {
    die_by_signal(result.die_by_signal);
  }
  return result.exit_code;
}
