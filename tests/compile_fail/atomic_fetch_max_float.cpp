// expect-error: static assertion failed: symm bitwise and min/max atomics .*not float, double
// min/max atomics take integers only.
#include <symm/pe_ref.hpp>

float highest(const symm::pe_ref<float>& r) {
  return r.fetch_max(1.0f);
}
