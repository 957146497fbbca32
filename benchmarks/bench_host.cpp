// bench_host: what host-side calls cost on the host backend (no GPU needed): PE 0 puts `bytes` into PE 1's array,
// up to `iters` times (fewer for large sizes: at most 256 MiB per repetition), as a blocking put and as put_nbi whose
// futures are waited one by one (wait_each), kept and completed by one quiet() (keep_then_quiet) or dropped
// (drop_then_quiet). Microseconds per put: the median and spread of --reps timed repetitions, after one untimed one.
// PE 1 only waits at the barriers around each point.
//
//   bench_host [--reps R] [--iters N] [--sizes 8,4096,...] [--round R]
//
// CSV rows as bench_symm's (impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,
// note), so report.py and ab_compare.py read them; grid and threads are 0 and 1 (one host thread).
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct options {
  int reps = 7;
  long long iters = 20000;
  std::vector<std::size_t> sizes{8, 64, 512, 4096, 32768, 262144, 2097152};
  int round = 1;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--reps") o.reps = std::max(1, std::atoi(value));
    else if (flag == "--iters") o.iters = std::max(1LL, std::atoll(value));
    else if (flag == "--round") o.round = std::atoi(value);
    else if (flag == "--sizes") {
      o.sizes.clear();
      for (std::string_view rest = value; !rest.empty();) {
        const auto comma = rest.find(',');
        o.sizes.push_back(std::strtoull(std::string(rest.substr(0, comma)).c_str(), nullptr, 10));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    } else {
      fmt::print(stderr, "usage: bench_host [--reps R] [--iters N] [--sizes 8,4096,...] [--round R]\n");
      std::exit(64);
    }
  }
  return o;
}

//! Puts per repetition at `bytes`: --iters, but at most 256 MiB moved (and at least 20 puts).
long long iters_for(const options& o, std::size_t bytes) {
  return std::min(o.iters,
                  std::max(20LL, static_cast<long long>((std::size_t{256} << 20) / std::max<std::size_t>(bytes, 1))));
}

//! Runs `body` (`iters` puts) reps + 1 times on PE 0, the first untimed; returns the microseconds per put of each.
template <class Body>
std::vector<double> time_puts(symm::world& world, const options& o, long long iters, Body&& body) {
  std::vector<double> per_put;
  for (int rep = 0; rep <= o.reps; ++rep) {
    world.barrier();
    if (world.my_pe() == 0) {
      const auto start = std::chrono::steady_clock::now();
      body();
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      if (rep > 0) per_put.push_back(took.count() / static_cast<double>(iters));
    }
  }
  world.barrier();
  return per_put;
}

void emit(const options& o, long long iters, const char* benchmark, const char* scope, std::size_t bytes,
          std::vector<double> us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  const double median = us[us.size() / 2], low = us.front(), p90 = us[std::min(us.size() - 1, us.size() * 9 / 10)];
  fmt::print("symm,{},{},2,{},{},{:.4f},{:.4f},{:.4f},{:.3f},{},0,1,host backend\n", benchmark, scope, bytes, iters,
             median, low, p90, static_cast<double>(bytes) / (median * 1e3), o.round);
}

} // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  fmt::print("impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note\n");
  std::fflush(stdout);
  symm::launch(2,
               [&](symm::world& world) {
                 const std::size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
                 symm::array<std::byte> dst(world, largest);
                 std::vector<std::byte> src(largest, std::byte{1});
                 std::vector<symm::future<>> kept;
                 kept.reserve(static_cast<std::size_t>(o.iters));
                 const bool emits = world.my_pe() == 0;
                 for (const std::size_t bytes : o.sizes) {
                   const auto from = std::span<const std::byte>(src.data(), bytes);
                   const auto to = symm::remote(dst, 1).first(bytes);
                   const long long iters = iters_for(o, bytes);
                   auto blocking = time_puts(world, o, iters, [&] {
                     for (long long i = 0; i < iters; ++i)
                       symm::put(to, from);
                   });
                   auto wait_each = time_puts(world, o, iters, [&] {
                     for (long long i = 0; i < iters; ++i)
                       symm::put_nbi(to, from).wait();
                   });
                   auto keep = time_puts(world, o, iters, [&] {
                     for (long long i = 0; i < iters; ++i)
                       kept.push_back(symm::put_nbi(to, from));
                     symm::quiet();
                     kept.clear();
                   });
                   auto drop = time_puts(world, o, iters, [&] {
                     for (long long i = 0; i < iters; ++i)
                       (void) symm::put_nbi(to, from);
                     symm::quiet();
                   });
                   if (emits) {
                     emit(o, iters, "host_put", "blocking", bytes, std::move(blocking));
                     emit(o, iters, "host_put_nbi", "wait_each", bytes, std::move(wait_each));
                     emit(o, iters, "host_put_nbi", "keep_then_quiet", bytes, std::move(keep));
                     emit(o, iters, "host_put_nbi", "drop_then_quiet", bytes, std::move(drop));
                     std::fflush(stdout);
                   }
                 }
               },
               {.world = {.backend = symm::backend::host}});
  return 0;
}
