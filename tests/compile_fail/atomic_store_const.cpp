// expect-error: static assertion failed: symm: a pe_ref<const T> is read-only: of the atomics only load\(\) is allowed
// Constness goes through the element type: remote(const_array, pe)[i] can be loaded, not stored or updated.
#include <symm/pe_ref.hpp>

void write(const symm::pe_ref<const int>& r) {
  r.store(1);
}
