// A consumer of an installed symm: built by tests/packaging/run.py with Meson (pkg-config), Meson (subproject) and
// CMake (find_package), then run under the installed symmrun with 2 PEs. It uses the API, not one header: a
// collective allocation, a put, a barrier and an allreduce, on the host backend.
#include <symm/symm.hpp>

#include <cstdio>
#include <numeric>

int main() {
  symm::world world({.backend = symm::backend::host});
  symm::array<int> box(world, 4), sum(world, 1), mine(world, 1);
  const int next = (world.my_pe() + 1) % world.n_pes();
  std::iota(mine.local().begin(), mine.local().end(), world.my_pe() + 1);
  symm::remote(box, next)[0] = world.my_pe() + 10; // a put into the next PE
  { symm::barrier_scope sync(world); }
  symm::allreduce(world.team(), sum, mine, symm::plus{});
  const int from = (world.my_pe() + world.n_pes() - 1) % world.n_pes();
  const int expected_sum = world.n_pes() * (world.n_pes() + 1) / 2;
  const bool ok = box.local()[0] == from + 10 && sum.local()[0] == expected_sum;
  std::printf("hello from a consumer: PE %d of %d, symm %d.%d.%d, got %d from PE %d, allreduce %d: %s\n", world.my_pe(),
              world.n_pes(), symm::version_major, symm::version_minor, symm::version_patch, box.local()[0], from,
              sum.local()[0], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
