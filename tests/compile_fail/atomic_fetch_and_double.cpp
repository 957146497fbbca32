// expect-error: static assertion failed: symm bitwise and min/max atomics .*take integers of 4 or 8 bytes only
// Bitwise atomics on a double do not compile (fetch_add does: see atomic_ok.cpp).
#include <symm/pe_ref.hpp>

double mask(const symm::pe_ref<double>& r) {
  return r.fetch_and(1.0);
}
