// The put/get example on the host backend: PE 0 puts 1024 floats into PE 1, PE 1 prints dst[0]; then PE 1 gets
// PE 0's source back. Run it with `symmrun -n 2 ./put_get`.
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <numeric>

int main() {
  symm::world world({.backend = symm::backend::host});
  symm::array<float> src(world, 1024), dst(world, 1024); // collective: the same offset on every PE
  if (world.my_pe() == 0) {
    std::iota(src.local().begin(), src.local().end(), 0.0f);
    symm::remote(dst, 1) = src.local(); // put: PE 0's src into PE 1's dst
  }
  { symm::barrier_scope sync(world); } // quiet + barrier: the put is visible on PE 1 after this line
  if (world.my_pe() == 1) {
    fmt::print("dst[0] = {}\n", dst.local()[0]);
    std::vector<float> got = symm::remote(src, 0); // get: PE 0's src, copied here
    fmt::print("PE 1 got src[1023] = {} from PE 0\n", got[1023]);
  }
}
