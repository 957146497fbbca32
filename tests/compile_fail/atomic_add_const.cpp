// expect-error: static assertion failed: symm: a pe_ref<const T> is read-only
// The non-fetching forms are writes too.
#include <symm/pe_ref.hpp>

void bump(const symm::pe_ref<const unsigned long long>& r) {
  r.add(1);
}
